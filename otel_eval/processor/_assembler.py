"""The processor's background side: ended spans -> per-trace buffers -> finished subtrees -> evaluation requests.

Used by the ``OtelEvalSpanProcessor`` thread only, so it needs no locking. One :meth:`SpanAssembler.step` takes the
spans that ended since the last step, completes every subtree whose local root ended, hands traces that went idle
on, and exports the resulting requests under suppressed instrumentation.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value
from opentelemetry.sdk.trace import ReadableSpan

from otel_eval import semconv
from otel_eval.emit.enrichment import RootSpanEnricher
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.model.messages import EvaluationRequest
from otel_eval.processor._buffers import Rejection, TraceBuffers, top_span_names
from otel_eval.processor._requests import RequestBuilder
from otel_eval.processor._selection import is_local_root, is_own_traffic
from otel_eval.transport.base import DuplicateLogFilter, InvocationExporter
from otel_eval.worker.deadline import DeadlineExecutor, RecordTimeoutError

logger = logging.getLogger(__name__)
logger.addFilter(DuplicateLogFilter())

DEFAULT_REBUILD_TIMEOUT = 30.0
"""Seconds one trace's invocations may take to rebuild before the trace is dropped."""

RootKey = tuple[int, int]
"""(trace id, span id) of a local root span."""


@dataclass(slots=True)
class _StepCounts:
    spans: Counter[str] = field(default_factory=Counter)
    invocations: Counter[str] = field(default_factory=Counter)


