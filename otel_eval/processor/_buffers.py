"""The per-trace state of the processor's background thread (no locking): bounded buffers of ended spans (the spans
still open under each local root: :mod:`otel_eval.processor._open_spans`).

Buffers. Three limits bound memory: open traces, spans per trace and (approximate) bytes over all traces. A trace
that hits a limit is *discarded whole* (a partial trace would rebuild into a wrong invocation, e.g. a missing tool
call), and its later spans are dropped with the same reason until it completes or goes idle. The bytes are those of
the spans buffered *between* steps (:meth:`TraceBuffers.settle`, at the end of each): a span whose subtree is handed
on in the step it arrived in is never sized (the intake's queue, bounded in spans, held it until then anyway).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

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
    attributes: Mapping[str, object] | None = getattr(span, "_attributes", _PUBLIC)
    if attributes is _PUBLIC:
        attributes = span.attributes
    if attributes is not None:
        size += _attributes_size(attributes)
    if getattr(span, "_events", True):  # most spans have none: the public copy only when there are some
        for event in span.events:
            size += 64 + len(event.name)
            if event.attributes:
                size += _attributes_size(event.attributes)
    return size


_PUBLIC: Mapping[str, object] = {"": ""}
"""Marks a span without the SDK's own attribute field (read through ``ReadableSpan.attributes`` then)."""


def _attributes_size(attributes: Mapping[str, object]) -> int:
    # The SDK's BoundedAttributes are read through their own dict (an ended span's no longer changes): a copy, or
    # iterating the Mapping ABC item by item, costs more.
    inner = getattr(attributes, "_dict", None)
    plain: Mapping[str, object] = inner if isinstance(inner, dict) else attributes
    size = 16 * len(plain) + sum(map(len, plain))
    for value in plain.values():
        if isinstance(value, str):
            size += len(value)
        elif isinstance(value, (tuple, list)):
            size += sum(len(item) if isinstance(item, str) else 8 for item in value)
        else:
            size += 8
    return size


_MIXED: Final = -2
"""A buffer's ``root`` when its spans did not all start under one local root (or were not all tracked)."""


