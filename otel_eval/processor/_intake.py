"""The span intake both engines share: what the agent's threads do in ``on_start`` and ``on_end``.

``on_start`` and ``on_end`` only append to bounded queues and return (the ``BatchSpanProcessor``'s contract): starts
and ends of sampled traces (the trace-id bound), each start with whether it began under suppressed instrumentation
(the evaluator's own work, skipped later). While the engine sheds (its transport or child is full), ends are shed at
once and counted by trace, and starts are not queued. The engine's thread is woken when an invocation may be
complete (a local root ended, or a span of a trace whose root waits for it) and it is not already looking
(:attr:`SpanIntake.polling`), or when a batch is waiting; never per span, never twice. A wake-up costs the agent's
thread more than queueing a span does, so while spans keep coming the engine's thread polls instead
(:class:`WakeSchedule`). With ``enrich=``, the enricher sees every start and end, holding each queued root that will
be evaluated for its scores.

Also here: the load shedding in ``on_end`` while the transport or the child is full (:class:`Shedder`: spans dropped
at once, their traces remembered), and what the engines' threads use to take the queued work (:func:`drain`) and to
split a deadline (:func:`millis_until`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Container, Iterator
from itertools import repeat, starmap
from typing import TypeVar, cast

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, Context, get_current, set_value
from opentelemetry.sdk.trace import ReadableSpan, Span
from opentelemetry.trace import TraceFlags

from otel_eval._runtime.log_filters import DuplicateLogFilter
from otel_eval.emit.enrichment import RootSpanEnricher
from otel_eval.processor._selection import Sampling, is_own_traffic, is_sampled
from otel_eval.traces.readable import reads_fields

logger = logging.getLogger(__name__)
logger.addFilter(DuplicateLogFilter())

_SAMPLED = TraceFlags.SAMPLED
_SUPPRESSED: Context = set_value(_SUPPRESS_INSTRUMENTATION_KEY, True)
T = TypeVar("T")


class Wake:
    """A wake-up for one waiting thread: an ``Event`` that the waiter consumes, at half the cost to the setter.

    ``Event.set`` runs ``Condition.notify_all`` in Python around the futex call; this is one lock release (a
    semaphore post: a futex wake-up only when the thread is asleep on it). Any thread may set it; one thread waits.
    """

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()  # held: not set

    def set(self) -> None:
        """Wakes the waiting thread, or the next :meth:`wait`; a no-op when already set. Never blocks."""
        lock = self._lock
        if lock.locked():
            try:  # noqa: SIM105 - ``contextlib.suppress`` costs three Python calls on the agent's thread per wake-up
                lock.release()
            except RuntimeError:  # set by another thread in between
                pass

    def clear(self) -> None:
        """Forgets a pending wake-up."""
        self._lock.acquire(blocking=False)

    def wait(self, timeout: float) -> bool:
        """Waits up to ``timeout`` seconds for a wake-up, and consumes it; whether one came."""
        return self._lock.acquire(timeout=max(0.0, timeout))


class DropCount:
    """Items an agent's thread dropped on a full queue, counted there and taken by the engine's thread each step."""

    __slots__ = ("_count", "_lock")

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    def add(self) -> None:
        """Counts one dropped item. Never blocks for long (the lock guards one addition)."""
        with self._lock:
            self._count += 1

    def take(self) -> int:
        """The items dropped since the last call."""
        if not self._count:  # most steps: read without the lock (one dropped meanwhile is taken next time)
            return 0
        with self._lock:
            taken, self._count = self._count, 0
        return taken


MAX_SHED_TRACES = 65536
"""Trace ids of dropped spans remembered at most until the engine's thread takes them (beyond, spans are still
dropped and counted, their traces not dropped whole)."""


class _DroppedSpans:
    """Dropped spans and their traces' ids, under one lock: the engine's thread takes them and drops those traces
    whole (their other spans would rebuild into a partial invocation)."""

    __slots__ = ("_lock", "_spans", "_traces")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans = 0
        self._traces: dict[int, None] = {}

    def _record(self, trace_id: int) -> None:
        """Under ``self._lock``."""
        self._spans += 1
        if len(self._traces) < MAX_SHED_TRACES:
            self._traces[trace_id] = None

    def _take(self) -> tuple[int, list[int]]:
        """Under ``self._lock``."""
        spans, self._spans = self._spans, 0
        traces, self._traces = list(self._traces), {}
        return spans, traces


class TraceDrops(_DroppedSpans):
    """Spans an agent's thread dropped on a full queue, and their traces' ids, until the engine's thread takes them."""

    __slots__ = ()

    def add(self, trace_id: int) -> None:
        """Counts one dropped span of ``trace_id``. Never blocks for long (the lock guards two additions)."""
        with self._lock:
            self._record(trace_id)

    def take(self) -> tuple[int, list[int]]:
        """The spans dropped since the last call and their traces' ids."""
        if not self._spans:  # most steps: read without the lock (one dropped meanwhile is taken next time)
            return 0, []
        with self._lock:
            return self._take()