class SpanAssembler:
    """Buffers spans by trace and turns finished subtrees into evaluation requests for ``exporter``.

    Args:
        buffers: The bounded per-trace buffers.
        builder: Rebuilds invocations and wraps them in requests.
        exporter: The transport.
        pipeline: Drop, sampled and idle counters.
        idle_timeout: Seconds after a trace's last span before it is handed on without its root.
        suppressed: Span ids started under suppressed instrumentation (written by ``on_start``), skipped here.
        enricher: Root-span enrichment, when the processor wraps the user's exporting processor.
        rebuild_timeout: Seconds one trace's rebuild may take. It runs on its own thread; past the deadline the trace
            is dropped (``rebuild_timeout``) and its thread abandoned to finish on its own (threads cannot be killed;
            see :mod:`otel_eval.worker.deadline`), so the traces behind it are not delayed.
    """

    def __init__(
        self,
        *,
        buffers: TraceBuffers,
        builder: RequestBuilder,
        exporter: InvocationExporter,
        pipeline: PipelineMetrics,
        idle_timeout: float,
        suppressed: dict[int, None],
        enricher: RootSpanEnricher | None,
        rebuild_timeout: float = DEFAULT_REBUILD_TIMEOUT,
    ) -> None:
        self.buffers = buffers
        self._builder = builder
        self._exporter = exporter
        self._pipeline = pipeline
        self._idle_timeout = idle_timeout
        self._suppressed = suppressed
        self._enricher = enricher
        self.rebuild = DeadlineExecutor(rebuild_timeout, name="otel-eval-rebuild")

    def step(
        self,
        spans: Iterable[ReadableSpan],
        *,
        final: bool,
        dropped_at_intake: int,
        shed: tuple[int, Iterable[int]],
    ) -> None:
        """Ingests ``spans``, hands on finished and idle subtrees; with ``final`` drops what is still incomplete.

        Args:
            spans: Spans that ended since the last step, in end order.
            final: The processor is shutting down.
            dropped_at_intake: Spans ``on_end`` dropped on a full intake queue since the last step.
            shed: Spans ``on_end`` dropped while the transport was full, and the ids of their traces: each such
                trace is dropped whole (counted once), or its other spans would rebuild into a partial invocation.
        """
        now = time.monotonic()
        counts = _StepCounts()
        counts.spans[semconv.DROP_QUEUE_FULL] += dropped_at_intake
        shed_spans, shed_traces = shed
        counts.spans[semconv.DROP_TRANSPORT_QUEUE_FULL] += shed_spans
        for trace_id in shed_traces:
            self._count(self.buffers.reject(trace_id, semconv.DROP_TRANSPORT_QUEUE_FULL), counts, first_drop=0)
        roots: list[RootKey] = []
        for span in spans:
            self._ingest(span, now, roots, counts)
        batches: list[tuple[RootKey | None, list[ReadableSpan]]] = [
            (root, self.buffers.take_subtree(*root)) for root in roots
        ]
        idle = self.buffers.take_idle(now, self._idle_timeout)
        self._pipeline.idle_flushed(len(idle))
        batches += [(None, trace_spans) for trace_spans in idle]
        if final:
            for trace_spans in self.buffers.take_everything():
                counts.spans[semconv.DROP_SHUTDOWN] += len(trace_spans)
                counts.invocations[semconv.DROP_SHUTDOWN] += 1
        for reason, count in counts.spans.items():
            self._pipeline.spans_dropped(reason, count)
        for reason, count in counts.invocations.items():
            self._pipeline.invocations_dropped(reason, count)
            logger.warning("dropped %d trace(s) before evaluation: %s", count, reason)  # one line per step
        for root, trace_spans in batches:
            self._hand_on(root, trace_spans)
        if self._enricher is not None:
            self._enricher.release_expired(now)

    def shed_open_traces(self) -> None:
        """The transport is full and ``on_end`` starts shedding: every partly buffered trace is dropped now."""
        counts = _StepCounts()
        for trace_id in self.buffers.open_trace_ids():
            self._count(self.buffers.reject(trace_id, semconv.DROP_TRANSPORT_QUEUE_FULL), counts, first_drop=0)
        for reason, count in counts.spans.items():
            self._pipeline.spans_dropped(reason, count)
        for reason, count in counts.invocations.items():
            self._pipeline.invocations_dropped(reason, count)

    def _ingest(self, span: ReadableSpan, now: float, roots: list[RootKey], counts: _StepCounts) -> None:
        context = span.context
        if context is None:
            return
        suppressed = self._suppressed
        if suppressed and context.span_id in suppressed:
            suppressed.pop(context.span_id, None)
            return  # started under suppressed instrumentation: the evaluator's own work
        if is_own_traffic(span):
            return
        if self._exporter.has_capacity():
            outcome = self.buffers.add(span, context.trace_id, now)
        else:
            # Shed load before spending memory and CPU on a trace the transport would drop: the whole trace goes.
            outcome = self.buffers.reject(context.trace_id, semconv.DROP_TRANSPORT_QUEUE_FULL)
        root = is_local_root(span)
        if outcome is None:
            if root:
                roots.append((context.trace_id, context.span_id))
            return
        self._count(outcome, counts, first_drop=1)
        if root:
            self.buffers.forget_rejection(context.trace_id)
            if self._enricher is not None:
                self._enricher.release(context.trace_id, context.span_id)

    @staticmethod
    def _count(outcome: Rejection | str, counts: _StepCounts, *, first_drop: int) -> None:
        """Counts a drop: a whole trace (:class:`Rejection`) or, for an earlier-discarded trace, ``first_drop`` span."""
        if isinstance(outcome, Rejection):
            counts.spans[outcome.reason] += outcome.spans - 1 + first_drop
            counts.invocations[outcome.reason] += 1
        else:
            counts.spans[outcome] += first_drop

    def _hand_on(self, root: RootKey | None, spans: list[ReadableSpan]) -> None:
        requests: list[EvaluationRequest] = []
        if spans and not self._exporter.has_capacity():
            # Shed load before spending CPU on reconstruction: the transport would drop the requests anyway.
            self._pipeline.invocations_dropped(semconv.DROP_TRANSPORT_QUEUE_FULL)
            self._pipeline.spans_dropped(semconv.DROP_TRANSPORT_QUEUE_FULL, len(spans))
            spans = []
        if spans and self._builder.filters.root_allowed(top_span_names(spans)):
            try:
                requests = self.rebuild.run(
                    f"rebuilding a trace of {len(spans)} spans", partial(self._builder.build, spans)
                )
            except RecordTimeoutError:  # a pathological trace: dropped, and the traces behind it go on at once
                self._pipeline.invocations_dropped(semconv.DROP_REBUILD_TIMEOUT)
                self._pipeline.spans_dropped(semconv.DROP_REBUILD_TIMEOUT, len(spans))
            except Exception:  # one malformed trace must not stop the others
                logger.exception("could not rebuild the invocations of a trace")
                self._pipeline.invocations_dropped(semconv.DROP_RECONSTRUCTION_ERROR)
        if root is not None and self._enricher is not None:
            self._enricher.expect(*root, [(r.trace_id, r.invocations[0].span_id) for r in requests])
        if not requests:
            return
        self._pipeline.sampled(len(requests))
        token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            self._exporter.export(requests)
        except Exception:  # exporters should not raise; if one does, count and go on
            logger.exception("the evaluation transport failed to export")
            self._pipeline.invocations_dropped(semconv.DROP_TRANSPORT_ERROR, len(requests))
        finally:
            detach(token)
