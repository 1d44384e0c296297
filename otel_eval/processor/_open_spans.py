"""The spans still open under each local root of the processor's traces (exact completion).

The processor sees every span start (``on_start``) and end (``on_end``), so it needs no timer to decide that an
invocation is over. The rule:

* a local root's subtree is *complete* when the root and every span started under it in this process have ended;
* a root that ends with descendants still open (an async tool, a background task) waits for them, at most
  ``trace_idle_timeout`` seconds after its own end; then it is handed on without them, counted as
  ``otel_eval.invocations.incomplete``, and each of those spans is dropped when it ends (within another
  ``trace_idle_timeout``; ``otel_eval.spans.dropped{otel_eval.drop.reason=incomplete}``);
* a trace whose local root started here and runs with a span under it open (a model call or a tool awaiting
  approval may end no span for minutes) is *under way*: never handed on for going idle, it waits for its root, at most
  ``max_trace_age`` seconds from its first start; a root open alone (a request or connection span around finished
  invocations) does not hold its trace; then what ended is handed on as it is (``otel_eval.invocations.incomplete``) and its later
  spans are dropped (``otel_eval.drop.reason=max_trace_age``).

Memory is bounded like the span buffers: at most ``max_traces`` traces and ``max_spans_per_trace`` spans per trace are tracked (beyond, a span is simply not tracked
and its root completes when it ends, as without tracking), and a trace with no start or end for ``idle_timeout``
seconds (``max_trace_age`` while its root runs) is forgotten.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Final

from opentelemetry.metrics import MeterProvider

from otel_eval import semconv
from otel_eval._runtime.log_filters import DuplicateLogFilter
from otel_eval.environment_variables import OTEL_EVAL_MAX_TRACE_AGE, OTEL_EVAL_TRACE_IDLE_TIMEOUT
from otel_eval.instruments import ObservedCounter

logger = logging.getLogger(__name__)
logger.addFilter(DuplicateLogFilter())

UNDER_ABANDONED: Final = -1
"""Returned by :meth:`OpenSpans.ended` for a span whose root was already handed on incomplete."""


_NONE_ABANDONED: frozenset[int] = frozenset()
"""A trace's abandoned roots while it has none (most traces never have one): no set made per trace."""


@dataclass(slots=True)
class _Trace:
    root_of: dict[int, int] = field(default_factory=dict)
    """Span id -> id of the local root it started under, for every span started while the trace is tracked."""
    open: dict[int, int] = field(default_factory=dict)
    """Local root id -> spans under it (itself included) that started and have not ended."""
    abandoned: set[int] | frozenset[int] = _NONE_ABANDONED
    """Roots handed on while spans under them were still open."""
    last_seen: float = 0.0
    running: int = 0
    """Local roots seen starting here whose own span has not ended."""
    first_seen: float = 0.0


