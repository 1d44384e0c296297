"""The embedded worker: the evaluation core run in the process that makes the requests, with an asyncio loop for
the judge.

Used when no Kafka is configured (built by :func:`~otel_eval.evaluation.embedded.embedded_worker`). The processor
calls :meth:`EmbeddedWorker.export` from its background thread (never from the agent's), which starts each request
once (:meth:`~otel_eval.evaluation.core.EvaluationCore.start`: paired and planned once): a request whose metrics all
run inline (no judge) is scored and emitted right there, with no further hand-off; any other is appended, prepared,
to a bounded queue (drop and count when full) for the worker thread's event loop, where judge calls run concurrently
under their deadlines and budget.

Sessions: a request whose conversation-level metrics wait for its session (the same start says so) is scored at once
on its per-invocation metrics and its turns are held in a :class:`~otel_eval.evaluation.sessions.SessionStage`; a
session's window is judged on the loop when it has been idle for ``sessions.idle_timeout``, when it reaches
``sessions.max_turns``, and at shutdown (as far as the timeout allows; the turns of the rest are counted as
dropped, ``shutdown``). :meth:`EmbeddedWorker.force_flush` does not close open sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from otel_eval import semconv
from otel_eval._runtime.forking import reinit_after_fork
from otel_eval._runtime.log_filters import DuplicateLogFilter
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.environment_variables import DEFAULT_CONCURRENCY, DEFAULT_QUEUE_SIZE
from otel_eval.evaluation.core import OnLoop, Scope, Started
from otel_eval.evaluation.sessions import SessionLimits, SessionStage, SessionWindow
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.reconstruct import Reads
from otel_eval.reconstruct.plain import PlainRequest
from otel_eval.transport.base import ExportResult, InvocationExporter, RequestEvaluator

logger = logging.getLogger(__name__)
logger.addFilter(DuplicateLogFilter())


def check_worker_bounds(*, max_queue_size: int, concurrency: int) -> None:
    """The embedded worker's bounds rule, for its constructor and for
    :class:`~otel_eval.processor.ProcessorSettings`, which checks its values when made, before any worker is built.

    Raises:
        ValueError: ``max_queue_size`` or ``concurrency`` below 1 (the message names the field and its value).
    """
    for name, value in (("max_queue_size", max_queue_size), ("concurrency", concurrency)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value!r}")


class EmbeddedWorker(InvocationExporter):
    """Evaluates requests inline when they need no event loop, else on a named daemon thread
    (``OtelEvalEmbeddedWorker``) with its own asyncio loop.

    Args:
        core: What evaluates and emits each request: the shared evaluation core
            (:class:`~otel_eval.evaluation.core.EvaluationCore`); ``export`` scores inline what it can
            (:meth:`~otel_eval.evaluation.core.EvaluationCore.start`).
        max_queue_size: Requests waiting for the worker; further ones are dropped and counted as
            ``otel_eval.invocations.dropped{otel_eval.drop.reason=transport_queue_full}``.
        concurrency: Requests evaluated at once on the worker's loop.
        pipeline: Pipeline counters (drops, queue-size gauge ``otel_eval.queue=requests``).
        sessions: When open sessions are judged and how many are held (the defaults when None; see the module's
            docstring).
        start_up: Start-up work that must not hold up the caller (:func:`~otel_eval.evaluation.embedded.embedded_worker`'s
            judge warnings, whose checks may import a provider's SDK): run first on the worker's thread, once.
        holds_session: Whether a session's turns are held for its conversation-level metrics (all when None). The
            span processor's session sampling: a turn of a session left out that priority sampling rescued is scored
            on its per-invocation metrics alone, not judged as a session of one turn.

    Raises:
        ValueError: ``max_queue_size`` or ``concurrency`` below 1 (:func:`check_worker_bounds`).
    """

    scores_here = True

    def __init__(
        self,
        core: EmbeddedCore,
        *,
        max_queue_size: int = DEFAULT_QUEUE_SIZE,
        concurrency: int = DEFAULT_CONCURRENCY,
        pipeline: PipelineMetrics | None = None,
        sessions: SessionLimits | None = None,
        start_up: Callable[[], None] | None = None,
        holds_session: Callable[[str], bool] | None = None,
    ) -> None:
        check_worker_bounds(max_queue_size=max_queue_size, concurrency=concurrency)
        self.core = core
        self._start_up = start_up
        self._holds_session = holds_session
        self._max_queue_size = max_queue_size
        self._concurrency = concurrency
        self._pipeline = pipeline
        self._sessions = SessionStage(sessions, pipeline)
        self._queue: deque[_Work] = deque()
        self._in_flight = 0
        self._in_flight_weight = 0
        self._unfinished = 0  # invocations queued or being evaluated, not yet emitted or counted as dropped
        self._report: Callable[[int], None] | None = None
        self._accounted = False
        self._shutdown = False
        if pipeline is not None:
            weak_self = weakref.ref(self)
            pipeline.register_queue("requests", lambda: _queued(weak_self))
        self._start()
        reinit_after_fork(self._at_fork_reinit)

    def _start(self) -> None:
        self._changed = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        self._serving: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[object]] = set()
        self._thread = threading.Thread(name="OtelEvalEmbeddedWorker", target=self._run, daemon=True)
        self._thread.start()

    def _at_fork_reinit(self) -> None:
        # The worker thread and its loop do not exist in a forked child: start afresh with an empty queue.
        self._queue.clear()
        self._in_flight = 0
        self._in_flight_weight = 0
        self._unfinished = 0
        self._report = None  # the parent's
        if self._sessions is not None:
            self._sessions.reset()
        if not self._shutdown:
            self._start()

    @property
    def queue_size(self) -> int:
        """Requests waiting for the worker (not counting those being evaluated)."""
        return len(self._queue)

    def report_unfinished(self, report: Callable[[int], None]) -> None:
        """Calls ``report`` with how many invocations are queued or being evaluated (neither emitted nor counted as
        dropped) now and whenever that changes, from the thread that changes it, under the worker's lock: it must be
        cheap and must not call back (the evaluation process stores it in memory its parent reads if it dies)."""
        with self._changed:
            self._report = report
            self._add_unfinished(0)

    def _add_unfinished(self, invocations: int) -> None:
        """Under ``self._changed``."""
        self._unfinished += invocations
        if self._report is not None:
            self._report(0 if self._accounted else self._unfinished)

    def has_capacity(self) -> bool:
        """Whether the queue has room for another request."""
        return not self._shutdown and len(self._queue) < self._max_queue_size

    def export(self, requests: Sequence[EvaluationRequest | PlainRequest]) -> ExportResult:
        """Evaluates each request that needs no event loop here, at once; queues the others for the worker, and
        drops (and counts) those that do not fit. Never waits for the worker. Plain requests
        (:class:`~otel_eval.reconstruct.plain.PlainRequest`) are taken as they are."""
        if self._shutdown:
            self._count_dropped(semconv.DROP_SHUTDOWN, len(requests))
            return ExportResult.FAILURE
        work, windows = self._begin(requests)
        if not work and not windows:
            return ExportResult.SUCCESS
        dropped = 0
        with self._changed:
            self._queue.extend(windows)  # bounded by the session limits
            for item in work:
                if len(self._queue) >= self._max_queue_size:
                    dropped += 1
                else:
                    self._queue.append(item)
            self._add_unfinished(sum(item.weight for item in windows) + len(work) - dropped)
        self._wake()
        if dropped:
            logger.warning("embedded evaluation queue full, dropped %d request(s)", dropped)
            self._count_dropped(semconv.DROP_TRANSPORT_QUEUE_FULL, dropped)
            return ExportResult.FAILURE
        return ExportResult.SUCCESS

    def export_rebuilt(self, requests: Sequence[EvaluationRequest | PlainRequest]) -> ExportResult:
        """:meth:`export`: the core scores plain requests on their views."""
        return self.export(requests)

    def _begin(self, requests: Sequence[EvaluationRequest | PlainRequest]) -> tuple[list[_Work], list[_Work]]:
        """Starts each request (:meth:`~otel_eval.evaluation.core.EvaluationCore.start`: paired and planned once,
        scored inline when it can be); returns (the prepared requests that need the loop, the session windows the
        requests' turns filled). A request whose conversation-level metrics wait for its session was started on its
        per-invocation ones, and its turns are held here."""
        sessions, core = self._sessions, self.core
        work: list[_Work] = []
        windows: list[_Work] = []
        held = False
        for request in requests:
            started = core.start(request, sessions=True)
            if started.holds_session:
                turns = request.invocations
                if self._holds_session is not None:
                    turns = [turn for turn in turns if turn.session_id and self._holds_session(turn.session_id)]
                held = held or bool(turns)
                windows += [_Work(window=window) for window in sessions.hold(turns)]
            if started.on_loop is not None:
                work.append(_Work(run=started.on_loop))
        if held:
            self._wake()  # a session may have opened: the loop's next wait is until its idle deadline
        return work, windows

    @property
    def open_sessions(self) -> int:
        """Sessions whose turns are held for their conversation-level metrics."""
        return len(self._sessions)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Waits until every queued request is evaluated and emitted, and the core's backend sinks delivered what
        they hold. False when ``timeout_millis`` passed first."""
        deadline = time.monotonic() + max(0, timeout_millis) / 1000
        if not self._drain(deadline):
            return False
        return self.core.force_flush(_millis_until(deadline))

    def drain(self, timeout_millis: int = 30000) -> bool:
        """Waits until every queued request is evaluated and emitted, without waiting for the backend sinks (which
        may be waiting for spans the caller still holds). False when ``timeout_millis`` passed first."""
        return self._drain(time.monotonic() + max(0, timeout_millis) / 1000)

    def _drain(self, deadline: float) -> bool:
        with self._changed:
            while self._queue or self._in_flight:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._thread.is_alive():
                    return False
                self._changed.wait(remaining)
        return True

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """Stops intake, evaluates what is queued within ``timeout_millis``, then cancels the rest. Idempotent.

        The last tenth of the bound (at most a second) is kept for the cancelling: a request stopped with a metric
        still running hands its finished metrics' records to the sinks before this returns."""
        if self._shutdown:
            return
        bound = max(0, timeout_millis) / 1000
        deadline = time.monotonic() + bound
        closing = self._sessions.close_all()
        with self._changed:
            self._queue.extend(_Work(window=window) for window in closing)
            self._add_unfinished(sum(len(window.turns) for window in closing))
            self._shutdown = True
        self._wake()
        self._drain(deadline - min(bound / 10, 1.0))
        with self._changed:
            abandoned = sum(item.weight for item in self._queue) + self._in_flight_weight
            self._queue.clear()
            self._accounted = True  # what is left is counted below: reported as none from here on
            self._add_unfinished(0)
        if abandoned:
            logger.warning(
                "embedded worker shut down with %d request(s) not evaluated, or only in part (the records of their "
                "finished metrics were emitted)",
                abandoned,
            )
            self._count_dropped(semconv.DROP_SHUTDOWN, abandoned)
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(self._stop_serving)
        self._thread.join(max(deadline - time.monotonic(), 0.0))
        self.core.shutdown(_millis_until(deadline))  # its backend sinks deliver what they hold, briefly

    # --- the worker thread ---------------------------------------------------------------------------------------

    def _run(self) -> None:
        start_up, self._start_up = self._start_up, None  # once, not again in a forked child
        if start_up is not None:
            try:
                start_up()
            except Exception:  # the thread boundary: log, never propagate
                logger.exception("embedded evaluation worker start-up failed")
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve(loop))
        except asyncio.CancelledError:
            pass  # cancelled by shutdown
        except Exception:  # the thread boundary: log, never propagate
            logger.exception("embedded evaluation worker stopped")
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()
            with self._changed:
                self._changed.notify_all()

    async def _serve(self, loop: asyncio.AbstractEventLoop) -> None:
        self._wakeup = asyncio.Event()
        self._serving = asyncio.current_task()
        self._loop = loop
        semaphore = asyncio.Semaphore(self._concurrency)
        try:
            while not self._shutdown or self._queue:
                self._wakeup.clear()
                self._expire()
                while (request := self._pop()) is not None:
                    try:
                        await semaphore.acquire()
                    except asyncio.CancelledError:
                        self._done_with_one(request.weight)
                        raise
                    task: asyncio.Task[object] = loop.create_task(self._evaluate(request, semaphore))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                if self._shutdown:
                    break
                timeout = self._sessions.seconds_to_next_close()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wakeup.wait(), timeout)
        except asyncio.CancelledError:
            pass  # shutdown: the deadline passed with requests still waiting
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _expire(self) -> None:
        idle = self._sessions.expire()
        if idle:
            with self._changed:
                self._queue.extend(_Work(window=window) for window in idle)
                self._add_unfinished(sum(len(window.turns) for window in idle))

    def _pop(self) -> _Work | None:
        with self._changed:
            if not self._queue:
                return None
            item = self._queue.popleft()
            self._in_flight += 1
            self._in_flight_weight += item.weight
            return item

    async def _evaluate(self, item: _Work, semaphore: asyncio.Semaphore) -> object:
        try:
            if item.window is not None:
                return await self.core.evaluate_window(item.window)
            return await item.run() if item.run is not None else []
        finally:
            semaphore.release()
            self._done_with_one(item.weight)

    def _done_with_one(self, weight: int) -> None:
        with self._changed:
            self._in_flight -= 1
            self._in_flight_weight -= weight
            self._add_unfinished(-weight)
            self._changed.notify_all()

    def _stop_serving(self) -> None:
        # Cancel what runs; a metric that ignores cancellation keeps only this daemon thread busy, never the caller.
        for task in list(self._tasks):
            task.cancel()
        if self._serving is not None:
            self._serving.cancel()

    def _wake(self) -> None:
        loop, wakeup = self._loop, self._wakeup
        if loop is None or wakeup is None:
            return  # the loop is starting; it checks the queue before its first wait
        with contextlib.suppress(RuntimeError):  # the loop closed (shutdown raced with export)
            loop.call_soon_threadsafe(wakeup.set)

    def _count_dropped(self, reason: str, count: int) -> None:
        if self._pipeline is not None and count:
            self._pipeline.invocations_dropped(reason, count)


