"""The Collector path: OTLP protobuf messages from ``otlp_spans`` -> whole traces -> evaluation requests.

The OpenTelemetry Collector's Kafka exporter (``encoding: otlp_proto``) writes one ``ExportTraceServiceRequest`` per
message: a message may hold many traces, and one trace may arrive over several messages (with
``partition_traces_by_id`` they share a key and a partition). :class:`TraceAssembler` gathers spans per trace id and
hands a trace on once no new span of it arrived for ``idle_timeout`` seconds; its invocations are then rebuilt with
the same reconstruction code as the in-process path (:func:`otel_eval.reconstruct.rebuild_traces`).

Offsets: a partition's offset may only be committed up to the first message of a trace that is still open there, so
that a crash re-reads every span of every unfinished trace. :meth:`TraceAssembler.committable` gives that offset.

The evaluator's own spans (instrumentation scope ``otel_eval``, and their descendants in the same message) are
dropped: they carry the agent's trace id and would otherwise re-open evaluated traces.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_eval import environment_variables as env
from otel_eval import semconv
from otel_eval.errors import InputError
from otel_eval.model.messages import EvaluationRequest
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import Span, spans_from_otlp_proto

logger = logging.getLogger(__name__)


def parse_otlp_spans(value: bytes | None, source: str) -> list[Span]:
    """The spans of one ``otlp_proto`` message (``ExportTraceServiceRequest`` / ``TracesData`` bytes).

    Raises:
        InputError: the bytes are not an OTLP protobuf trace message (the message is dead-lettered).
    """
    from otel_eval.traces.otlp_proto import ProtoDecodeError, parse_traces_data

    if not value:
        raise InputError(f"{source}: empty message, expected an OTLP ExportTraceServiceRequest (otlp_proto)")
    try:
        message = parse_traces_data(value)
    except ProtoDecodeError as exc:
        raise InputError(f"{source}: not an OTLP protobuf trace message (otlp_proto): {exc}") from None
    if not message.resource_spans and value:
        raise InputError(f"{source}: {len(value)} bytes decode to an OTLP message without resource_spans")
    return spans_from_otlp_proto(message, source=source)


def without_evaluator_spans(spans: Sequence[Span]) -> list[Span]:
    """``spans`` minus otel-eval's own (scope ``otel_eval``) and their descendants among ``spans``.

    Linear in the number of spans and safe with cycles in parent links: each span is visited once from its parent.
    """
    own = [s.span_id for s in spans if s.scope_name == semconv.INSTRUMENTATION_SCOPE]
    if not own:
        return list(spans)
    children: dict[str, list[str]] = {}
    for span in spans:
        if span.parent_span_id:
            children.setdefault(span.parent_span_id, []).append(span.span_id)
    dropped = set(own)
    stack = list(own)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in dropped:
                dropped.add(child)
                stack.append(child)
    return [s for s in spans if s.span_id not in dropped]


@dataclass(slots=True)
class AssembledTrace:
    """The spans of one trace, gathered from one or more messages."""

    trace_id: str
    spans: list[Span] = field(default_factory=list)
    last_seen: float = 0.0
    first_offsets: dict[int, int] = field(default_factory=dict)
    """Partition -> offset of the first message that carried a span of this trace."""
    dropped_spans: int = 0
    span_ids: set[str] = field(default_factory=set)
    """Spans already gathered: a message read twice (after a retry) adds nothing."""
    messages: dict[tuple[int, int], Any] = field(default_factory=dict)
    """(partition, offset) -> the Kafka record that carried spans of this trace (dead-lettered if it cannot be
    rebuilt in time)."""

    @property
    def partition(self) -> int:
        """The partition the trace (first) arrived on: where its results are published."""
        return min(self.first_offsets) if self.first_offsets else 0


class TraceAssembler:
    """Gathers spans per trace id until the trace has been idle for ``idle_timeout`` seconds.

    Args:
        idle_timeout: seconds without a new span after which a trace is complete.
        max_open_traces: traces gathered at once; beyond it the oldest is handed on early.
        max_spans_per_trace: spans kept per trace; further ones are dropped (counted in ``dropped_spans``).
        clock: monotonic seconds (tests may pass their own).
    """

    def __init__(
        self,
        idle_timeout: float,
        *,
        max_open_traces: int = env.DEFAULT_MAX_OPEN_TRACES,
        max_spans_per_trace: int = env.DEFAULT_MAX_SPANS_PER_TRACE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.idle_timeout = idle_timeout
        self.max_open_traces = max_open_traces
        self.max_spans_per_trace = max_spans_per_trace
        self._clock = clock
        self._open: dict[str, AssembledTrace] = {}
        self._forced: list[AssembledTrace] = []
        self.dropped_spans = 0

    def __len__(self) -> int:
        return len(self._open)

    def add(self, partition: int, offset: int, spans: Iterable[Span], message: Any = None) -> None:
        """Adds the spans of the message at ``partition``/``offset`` (``message``: the Kafka record itself)."""
        now = self._clock()
        for span in without_evaluator_spans(list(spans)):
            trace = self._open.get(span.trace_id)
            if trace is None:
                if len(self._open) >= self.max_open_traces:
                    oldest = min(self._open.values(), key=lambda t: t.last_seen)
                    logger.warning("%d traces open: handing on trace %s early", len(self._open), oldest.trace_id)
                    self._forced.append(self._open.pop(oldest.trace_id))
                trace = self._open[span.trace_id] = AssembledTrace(trace_id=span.trace_id)
            trace.last_seen = now
            trace.first_offsets.setdefault(partition, offset)
            if message is not None:
                trace.messages.setdefault((partition, offset), message)
            if span.span_id in trace.span_ids:
                continue
            if len(trace.spans) >= self.max_spans_per_trace:
                trace.dropped_spans += 1
                self.dropped_spans += 1
                continue
            trace.spans.append(span)
            trace.span_ids.add(span.span_id)

    def ready(self, *, everything: bool = False) -> list[AssembledTrace]:
        """Removes and returns the traces idle for ``idle_timeout`` (all of them with ``everything``)."""
        now = self._clock()
        done, self._forced = self._forced, []
        for trace_id in [
            t for t, trace in self._open.items() if everything or now - trace.last_seen >= self.idle_timeout
        ]:
            done.append(self._open.pop(trace_id))
        return done

    def committable(self, partition: int, next_offset: int) -> int:
        """The offset that may be committed on ``partition``: ``next_offset``, held back by open traces."""
        held = [t.first_offsets[partition] for t in self._open.values() if partition in t.first_offsets]
        return min([next_offset, *held])

    def forget(self, partitions: Iterable[int]) -> int:
        """Drops the open traces that started on ``partitions`` (revoked: another worker re-reads them)."""
        gone = set(partitions)
        lost = [t for t, trace in self._open.items() if gone & set(trace.first_offsets)]
        for trace_id in lost:
            del self._open[trace_id]
        return len(lost)


def requests_from_trace(trace: AssembledTrace) -> list[EvaluationRequest]:
    """One request per invocation rebuilt from the trace's spans, as the in-process path builds them.

    The worker's core applies its configured criteria and eval set to each (the request carries none).
    """
    requests: list[EvaluationRequest] = []
    for rebuilt in rebuild_traces(trace.spans):
        for warning in rebuilt.warnings:
            logger.debug("%s", warning)
        requests.extend(EvaluationRequest(invocations=[invocation]) for invocation in rebuilt.invocations)
    return requests
