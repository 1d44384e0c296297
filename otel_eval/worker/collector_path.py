"""The Collector path: OTLP protobuf messages from ``otlp_spans`` -> whole traces -> evaluation requests.

The OpenTelemetry Collector's Kafka exporter (``encoding: otlp_proto``) writes one ``ExportTraceServiceRequest`` per
message: a message may hold many traces, and one trace may arrive over several messages (with
``partition_traces_by_id`` they share a key and a partition). :class:`TraceAssembler` gathers spans per trace id and
hands a trace on once no new span of it arrived for ``idle_timeout`` seconds; its invocations are then rebuilt with
the same reconstruction code as the in-process path (:func:`otel_eval.reconstruct.rebuild_traces`).

GenAI content log records (``EVENT_ONLY`` capture) come from ``otlp_logs`` (:func:`parse_otlp_logs`): each is kept
with its trace (:meth:`TraceAssembler.add_logs`, the same idle window; a trace's spans or logs both keep it open) and
joined onto its span before the rebuild. A record of a trace already handed on is counted ``late``; one whose span
never came ``no_trace`` (:meth:`TraceAssembler.take_log_drops`). For the join, partition both topics by trace id
with the same partition count, so that a trace's spans and logs reach the same worker (Kafka's range assignor gives
a consumer the same partition numbers of every topic).

Offsets: a partition's offset may only be committed up to the first message of a trace that is still open there, so
that a crash re-reads every span of every unfinished trace. :meth:`TraceAssembler.committable` gives that offset.

The evaluator's own spans (instrumentation scope ``otel_eval``, and their descendants in the same message) are
dropped: they carry the agent's trace id and would otherwise re-open evaluated traces.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from otel_eval import environment_variables as env
from otel_eval import semconv
from otel_eval.errors import InputError
from otel_eval.model.messages import EvaluationRequest
from otel_eval.reconstruct import rebuild_traces, without_evaluator_spans
from otel_eval.traces import Span, spans_from_otlp_proto
from otel_eval.traces.log_records import SpanLogRecord, attach_log_records

logger = logging.getLogger(__name__)

_HANDED_ON_REMEMBERED = 65536
"""Trace ids handed on that are remembered, to count a log record arriving after its trace as late."""


def parse_otlp_spans(value: bytes | None, source: str) -> list[Span]:
    """The spans of one ``otlp_proto`` message (``ExportTraceServiceRequest`` / ``TracesData`` bytes).

    Raises:
        InputError: the bytes are not an OTLP protobuf trace message (the message is dead-lettered).
    """
    from otel_eval.traces.otlp_proto import parse_traces_data

    message = _decode(value, source, parse_traces_data, "trace", "ExportTraceServiceRequest", "resource_spans")
    return spans_from_otlp_proto(message, source=source)


def parse_otlp_logs(value: bytes | None, source: str) -> list[SpanLogRecord]:
    """The GenAI content log records of one ``otlp_proto`` logs message (``ExportLogsServiceRequest`` / ``LogsData``).

    Raises:
        InputError: the bytes are not an OTLP protobuf logs message (the message is dead-lettered).
    """
    from otel_eval.traces.otlp_logs import log_records_from_otlp_proto, parse_logs_data

    message = _decode(value, source, parse_logs_data, "logs", "ExportLogsServiceRequest", "resource_logs")
    return log_records_from_otlp_proto(message, source=source)


def _decode(
    value: bytes | None, source: str, parse: Callable[[bytes], Any], what: str, request: str, content: str
) -> Any:
    """``parse(value)``, or an :class:`InputError` naming ``source`` when it is empty, not protobuf, or has no
    ``content`` (``resource_spans`` / ``resource_logs``)."""
    from otel_eval.traces.otlp_proto import ProtoDecodeError

    if not value:
        raise InputError(f"{source}: empty message, expected an OTLP {request} (otlp_proto)")
    try:
        message = parse(value)
    except ProtoDecodeError as exc:
        raise InputError(f"{source}: not an OTLP protobuf {what} message (otlp_proto): {exc}") from None
    if not getattr(message, content):
        raise InputError(f"{source}: {len(value)} bytes decode to an OTLP message without {content}")
    return message


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
    log_records: list[SpanLogRecord] = field(default_factory=list)
    """GenAI content log records of the trace (``otlp_logs``), joined onto its spans before the rebuild."""
    first_log_offsets: dict[int, int] = field(default_factory=dict)
    """``otlp_logs`` partition -> offset of the first message that carried a log record of this trace."""
    unmatched_log_records: int = 0
    """Set by :func:`requests_from_trace`: records whose span is not among the trace's spans."""

    @property
    def partition(self) -> int:
        """The partition the trace (first) arrived on: where its results are published."""
        return min(self.first_offsets) if self.first_offsets else min(self.first_log_offsets, default=0)


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
        self._handed_on: OrderedDict[str, None] = OrderedDict()
        self._log_drops: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self._open)

    def _trace(self, trace_id: str) -> AssembledTrace:
        trace = self._open.get(trace_id)
        if trace is None:
            if len(self._open) >= self.max_open_traces:
                oldest = min(self._open.values(), key=lambda t: t.last_seen)
                logger.warning("%d traces open: handing on trace %s early", len(self._open), oldest.trace_id)
                self._forced.append(self._open.pop(oldest.trace_id))
            trace = self._open[trace_id] = AssembledTrace(trace_id=trace_id)
        return trace

    def add_logs(self, partition: int, offset: int, records: Iterable[SpanLogRecord]) -> None:
        """Adds the GenAI content log records of the ``otlp_logs`` message at ``partition``/``offset``; a record of
        a trace already handed on is counted ``late``, one past ``max_spans_per_trace`` records
        ``max_spans_per_trace``."""
        now = self._clock()
        for record in records:
            if record.trace_id in self._handed_on and record.trace_id not in self._open:
                self._log_drops[semconv.DROP_LATE] += 1
                continue
            trace = self._trace(record.trace_id)
            trace.last_seen = now
            trace.first_log_offsets.setdefault(partition, offset)
            if len(trace.log_records) >= self.max_spans_per_trace:
                self._log_drops[semconv.DROP_MAX_SPANS_PER_TRACE] += 1
                continue
            trace.log_records.append(record)

    def take_log_drops(self) -> Counter[str]:
        """Log records dropped since the last call, by reason (``late``, ``max_spans_per_trace``)."""
        drops, self._log_drops = self._log_drops, Counter()
        return drops

    def add(self, partition: int, offset: int, spans: Iterable[Span], message: Any = None) -> None:
        """Adds the spans of the message at ``partition``/``offset`` (``message``: the Kafka record itself)."""
        now = self._clock()
        for span in without_evaluator_spans(list(spans)):
            trace = self._trace(span.trace_id)
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
        for trace in done:
            self._handed_on[trace.trace_id] = None
        while len(self._handed_on) > _HANDED_ON_REMEMBERED:
            self._handed_on.popitem(last=False)
        return done

    def committable(self, partition: int, next_offset: int, *, logs: bool = False) -> int:
        """The offset that may be committed on ``partition`` (of ``otlp_logs`` with ``logs``): ``next_offset``, held
        back by open traces."""
        held = [
            offsets[partition]
            for t in self._open.values()
            if partition in (offsets := t.first_log_offsets if logs else t.first_offsets)
        ]
        return min([next_offset, *held])

    def forget(self, partitions: Iterable[int], *, logs: bool = False) -> int:
        """Drops the open traces that started on ``partitions`` (of ``otlp_logs`` with ``logs``; revoked: another
        worker re-reads them)."""
        gone = set(partitions)
        lost = [
            t for t, trace in self._open.items() if gone & set(trace.first_log_offsets if logs else trace.first_offsets)
        ]
        for trace_id in lost:
            del self._open[trace_id]
        return len(lost)


def requests_from_trace(trace: AssembledTrace) -> list[EvaluationRequest]:
    """One request per invocation rebuilt from the trace's spans, as the in-process path builds them.

    The worker's core applies its configured criteria and eval set to each (the request carries none).
    """
    if trace.log_records:
        trace.unmatched_log_records = len(attach_log_records(trace.spans, trace.log_records))
    requests: list[EvaluationRequest] = []
    for rebuilt in rebuild_traces(trace.spans):
        for warning in rebuilt.warnings:
            logger.debug("%s", warning)
        requests.extend(EvaluationRequest(invocations=[invocation]) for invocation in rebuilt.invocations)
    return requests
