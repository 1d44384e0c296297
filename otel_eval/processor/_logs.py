"""GenAI content log records in-process: the companion ``LogRecordProcessor`` and the join with the span buffers.

With ``EVENT_ONLY`` content capture (ADK 2.13's experimental GenAI semconv, GenAI instrumentations configured for
events) the messages are on ``gen_ai.client.inference.operation.details`` log records emitted with the span's
context, never on the span. :class:`EvaluationLogRecordProcessor` (``processor.log_record_processor``, added to the
``LoggerProvider``) queues those records and returns; the span processor's background thread (:class:`LogJoin`)
keeps them per trace and, when a subtree is handed on, appends each to its span as an event
(:func:`otel_eval.traces.log_records.attach_log_records`) before the rebuild.

Same policy as the spans: bounded (intake queue, traces, approximate bytes), and each record that cannot join is
dropped and counted in ``otel_eval.log_records.dropped{otel_eval.drop.reason}``: ``late`` (its span was already
handed on), ``no_trace`` (no span of its trace came, or the trace was dropped, within the idle timeout),
``queue_full``, ``max_open_traces``, ``max_buffer_bytes``, ``shutdown``. Records of other events, without a span
context or of traces the processor does not sample are ignored (not the evaluator's).
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk._logs import LogRecordProcessor, ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import TraceFlags

from otel_eval import environment_variables as env
from otel_eval import semconv
from otel_eval._runtime.log_filters import DuplicateLogFilter
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.model.messages import EvaluationRequest
from otel_eval.processor._intake import DropCount
from otel_eval.processor._selection import is_sampled
from otel_eval.reconstruct.plain import PlainRequest
from otel_eval.traces.log_records import SpanLogRecord, event_name_of, is_content_event, log_record_from_sdk

logger = logging.getLogger(__name__)
logger.addFilter(DuplicateLogFilter())

DETACHED_HINT = (
    "EvaluationSpanProcessor: invocations come without message content and "
    f"{env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT}={{capture}} puts it on log records, none "
    "of which reached the processor: add processor.log_record_processor to the LoggerProvider the instrumentation "
    "emits to (logger_provider.add_log_record_processor(processor.log_record_processor))"
)
_RECORD_OVERHEAD_BYTES = 300
_HANDED_ON_REMEMBERED = 16384
"""Span ids handed on that are remembered to tell a late record from one whose span never came."""


class EvaluationLogRecordProcessor(LogRecordProcessor):
    """Queues GenAI content log records for the :class:`~otel_eval.EvaluationSpanProcessor` that created it.

    Add it to the ``LoggerProvider`` the instrumentation emits to (for ADK, the global one)::

        logger_provider.add_log_record_processor(processor.log_record_processor)

    ``on_emit`` never blocks and never raises: a content record (``gen_ai.client.inference.operation.details`` or a
    deprecated per-message event) with a sampled span context is appended to a bounded queue; everything else is
    ignored. Shutting it down does nothing: the span processor owns the pipeline.
    """

    def __init__(self, *, max_pending: int, sample_bound: int | None) -> None:
        self._max_pending = max_pending
        self._sample_bound = sample_bound
        self.queue: deque[ReadWriteLogRecord] = deque()
        self._dropped = DropCount()
        self.closed = False
        self.received = False
        """Whether a content record ever came: with none, ``EVENT_ONLY`` content means the companion is not attached."""

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        """Queues a content log record of a sampled span; counts it when the queue is full."""
        try:
            record = log_record.log_record
            trace_id = record.trace_id
            if self.closed or not trace_id or not record.span_id:
                return
            if not is_content_event(event_name_of(record.event_name, record.attributes)):
                return
            flags = record.trace_flags
            if (flags is not None and not TraceFlags(flags).sampled) or not is_sampled(trace_id, self._sample_bound):
                return
            self.received = True
            if len(self.queue) < self._max_pending:
                self.queue.append(log_record)
            else:
                self._dropped.add()
        except Exception:  # the agent's thread: log (deduplicated), never raise
            logger.exception("EvaluationLogRecordProcessor.on_emit failed")

    def take_dropped(self) -> int:
        """Records dropped on a full queue since the last call."""
        return self._dropped.take()

    def shutdown(self) -> None:
        """Nothing to release: the span processor drains and drops what is queued at its own shutdown."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing to flush here (the span processor's ``force_flush`` evaluates complete traces)."""
        return True


@dataclass(slots=True)
class _TraceRecords:
    records: list[SpanLogRecord] = field(default_factory=list)
    size: int = 0
    last_seen: float = 0.0


