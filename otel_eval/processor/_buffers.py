"""Bounded per-trace buffers of ended spans, used by the processor's background thread only (no locking).

Three limits bound memory: open traces, spans per trace and (approximate) bytes over all traces. A trace that
hits a limit is *discarded whole* (a partial trace would rebuild into a wrong invocation, e.g. a missing tool
call), and its later spans are dropped with the same reason until it completes or goes idle.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from opentelemetry.sdk.trace import ReadableSpan

from otel_eval import semconv

_SPAN_OVERHEAD_BYTES = 400
"""Rough size of a ReadableSpan and its context objects before attributes."""
_REJECTED_TRACES_REMEMBERED = 4096


def approximate_size(span: ReadableSpan) -> int:
    """Bytes a buffered span holds, roughly: a fixed overhead plus its attribute and event data.

    Every attribute counts its key's length plus 16 bytes, and its value: a string its length, a sequence its
    strings' lengths (8 bytes for any other item), any other value 8 bytes. Runs once per buffered span on the
    processor's thread, so it reads the SDK span's own fields where it has them: ``ReadableSpan.attributes`` wraps
    them in a new proxy and ``ReadableSpan.events`` copies the event list under a lock at every call.
    """
    size = _SPAN_OVERHEAD_BYTES + len(span.name)
    attributes = getattr(span, "_attributes", _PUBLIC)
    if attributes is _PUBLIC:
        attributes = span.attributes
    if attributes:
        size += _attributes_size(attributes)
    if getattr(span, "_events", True):  # most spans have none: the public copy only when there are some
        for event in span.events:
            size += 64 + len(event.name)
            if event.attributes:
                size += _attributes_size(event.attributes)
    return size


_PUBLIC = object()


def _attributes_size(attributes: Mapping[str, object]) -> int:
    # The SDK's BoundedAttributes copy their inner dict in C; iterating the Mapping ABC item by item is several
    # times slower.
    copy = getattr(attributes, "copy", None)
    plain: Mapping[str, object] = copy() if copy is not None else attributes
    size = 16 * len(plain) + sum(map(len, plain))
    for value in plain.values():
        if value.__class__ is str:
            size += len(value)  # type: ignore[arg-type]
        elif isinstance(value, str):
            size += len(value)
        elif isinstance(value, (tuple, list)):
            size += sum(len(item) if isinstance(item, str) else 8 for item in value)
        else:
            size += 8
    return size


@dataclass(slots=True)
class _TraceBuffer:
    spans: list[ReadableSpan] = field(default_factory=list)
    size: int = 0
    last_seen: float = 0.0


@dataclass(frozen=True, slots=True)
class Rejection:
    """A trace discarded by a limit: the reason and how many of its buffered spans went with it."""

    trace_id: int
    reason: str
    spans: int


class TraceBuffers:
    """Ended spans grouped by trace id, within the configured limits.

    Args:
        max_open_traces: Traces buffered at once; a span of a new trace beyond this is dropped.
        max_spans_per_trace: Spans of one trace; the trace is discarded when one more arrives.
        max_bytes: Approximate bytes over all traces; the trace whose span would pass it is discarded.
    """

    def __init__(self, *, max_open_traces: int, max_spans_per_trace: int, max_bytes: int) -> None:
        self._max_open_traces = max_open_traces
        self._max_spans_per_trace = max_spans_per_trace
        self._max_bytes = max_bytes
        self._traces: dict[int, _TraceBuffer] = {}
        self._rejected: OrderedDict[int, str] = OrderedDict()
        self.total_bytes = 0
        self.total_spans = 0

    @property
    def open_traces(self) -> int:
        """Traces currently buffered."""
        return len(self._traces)

    def open_trace_ids(self) -> list[int]:
        """Ids of the traces currently buffered."""
        return list(self._traces)

    def add(self, span: ReadableSpan, trace_id: int, now: float) -> Rejection | str | None:
        """Buffers ``span``.

        Returns:
            None when buffered; the drop reason (str) when only this span was dropped (its trace was discarded
            before); a :class:`Rejection` when this span made its trace hit a limit and the whole trace went.
        """
        earlier = self._rejected.get(trace_id)
        if earlier is not None:
            return earlier
        buffer = self._traces.get(trace_id)
        if buffer is None:
            if len(self._traces) >= self._max_open_traces:
                return self._reject(trace_id, semconv.DROP_MAX_OPEN_TRACES)
            buffer = self._traces[trace_id] = _TraceBuffer()
        size = approximate_size(span)
        if len(buffer.spans) >= self._max_spans_per_trace:
            return self._reject(trace_id, semconv.DROP_MAX_SPANS_PER_TRACE)
        if self.total_bytes + size > self._max_bytes:
            return self._reject(trace_id, semconv.DROP_MAX_BUFFER_BYTES)
        buffer.spans.append(span)
        buffer.size += size
        buffer.last_seen = now
        self.total_bytes += size
        self.total_spans += 1
        return None

    def _reject(self, trace_id: int, reason: str) -> Rejection:
        buffer = self._traces.pop(trace_id, None)
        dropped = 1
        if buffer is not None:
            dropped += len(buffer.spans)
            self._release(buffer)
        self._rejected[trace_id] = reason
        if len(self._rejected) > _REJECTED_TRACES_REMEMBERED:
            self._rejected.popitem(last=False)
        return Rejection(trace_id=trace_id, reason=reason, spans=dropped)

    def reject(self, trace_id: int, reason: str) -> Rejection | str:
        """Discards ``trace_id`` (buffered spans included) for ``reason``, unless it was already discarded.

        Returns the earlier reason (str) when it was, else the :class:`Rejection`.
        """
        earlier = self._rejected.get(trace_id)
        if earlier is not None:
            return earlier
        return self._reject(trace_id, reason)

    def forget_rejection(self, trace_id: int) -> bool:
        """Ends the drop-on-sight of a discarded trace (its local root ended). Whether it was discarded."""
        return self._rejected.pop(trace_id, None) is not None

    def take_subtree(self, trace_id: int, root_span_id: int) -> list[ReadableSpan]:
        """Removes and returns the root span of ``root_span_id`` and its buffered descendants, in buffer order.

        Spans of the trace outside that subtree (another local root's, still running) stay buffered.
        """
        buffer = self._traces.get(trace_id)
        if buffer is None:
            return []
        children: dict[int, list[int]] = {}
        for index, span in enumerate(buffer.spans):
            parent = span.parent
            if parent is not None and not parent.is_remote:
                children.setdefault(parent.span_id, []).append(index)
        taken: set[int] = set()
        for index, span in enumerate(buffer.spans):
            if span.context is not None and span.context.span_id == root_span_id:
                taken.add(index)
        pending = [root_span_id]
        while pending:
            for index in children.get(pending.pop(), ()):
                if index not in taken:
                    taken.add(index)
                    context = buffer.spans[index].context
                    if context is not None:
                        pending.append(context.span_id)
        if len(taken) == len(buffer.spans):
            del self._traces[trace_id]
            self._release(buffer)
            return buffer.spans
        subtree = [span for index, span in enumerate(buffer.spans) if index in taken]
        kept = [span for index, span in enumerate(buffer.spans) if index not in taken]
        removed = sum(approximate_size(span) for span in subtree)
        buffer.spans = kept
        buffer.size -= removed
        self.total_bytes -= removed
        self.total_spans -= len(subtree)
        return subtree

    def take_idle(self, now: float, idle_seconds: float) -> list[list[ReadableSpan]]:
        """Removes and returns every trace whose last span arrived ``idle_seconds`` or more before ``now``."""
        idle = [trace_id for trace_id, buffer in self._traces.items() if now - buffer.last_seen >= idle_seconds]
        return [self._take_all(trace_id) for trace_id in idle]

    def take_everything(self) -> list[list[ReadableSpan]]:
        """Removes and returns every buffered trace."""
        return [self._take_all(trace_id) for trace_id in list(self._traces)]

    def _take_all(self, trace_id: int) -> list[ReadableSpan]:
        buffer = self._traces.pop(trace_id)
        self._release(buffer)
        return buffer.spans

    def _release(self, buffer: _TraceBuffer) -> None:
        self.total_bytes -= buffer.size
        self.total_spans -= len(buffer.spans)


def top_span_names(spans: Iterable[ReadableSpan]) -> list[str]:
    """Names of the spans whose parent is not among ``spans`` (the subtree's roots)."""
    spans = list(spans)
    ids = {span.context.span_id for span in spans if span.context is not None}
    return [span.name for span in spans if span.parent is None or span.parent.span_id not in ids]