class EmbeddedCore(RequestEvaluator, Protocol):
    """What the embedded worker needs of its core (:class:`~otel_eval.evaluation.core.EvaluationCore`)."""

    def start(
        self, request: EvaluationRequest | PlainRequest, *, scope: Scope = "all", sessions: bool = False
    ) -> Started:
        """Pairs and plans ``request`` once: scores and emits it here when it needs no event loop, else returns it
        prepared for one; with ``sessions``, says whether its turns wait for their session's window."""
        ...

    def reads(self) -> Reads:
        """What the requests it scores with its own criteria need rebuilt."""
        ...

    def conversation_metrics(self) -> list[str]:
        """The conversation-level metrics it runs with its own criteria."""
        ...

    async def evaluate_window(self, window: SessionWindow) -> list[EvaluationRecord]:
        """Scores and emits a closed session window."""
        ...

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Waits for the sinks that deliver later."""
        ...

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """Lets the sinks that deliver later deliver, then stops them."""
        ...


@dataclass(frozen=True, slots=True)
class _Work:
    """A prepared request to score on the loop, or a closed session window."""

    run: OnLoop | None = None
    window: SessionWindow | None = None

    @property
    def weight(self) -> int:
        """Invocations it stands for when dropped: 1 for a request (as before sessions), a window's turns."""
        return len(self.window.turns) if self.window is not None else 1


def _queued(weak_self: weakref.ref[EmbeddedWorker]) -> int:
    exporter = weak_self()
    return exporter.queue_size if exporter is not None else 0


def _millis_until(deadline: float) -> int:
    return max(0, int((deadline - time.monotonic()) * 1000))