class Shedder(_DroppedSpans):
    """Whether spans are being shed, and what was shed since the background thread last looked (one lock for both).

    ``active`` is read without the lock on the agent's threads (a stale read sheds one span too many or too few);
    :meth:`shed` re-checks it under the lock.
    """

    __slots__ = ("active",)

    def __init__(self) -> None:
        super().__init__()
        self.active = False

    def shed(self, trace_id: int) -> bool:
        """Drops a span of ``trace_id`` (remembering the trace). False when shedding just stopped."""
        with self._lock:
            if not self.active:
                return False
            self._record(trace_id)
            return True

    def start(self) -> bool:
        """Starts shedding; True when it was not already on (the caller then drops the open traces whole)."""
        with self._lock:
            started, self.active = not self.active, True
            return started

    def take(self, *, full: bool) -> tuple[int, list[int]]:
        """The spans shed since the last call and their traces' ids; stops shedding unless the transport is ``full``."""
        with self._lock:
            taken = self._take()
            if not full:
                self.active = False
        return taken


class SpanIntake:
    """Bounded queues of span starts and ends, drained by one engine thread.

    Args:
        max_pending: Starts and ends queued at most, each; an end beyond is dropped and counted
            (:meth:`take_dropped`), a start beyond goes untracked (its root completes when it ends).
        sampling: Which traces get in (:attr:`~otel_eval.processor._selection.Sampling.intake_bound`), and which roots
            the enricher holds.
        wake_batch: Queued ends that wake the engine's thread without a root.
        enricher: The root-span enricher, when the processor wraps the user's exporting processor.
    """

    def __init__(
        self,
        *,
        max_pending: int,
        sampling: Sampling,
        wake_batch: int,
        enricher: RootSpanEnricher | None = None,
    ) -> None:
        self._max_pending = max_pending
        self._sampling = sampling
        self._bound = sampling.intake_bound
        self._wake_threshold = min(wake_batch, max(1, max_pending // 2))
        self.waiting: Container[int] = ()
        """Ids of traces whose root waits for open descendants (a span of one wakes the thread): a read-only view
        of the assembler's (:attr:`~otel_eval.processor._assembler.SpanAssembler.waiting_traces`), set by the
        engine that owns both."""
        self.enricher = enricher
        self._fields_class: type | None = None  # the SDK span class ``on_end`` reads through its fields
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
        self.wake = Wake()
        self.polling = False
        """Set by an engine thread that looks at the queue every few milliseconds anyway: a root's end then does not
        wake it. The thread clears it before it waits to be woken, then looks at the queue once more (an end queued
        in between is seen either way)."""
        self.shedder = Shedder()
        self.closed = False
        self._dropped = TraceDrops()

    # The hooks below run on the agent's threads and are called by the processor without a wrapper (one call less
    # on every span): each catches everything itself. A ``try`` costs nothing until something raises.

    def _start_enriched(self, span: Span, parent_context: Context | None) -> None:
        try:
            self.enricher.on_start(span, parent_context)  # type: ignore[union-attr]
        except Exception:  # the agent's thread: log (deduplicated), never raise
            logger.exception("EvaluationSpanProcessor.on_start failed")
        self._start(span, parent_context)

    def _start(self, span: Span, parent_context: Context | None) -> None:
        try:
            # Not sampled (a RECORD_ONLY span) is ruled out when the start is taken: not worth its cost on every span.
            bound = self._bound
            if bound is not None and not is_sampled(span.get_span_context().trace_id, bound):
                return
            # A start made under suppressed instrumentation (the evaluator's own work) is always queued, however
            # full the queue or busy the shedder: unmarked, it would be taken for agent traffic. Such starts are few.
            current = parent_context if parent_context is not None else get_current()
            suppressed = bool(current.get(_SUPPRESS_INSTRUMENTATION_KEY))
            starts = self.starts
            if suppressed or (len(starts) < self._max_pending and not self.shedder.active):  # else untracked
                starts.append((span, suppressed))
        except Exception:  # the agent's thread: log (deduplicated), never raise
            logger.exception("EvaluationSpanProcessor.on_start failed")

    def _end_enriched(self, span: ReadableSpan) -> None:
        queued = self._queue(span)
        try:
            enricher: RootSpanEnricher = self.enricher  # type: ignore[assignment]
            # A root that was not queued gets no scores: not held for them. With another exporter the scores never
            # come back (wait 0): nothing is held, nothing to work out.
            hold = queued and enricher.wait_seconds > 0 and self._sampling.will_evaluate(span, span.context.trace_id)
            enricher.on_end(span, hold=hold)
        except Exception:  # the agent's thread: log (deduplicated), never raise
            logger.exception("EvaluationSpanProcessor.on_end failed")

    def _queue(self, span: ReadableSpan) -> bool:
        try:
            # An SDK span is read through the fields behind its properties, as traces.readable reads it
            # (``reads_fields``), and a SpanContext (a tuple: trace id, span id, is remote, trace flags, ...) by
            # index: each property would be a Python call on the agent's thread.
            fields = type(span) is self._fields_class or self._reads_fields(span)
            context = span._context if fields else span.context
            bound = self._bound
            if (
                context is None
                or not context[3] & _SAMPLED  # ``.trace_flags.sampled``
                or (bound is not None and not is_sampled(context[0], bound))
                or self.closed
            ):
                return False
            # Own spans (evaluation spans are children of the invocation) never count as a shed agent trace.
            if self.shedder.active and not is_own_traffic(span) and self.shedder.shed(context[0]):
                return False
            ends = self.ends
            if len(ends) >= self._max_pending:
                self._dropped.add(context[0])
                return False
            ends.append(span)
            if len(ends) >= self._wake_threshold or (
                not self.polling
                # a local root (no parent, or a remote one: ``is_local_root``) of the agent's, or a span of a trace
                # whose root waits for it
                and (
                    (
                        ((parent := span._parent if fields else span.parent) is None or parent[2])
                        and not is_own_traffic(span)
                    )
                    or context[0] in self.waiting
                )
            ):
                self.wake.set()
        except Exception:  # the agent's thread: log (deduplicated), never raise
            logger.exception("EvaluationSpanProcessor.on_end failed")
            return False
        return True

    def _reads_fields(self, span: ReadableSpan) -> bool:
        """Whether ``span``'s class is read through its fields (:func:`~otel_eval.traces.readable.reads_fields`);
        remembered for the next span (the agent's spans are of one class)."""
        if reads_fields(type(span)):
            self._fields_class = type(span)
            return True
        return False

    def queue_batch(self, starts: list[tuple[Span, bool]], ends: list[ReadableSpan]) -> None:
        """Queues a batch that another process's intake let in (the evaluation process's: the agent's process ran
        ``on_start`` and ``on_end`` on each span, with the same sampling), as those hooks would queue each span here.

        Whole when the rules let everything in at once (no enricher, not shedding, not closed, room for all): what
        the hooks would check of each span is then known to pass (sampled, in the bound; the suppressed flag
        travelled with each start), so the queues are extended in C. Otherwise span by span, through the hooks.
        Nothing is woken: the caller steps the engine itself (``threaded=False``).
        """
        room = self._max_pending
        if (
            self.enricher is None
            and not self.shedder.active
            and not self.closed
            and len(self.starts) + len(starts) <= room
            and len(self.ends) + len(ends) <= room
        ):
            self.starts.extend(starts)
            self.ends.extend(ends)
            return
        for span, suppressed in starts:
            self.on_start(span, _SUPPRESSED if suppressed else None)
        for ended in ends:
            self.on_end(ended)

    def take_dropped(self) -> tuple[int, list[int]]:
        """Ends dropped on a full queue since the last call, and their traces' ids (each to be dropped whole)."""
        return self._dropped.take()


POLL_SECONDS = 0.003
"""While spans keep coming, an engine thread looks at the queue this often instead of being woken by each root's end
(a wake-up costs the agent's thread more than the span does): a complete invocation waits at most this long."""
POLL_WINDOW_SECONDS = 0.02
"""Spans that came within this long of the ones before keep an engine's thread polling for this long after them: an
agent that makes more than ~50 invocations a second (250/s in ``bench_processor``) then never wakes the thread at a
root's end (~12-19 us of the agent's thread each, measured on a 2-core VM). Spans further apart get one look, and the
next root's end wakes the thread: a slower agent would pay ~6 empty looks an invocation (30-50 us each of the
engine's thread) to spare itself one wake-up."""


class WakeSchedule:
    """When an engine's thread next looks at ``intake``: every ``poll`` seconds while spans flow (the agent's threads
    then do not wake it), otherwise when woken or after ``tick`` seconds.

    Spans flow while each look finds ends, and while they came within :data:`POLL_WINDOW_SECONDS` of the ones before
    (for that long after them): then the first look that finds none stops the polling, and the next root's end wakes
    the thread. A fast agent's roots are found by the looks; a slow agent's invocation gets one look after its
    step, not a window of empty ones.

    Args:
        intake: The queues the thread drains.
        tick: Seconds between looks when nothing wakes the thread.
        poll: Seconds between looks while spans flow.
    """

    def __init__(self, intake: SpanIntake, *, tick: float, poll: float = POLL_SECONDS) -> None:
        self._intake = intake
        self._tick = tick
        self._poll = min(poll, tick)
        self._polling = False
        self._poll_until = 0.0
        self._last_busy = -POLL_WINDOW_SECONDS
        self.ticked = False
        """The last :meth:`wait` waited a whole tick and nobody woke the thread: no local root ended meanwhile (its end
        would have woken it), so nothing queued is a complete invocation."""

    def wait(self) -> bool:
        """Waits until the next look; returns whether an agent's thread woke it."""
        intake = self._intake
        wake = intake.wake
        self.ticked = False
        if self._polling:
            self._polling = time.monotonic() < self._poll_until  # else the last look: :meth:`busy` after it polls on
            return wake.wait(self._poll)  # consumed, if one came
        if intake.polling:  # the polling stops here
            intake.polling = False  # then a look at the queue: an end queued before this line is seen there
            if intake.ends:
                wake.clear()  # the ends are taken now: a wake-up for them would only make one more look
                return False
        woken = wake.wait(self._tick)
        self.ticked = not woken
        return woken

    def busy(self) -> None:
        """Spans came: look again in ``poll`` seconds (and on, while each look finds ends); when spans also came
        within :data:`POLL_WINDOW_SECONDS` before, on for that long whatever the looks find."""
        now = time.monotonic()
        flowing = now - self._last_busy < POLL_WINDOW_SECONDS
        self._poll_until = now + POLL_WINDOW_SECONDS if flowing else 0.0
        self._last_busy = now
        self._polling = True
        self._intake.polling = True


# --- handing work on: what the engines' threads drain, and what is left of a deadline ------------------------------


def drain(queue: deque[T], count: int) -> Iterator[T]:
    """Pops up to ``count`` items from the left of ``queue`` (appended to by other threads meanwhile: a deque's
    ``append`` and ``popleft`` are thread safe), lazily (iterated in C: no Python frame per item)."""
    return starmap(queue.popleft, repeat((), min(count, len(queue))))


def millis_until(deadline: float) -> int:
    """Milliseconds from now to ``deadline`` (a ``time.monotonic()`` value), never below 0."""
    return max(0, int((deadline - time.monotonic()) * 1000))
