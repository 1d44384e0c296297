"""The span intake both engines share: what the agent's threads do in ``on_start`` and ``on_end``.

``on_start`` and ``on_end`` only append to bounded queues and return (the ``BatchSpanProcessor``'s contract): starts
and ends of sampled traces (the trace-id bound), each start with whether it began under suppressed instrumentation
(the evaluator's own work, skipped later). While the engine sheds (its transport or child is full), ends are shed at
once and counted by trace, and starts are not queued. The engine's thread is woken when an invocation may be
complete (a local root ended, or a span of a trace whose root waits for it) and it is not already looking
(:attr:`SpanIntake.polling`), or when a batch is waiting; never per span, never twice. A wake-up costs the agent's
thread more than queueing a span does, so while spans keep coming the in-thread engine polls instead. With
``enrich=``, the enricher sees every start and end, holding each queued root that will be evaluated for its scores.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Container
from typing import cast

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, Context, get_current
from opentelemetry.sdk.trace import ReadableSpan, Span

from otel_eval.emit.enrichment import RootSpanEnricher
from otel_eval.processor._priority import Sampling
from otel_eval.processor._selection import is_local_root, is_own_traffic, is_sampled
from otel_eval.processor._shedding import Shedder


class SpanIntake:
    """Bounded queues of span starts and ends, drained by one engine thread.

    Args:
        max_pending: Starts and ends queued at most, each; an end beyond is dropped and counted
            (:meth:`take_dropped`), a start beyond goes untracked (its root completes when it ends).
        sampling: Which traces get in (:attr:`~otel_eval.processor._priority.Sampling.intake_bound`), and which roots
            the enricher holds.
        wake_batch: Queued ends that wake the engine's thread without a root.
        waiting: Ids of traces whose root waits for open descendants (a span of one wakes the thread).
        enricher: The root-span enricher, when the processor wraps the user's exporting processor.
    """

    def __init__(
        self,
        *,
        max_pending: int,
        sampling: Sampling,
        wake_batch: int,
        waiting: Container[int] = (),
        enricher: RootSpanEnricher | None = None,
    ) -> None:
        self._max_pending = max_pending
        self._sampling = sampling
        self._bound = sampling.intake_bound
        self._wake_threshold = min(wake_batch, max(1, max_pending // 2))
        self._waiting = waiting
        self.enricher = enricher
        # The hooks run on the agent's threads for every span: bound once to what this configuration needs.
        self.on_start: Callable[[Span, Context | None], None] = (
            self._start if enricher is None else self._start_enriched
        )
        """Queues a sampled span's start. Never blocks."""
        end = self._queue if enricher is None else self._end_enriched  # the first says whether it queued: unused
        self.on_end = cast("Callable[[ReadableSpan], None]", end)
        """Queues a sampled ended span; sheds it, or drops and counts it when the queue is full. Never blocks."""
        self.reset()

    def reset(self) -> None:
        """Empty queues and fresh locks (at start-up, and in a forked child)."""
        # A deque is thread safe for append/popleft: the agent's threads only append, the engine's thread only pops.
        self.starts: deque[tuple[Span, bool]] = deque()
        self.ends: deque[ReadableSpan] = deque()
        self.wake = threading.Event()
        self.polling = False
        """Set by an engine thread that looks at the queue every few milliseconds anyway: a root's end then does not
        wake it. The thread clears it before it waits to be woken, then looks at the queue once more (an end queued
        in between is seen either way)."""
        self.shedder = Shedder()
        self.closed = False
        self._dropped = 0
        self._lock = threading.Lock()

    def _start_enriched(self, span: Span, parent_context: Context | None) -> None:
        self.enricher.on_start(span, parent_context)  # type: ignore[union-attr]
        self._start(span, parent_context)

    def _start(self, span: Span, parent_context: Context | None) -> None:
        # Not sampled (a RECORD_ONLY span) is ruled out when the start is taken: not worth its cost on every span.
        bound = self._bound
        if bound is not None and not is_sampled(span.get_span_context().trace_id, bound):
            return
        # A start made under suppressed instrumentation (the evaluator's own work) is always queued, however full
        # the queue or busy the shedder: unmarked, it would be taken for agent traffic. Such starts are few.
        current = parent_context if parent_context is not None else get_current()
        suppressed = bool(current.get(_SUPPRESS_INSTRUMENTATION_KEY))
        starts = self.starts
        if suppressed or (len(starts) < self._max_pending and not self.shedder.active):  # else untracked
            starts.append((span, suppressed))

    def _end_enriched(self, span: ReadableSpan) -> None:
        queued = self._queue(span)
        enricher: RootSpanEnricher = self.enricher  # type: ignore[assignment]
        # A root that was not queued gets no scores: not held for them. With another exporter the scores never come
        # back (wait 0): nothing is held, nothing to work out.
        hold = queued and enricher.wait_seconds > 0 and self._sampling.will_evaluate(span, span.context.trace_id)
        enricher.on_end(span, hold=hold)

    def _queue(self, span: ReadableSpan) -> bool:
        context = span.context
        bound = self._bound
        if (
            context is None
            or not context.trace_flags.sampled
            or (bound is not None and not is_sampled(context.trace_id, bound))
            or self.closed
        ):
            return False
        # Own spans (evaluation spans are children of the invocation) never count as a shed agent trace.
        if self.shedder.active and not is_own_traffic(span) and self.shedder.shed(context.trace_id):
            return False
        ends = self.ends
        if len(ends) >= self._max_pending:
            with self._lock:
                self._dropped += 1
            return False
        ends.append(span)
        if len(ends) >= self._wake_threshold or (
            not self.polling
            and ((is_local_root(span) and not is_own_traffic(span)) or context.trace_id in self._waiting)
        ):
            wake = self.wake
            if not wake.is_set():
                wake.set()
        return True

    def take_dropped(self) -> int:
        """Ends dropped on a full queue since the last call."""
        with self._lock:
            dropped, self._dropped = self._dropped, 0
        return dropped