class OpenSpans:
    """Open spans per trace and local root.

    Args:
        max_traces: Traces tracked at once.
        max_spans_per_trace: Spans tracked per trace.
    """

    def __init__(self, *, max_traces: int, max_spans_per_trace: int) -> None:
        self._max_traces = max_traces
        self._max_spans = max_spans_per_trace
        self._traces: dict[int, _Trace] = {}

    @property
    def tracked_traces(self) -> int:
        """Traces with open spans (or spans under an abandoned root) tracked now."""
        return len(self._traces)

    def started(self, trace_id: int, span_id: int, local_parent_id: int | None, now: float) -> None:
        """A span started; ``local_parent_id`` is its parent's id when the parent is in this process."""
        trace = self._traces.get(trace_id)
        if trace is None:
            if len(self._traces) >= self._max_traces:
                return
            trace = self._traces[trace_id] = _Trace(first_seen=now)
        if len(trace.root_of) >= self._max_spans:
            return
        if local_parent_id is None:
            trace.running += 1
        # A parent that started before tracking began stands for its own root: if it is the root, that is exact.
        root = span_id if local_parent_id is None else trace.root_of.get(local_parent_id, local_parent_id)
        trace.root_of[span_id] = root
        open_spans = trace.open
        open_spans[root] = open_spans.get(root, 0) + 1
        trace.last_seen = now

    def ended(self, trace_id: int, span_id: int, now: float) -> int | None:
        """A span ended. Returns the id of the local root it started under, :data:`UNDER_ABANDONED`, or None when
        the span was not tracked."""
        trace = self._traces.get(trace_id)
        if trace is None:
            return None
        root = trace.root_of.get(span_id)
        if root is None:
            return None
        trace.last_seen = now
        if span_id == root:
            trace.running -= 1
        remaining = trace.open[root] - 1
        abandoned = root in trace.abandoned
        if remaining > 0:
            trace.open[root] = remaining
        else:
            del trace.open[root]
            if abandoned:
                trace.abandoned.remove(root)  # type: ignore[union-attr]  # a set once a root was abandoned
            if not trace.open:
                del self._traces[trace_id]  # nothing open: the trace's bookkeeping is done
        return UNDER_ABANDONED if abandoned else root

    def tracks(self, trace_id: int) -> bool:
        """Whether spans of ``trace_id`` are open (or were handed on incomplete) and tracked."""
        return trace_id in self._traces

    def under_way(self, trace_id: int) -> bool:
        """Whether a local root of ``trace_id`` started here runs with a span under it open."""
        trace = self._traces.get(trace_id)
        return trace is not None and _under_way(trace)

    def overdue(self, now: float, max_age: float) -> list[int]:
        """Traces under way ``max_age`` seconds or more after their first tracked start."""
        return [
            trace_id
            for trace_id, trace in self._traces.items()
            if now - trace.first_seen >= max_age and _under_way(trace)
        ]

    def open_under(self, trace_id: int, root_id: int) -> int:
        """Spans under ``root_id`` still open."""
        trace = self._traces.get(trace_id)
        return trace.open.get(root_id, 0) if trace is not None else 0

    def abandon(self, trace_id: int, root_id: int, now: float) -> int:
        """``root_id`` was handed on incomplete: its open spans are dropped when they end (if they end within
        another idle timeout). Returns how many."""
        trace = self._traces.get(trace_id)
        if trace is None or root_id not in trace.open:
            return 0
        if not trace.abandoned:
            trace.abandoned = set()
        trace.abandoned.add(root_id)  # type: ignore[union-attr]
        trace.last_seen = now
        return trace.open[root_id]

    def forget(self, trace_id: int) -> None:
        """Stops tracking ``trace_id`` (dropped whole, or handed on at shutdown)."""
        self._traces.pop(trace_id, None)

    def forget_idle(self, now: float, idle_seconds: float) -> None:
        """Forgets traces without a start or end for ``idle_seconds`` but those under way (spans that never end must
        not hold memory; a trace under way is forgotten by :meth:`forget` at its age limit)."""
        idle = [
            trace_id
            for trace_id, trace in self._traces.items()
            if now - trace.last_seen >= idle_seconds and not _under_way(trace)
        ]
        for trace_id in idle:
            del self._traces[trace_id]


def _under_way(trace: _Trace) -> bool:
    return trace.running > 0 and sum(trace.open.values()) > trace.running


class IncompleteCounter:
    """``otel_eval.invocations.incomplete``: local roots handed on while spans under them were still open.

    Args:
        meter_provider: Where the counter goes (the global provider when None).
    """

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        self._counter = ObservedCounter(
            meter_provider,
            semconv.METRIC_INVOCATIONS_INCOMPLETE,
            "{invocation}",
            "Invocations handed on at the idle timeout with spans under their root still open.",
        )
        self._lock = threading.Lock()
        self.total = 0
        """In-process total (:meth:`EvaluationSpanProcessor.stats` reports it as ``invocations.incomplete``)."""

    def add(self, count: int) -> None:
        """``count`` more roots were handed on incomplete."""
        if count:
            self._counter.add(count)
            with self._lock:
                self.total += count


def say_incomplete(count: int, seconds: float, *, running: bool) -> None:
    """Logs ``count`` invocations handed on incomplete: still ``running`` ``seconds`` after they started
    (``max_trace_age``), or with spans open under their root ``seconds`` after it ended (``trace_idle_timeout``)."""
    if running:
        logger.warning(
            "evaluated %d invocation(s) still running %s s after they started, as they were "
            "(otel_eval.invocations.incomplete; their later spans are dropped as %r): raise %s for longer runs",
            count, f"{seconds:g}", semconv.DROP_MAX_TRACE_AGE, OTEL_EVAL_MAX_TRACE_AGE,
        )  # fmt: skip
    else:
        logger.warning(
            "evaluated %d invocation(s) without the spans still open under their root %s s after it ended "
            "(otel_eval.invocations.incomplete; those spans are dropped as %r when they end): raise %s if "
            "background tasks outlive their invocation longer",
            count, f"{seconds:g}", semconv.DROP_INCOMPLETE, OTEL_EVAL_TRACE_IDLE_TIMEOUT,
        )  # fmt: skip