@dataclass(slots=True)
class _TraceBuffer:
    spans: list[ReadableSpan] = field(default_factory=list)
    size: int = 0
    last_seen: float = 0.0
    unsized: int = 0
    """The last spans of ``spans`` not sized yet (:meth:`TraceBuffers.settle`)."""
    root: int | None = None
    """The local root every span buffered started under (:meth:`OpenSpans.ended`), None before the first,
    :data:`_MIXED` when they differ or one was not tracked: taking that root's subtree then takes the whole buffer."""


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
        max_bytes: Approximate bytes over all traces, checked by :meth:`settle`: the trace whose span would pass it is
            discarded.
    """

    def __init__(self, *, max_open_traces: int, max_spans_per_trace: int, max_bytes: int) -> None:
        self._max_open_traces = max_open_traces
        self._max_spans_per_trace = max_spans_per_trace
        self._max_bytes = max_bytes
        self._traces: dict[int, _TraceBuffer] = {}
        self._rejected: OrderedDict[int, str] = OrderedDict()
        self._unsized: dict[int, None] = {}  # traces with spans added since the last settle, in arrival order
        self.total_bytes = 0
        """The approximate bytes of the spans buffered, as of the last :meth:`settle`."""
        self.total_spans = 0

    @property
    def open_traces(self) -> int:
        """Traces currently buffered."""
        return len(self._traces)

    def open_trace_ids(self) -> list[int]:
        """Ids of the traces currently buffered."""
        return list(self._traces)

    def add(self, span: ReadableSpan, trace_id: int, now: float, under: int | None = None) -> Rejection | str | None:
        """Buffers ``span``; ``under``: the local root it started under, when tracked (:meth:`OpenSpans.ended`). Its
        bytes are counted (and the byte limit checked) by the next :meth:`settle`, if it is still buffered then.

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
        if len(buffer.spans) >= self._max_spans_per_trace:
            return self._reject(trace_id, semconv.DROP_MAX_SPANS_PER_TRACE)
        if buffer.root != under:
            buffer.root = under if under is not None and not buffer.spans else _MIXED
        buffer.spans.append(span)
        buffer.unsized += 1
        buffer.last_seen = now
        self._unsized[trace_id] = None
        self.total_spans += 1
        return None

    def settle(self) -> list[Rejection]:
        """Counts the bytes of the spans added since the last call that are still buffered, in arrival order by trace;
        the trace whose span would pass the byte limit is discarded whole. Returns those discarded traces, each
        :class:`Rejection` with every span it discarded (as :meth:`add`'s counts the span that passed a limit too)."""
        rejections = []
        traces, max_bytes = self._traces, self._max_bytes
        for trace_id in self._unsized:
            buffer = traces.get(trace_id)
            if buffer is None or not buffer.unsized:
                continue  # handed on (or discarded) since
            spans = buffer.spans
            for span in spans[len(spans) - buffer.unsized :]:
                size = approximate_size(span)
                if self.total_bytes + size > max_bytes:
                    rejection = self._reject(trace_id, semconv.DROP_MAX_BUFFER_BYTES)  # counts one unbuffered span
                    rejections.append(Rejection(trace_id, rejection.reason, rejection.spans - 1))
                    break
                buffer.size += size
                buffer.unsized -= 1
                self.total_bytes += size
        self._unsized.clear()
        return rejections

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

    def hand_on_early(self, trace_id: int, reason: str) -> list[ReadableSpan]:
        """Removes and returns the spans of ``trace_id`` buffered now; its later spans are dropped as ``reason``
        until its local root ends (as after a rejection, but what was buffered is handed on, not discarded)."""
        buffer = self._traces.pop(trace_id, None)
        self._rejected[trace_id] = reason
        if len(self._rejected) > _REJECTED_TRACES_REMEMBERED:
            self._rejected.popitem(last=False)
        if buffer is None:
            return []
        self._release(buffer)
        return buffer.spans

    def forget_rejection(self, trace_id: int) -> bool:
        """Ends the drop-on-sight of a discarded trace (its local root ended). Whether it was discarded."""
        return self._rejected.pop(trace_id, None) is not None

    def spans_of(self, trace_id: int) -> list[ReadableSpan]:
        """The spans of ``trace_id`` buffered now, in buffer order (the buffer's own list: not to be changed)."""
        buffer = self._traces.get(trace_id)
        return buffer.spans if buffer is not None else []

    def take_subtree(self, trace_id: int, root_span_id: int) -> list[ReadableSpan]:
        """Removes and returns the root span of ``root_span_id`` and its buffered descendants, in buffer order.

        Spans of the trace outside that subtree (another local root's, still running) stay buffered.
        """
        buffer = self._traces.get(trace_id)
        if buffer is None:
            return []
        # The usual case: the trace's one local root ended last, every span buffered started under it.
        if buffer.root == root_span_id or _only_subtree(buffer.spans, root_span_id):
            del self._traces[trace_id]
            self._release(buffer)
            return buffer.spans
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
        sized = len(buffer.spans) - buffer.unsized  # the spans before this index were counted by ``settle``
        subtree = [span for index, span in enumerate(buffer.spans) if index in taken]
        kept = [span for index, span in enumerate(buffer.spans) if index not in taken]
        removed = sum(approximate_size(buffer.spans[index]) for index in taken if index < sized)
        buffer.unsized = sum(1 for index in range(sized, len(buffer.spans)) if index not in taken)
        buffer.spans = kept
        buffer.root = _MIXED
        buffer.size -= removed
        self.total_bytes -= removed
        self.total_spans -= len(subtree)
        return subtree

    def take_idle(self, now: float, idle_seconds: float, under_way: Callable[[int], bool]) -> list[list[ReadableSpan]]:
        """Removes and returns every trace whose last span arrived ``idle_seconds`` or more before ``now``, but those
        ``under_way`` (:meth:`~otel_eval.processor._open_spans.OpenSpans.under_way`)."""
        idle = [
            trace_id
            for trace_id, buffer in self._traces.items()
            if now - buffer.last_seen >= idle_seconds and not under_way(trace_id)
        ]
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


def _only_subtree(spans: list[ReadableSpan], root_span_id: int) -> bool:
    """Whether ``spans`` are all under ``root_span_id``: it is their one local root and every other span's parent is
    among them (so each parent chain ends at that root)."""
    ids = {span.context.span_id for span in spans if span.context is not None}
    if len(ids) != len(spans) or root_span_id not in ids:
        return False
    for span in spans:
        parent = span.parent
        if parent is None or parent.is_remote:
            if span.context.span_id != root_span_id:
                return False
        elif parent.span_id not in ids:
            return False
    return True


def top_span_names(spans: Iterable[ReadableSpan]) -> list[str]:
    """Names of the spans whose parent is not among ``spans`` (the subtree's roots)."""
    spans = list(spans)
    ids = {span.context.span_id for span in spans if span.context is not None}
    return [span.name for span in spans if span.parent is None or span.parent.span_id not in ids]
