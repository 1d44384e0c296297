"""The span intake both engines share: what the agent's threads do in ``on_start`` and ``on_end``.

``on_start`` and ``on_end`` only append to bounded queues and return (the ``BatchSpanProcessor``'s contract): starts
and ends of sampled traces (the trace-id bound), each start with whether it began under suppressed instrumentation
(the evaluator's own work, skipped later). While the engine sheds (its transport or child is full), ends are shed at
once and counted by trace, and starts are not queued. The engine's thread is woken when an invocation may be
complete: a local root ended, a span of a trace whose root waits for it ended, or a batch is waiting; never per
span, never twice. With ``enrich=``, the enricher sees every start and end, holding each queued root that will be
evaluated for its scores.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Container

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, Context, get_value
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
        self.reset()

    def reset(self) -> None:
        """Empty queues and fresh locks (at start-up, and in a forked child)."""
        # A deque is thread safe for append/popleft: the agent's threads only append, the engine's thread only pops.
        self.starts: deque[tuple[Span, bool]] = deque()
        self.ends: deque[ReadableSpan] = deque()
        self.wake = threading.Event()
        self.shedder = Shedder()
        self.closed = False
        self._dropped = 0
        self._lock = threading.Lock()

    def on_start(self, span: Span, parent_context: Context | None) -> None:
        """Queues a sampled span's start. Never blocks."""
        if self.enricher is not None:
            self.enricher.on_start(span, parent_context)
        context = span.get_span_context()
        if not context.trace_flags.sampled or not is_sampled(context.trace_id, self._bound):
            return
        # A start made under suppressed instrumentation (the evaluator's own work) is always queued, however full
        # the queue or busy the shedder: unmarked, it would be taken for agent traffic. Such starts are few.
        suppressed = bool(get_value(_SUPPRESS_INSTRUMENTATION_KEY, parent_context))
        if suppressed or (len(self.starts) < self._max_pending and not self.shedder.active):  # else untracked
            self.starts.append((span, suppressed))

    def on_end(self, span: ReadableSpan) -> None:
        """Queues a sampled ended span; sheds it, or drops and counts it when the queue is full. Never blocks."""
        queued = self._queue(span)
        enricher = self.enricher
        if enricher is not None:  # a root that was not queued gets no scores: not held for them
            # With another exporter the scores never come back (wait 0): nothing is held, nothing to work out.
            hold = queued and enricher.wait_seconds > 0 and self._sampling.will_evaluate(span, span.context.trace_id)
            enricher.on_end(span, hold=hold)

    def _queue(self, span: ReadableSpan) -> bool:
        context = span.context
        if (
            context is None
            or not context.trace_flags.sampled
            or not is_sampled(context.trace_id, self._bound)
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
        wake = self.wake
        if not wake.is_set() and (
            (is_local_root(span) and not is_own_traffic(span))
            or len(ends) >= self._wake_threshold
            or context.trace_id in self._waiting
        ):
            wake.set()
        return True

    def take_dropped(self) -> int:
        """Ends dropped on a full queue since the last call."""
        with self._lock:
            dropped, self._dropped = self._dropped, 0
        return dropped