class LogJoin:
    """The content log records of each trace until its spans are handed on (background thread only, no locking).

    Args:
        source: The companion processor whose queue is drained at each step.
        pipeline: Where drops are counted.
        max_traces: Traces with records kept at once.
        max_bytes: Approximate bytes of records kept over all traces.
    """

    def __init__(
        self, source: EvaluationLogRecordProcessor, pipeline: PipelineMetrics, *, max_traces: int, max_bytes: int
    ) -> None:
        self._source = source
        self._pipeline = pipeline
        self._max_traces = max_traces
        self._max_bytes = max_bytes
        self._traces: dict[int, _TraceRecords] = {}
        self._handed_on: OrderedDict[tuple[int, int], None] = OrderedDict()
        self._hinted = False
        self.total_bytes = 0

    def hint_if_detached(self, requests: Iterable[EvaluationRequest | PlainRequest]) -> None:
        """Logs :data:`DETACHED_HINT` once when invocations come without message content, the instrumentation is set to
        put it on log records (``EVENT_ONLY``) and the companion never received one: it is not attached."""
        if self._hinted or self._source.received:
            return
        turns = (r.plain if isinstance(r, PlainRequest) else r.invocations for r in requests)  # no model made
        if all(invocation.content_captured for invocations in turns for invocation in invocations):
            return  # the usual case, decided without reading the environment
        capture = os.environ.get(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, "").strip()
        if capture.upper() == env.CAPTURE_EVENT_ONLY or capture.upper() in env.CAPTURE_EVENT_ONLY_ALIASES:
            self._hinted = True
            hint = DETACHED_HINT.format(capture=capture)  # the value in the template: not a repeat of another value's
            logger.warning(hint)

    @property
    def buffered_traces(self) -> int:
        """Traces with records kept now."""
        return len(self._traces)

    @property
    def buffered_records(self) -> int:
        """Records kept now."""
        return sum(len(trace.records) for trace in self._traces.values())

    def ingest(self, now: float) -> None:
        """Moves the queued records into the per-trace buffers (counting what cannot be kept)."""
        self._pipeline.log_records_dropped(semconv.DROP_QUEUE_FULL, self._source.take_dropped())
        queue = self._source.queue
        for _ in range(len(queue)):
            raw = queue.popleft()
            trace_id, span_id = raw.log_record.trace_id or 0, raw.log_record.span_id or 0
            if (trace_id, span_id) in self._handed_on:
                self._pipeline.log_records_dropped(semconv.DROP_LATE)
                continue
            try:
                record = log_record_from_sdk(raw)
            except Exception:  # an unconvertible record is the producer's problem, not the evaluation's
                logger.warning("skipped a log record that could not be converted", exc_info=True)
                continue
            if record is not None:
                self._keep(trace_id, record, now)

    def _keep(self, trace_id: int, record: SpanLogRecord, now: float) -> None:
        trace = self._traces.get(trace_id)
        if trace is None:
            if len(self._traces) >= self._max_traces:
                self._pipeline.log_records_dropped(semconv.DROP_MAX_OPEN_TRACES)
                return
            trace = self._traces[trace_id] = _TraceRecords()
        size = _record_size(record)
        if self.total_bytes + size > self._max_bytes:
            self._pipeline.log_records_dropped(semconv.DROP_MAX_BUFFER_BYTES)
            if not trace.records:
                del self._traces[trace_id]
            return
        trace.records.append(record)
        trace.size += size
        trace.last_seen = now
        self.total_bytes += size

    def take(self, spans: Iterable[ReadableSpan]) -> list[SpanLogRecord]:
        """Removes and returns the records of ``spans`` (a subtree being handed on); later records of these spans
        are counted as late (remembered once a content record ever came: without ``EVENT_ONLY`` content none does)."""
        if not self._source.received:
            return []
        handed_on = self._handed_on
        # A SpanContext is a tuple: (trace id, span id, ...), read at once.
        keys: list[tuple[int, int]] = [context[:2] for span in spans if (context := span.context) is not None]
        handed_on.update(dict.fromkeys(keys))
        while len(handed_on) > _HANDED_ON_REMEMBERED:
            handed_on.popitem(last=False)
        taken: list[SpanLogRecord] = []
        if not self._traces:  # no record kept (the usual case without EVENT_ONLY content): nothing to look up
            return taken
        by_trace: dict[int, set[str]] = {}
        for trace_id, span_id in keys:
            by_trace.setdefault(trace_id, set()).add(format(span_id, "016x"))
        for trace_id, span_ids in by_trace.items():
            trace = self._traces.get(trace_id)
            if trace is None:
                continue
            kept = [record for record in trace.records if record.span_id not in span_ids]
            if len(kept) == len(trace.records):
                continue
            mine = [record for record in trace.records if record.span_id in span_ids]
            taken.extend(mine)
            if kept:
                removed = sum(_record_size(record) for record in mine)
                trace.records, trace.size = kept, max(0, trace.size - removed)
                self.total_bytes = max(0, self.total_bytes - removed)
            else:
                del self._traces[trace_id]
                self.total_bytes -= trace.size
        return taken

    def sweep(self, now: float, idle_seconds: float, alive: Callable[[int], bool]) -> None:
        """Drops (``no_trace``) the records of traces idle for ``idle_seconds`` with no span buffered or open."""
        expired = [
            trace_id
            for trace_id, trace in self._traces.items()
            if now - trace.last_seen >= idle_seconds and not alive(trace_id)
        ]
        for trace_id in expired:
            self._drop(trace_id, semconv.DROP_NO_TRACE)

    def drop_everything(self) -> None:
        """Shutdown: drops (``shutdown``) every record kept or queued."""
        self.ingest(float("inf"))
        for trace_id in list(self._traces):
            self._drop(trace_id, semconv.DROP_SHUTDOWN)

    def _drop(self, trace_id: int, reason: str) -> None:
        trace = self._traces.pop(trace_id)
        self.total_bytes -= trace.size
        self._pipeline.log_records_dropped(reason, len(trace.records))


def _record_size(record: SpanLogRecord) -> int:
    return _RECORD_OVERHEAD_BYTES + _size(record.event.attributes) + _size(record.event.body)


def _size(value: Any, depth: int = 0) -> int:
    """Rough bytes of an attribute value (strings by length, containers walked to a bounded depth)."""
    if isinstance(value, str):
        return len(value)
    if depth > 8:
        return 8
    if isinstance(value, Mapping):
        return sum(len(str(key)) + _size(item, depth + 1) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return sum(_size(item, depth + 1) for item in value)
    return 8
