"""The embedded default transport: the evaluation core run where the requests are made, with an asyncio loop for
the judge.

Used when no Kafka is configured. The processor calls :meth:`EmbeddedInvocationExporter.export` from its background
thread (never from the agent's): a request whose metrics all run inline (no judge, see
:meth:`~otel_eval.evaluation.core.EvaluationCore.evaluate_inline`) is scored and emitted right there, with no further
hand-off; any other is appended to a bounded queue (drop and count when full) for the worker thread's event loop,
where judge calls run concurrently under their deadlines and budget.
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

from otel_eval import semconv
from otel_eval._runtime.forking import reinit_after_fork
from otel_eval._runtime.log_filters import DuplicateLogFilter
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.environment_variables import DEFAULT_CONCURRENCY, DEFAULT_QUEUE_SIZE
from otel_eval.model.messages import EvaluationRequest
from otel_eval.transport.base import ExportResult, InvocationExporter, RequestEvaluator

logger = logging.getLogger(__name__)
logger.addFilter(DuplicateLogFilter())


class EmbeddedInvocationExporter(InvocationExporter):
    """Evaluates requests inline when they need no event loop, else on a named daemon thread
    (``OtelEvalEmbeddedWorker``) with its own asyncio loop.

    Args:
        core: What evaluates and emits each request (the processor passes the shared evaluation core); when it has
            an ``evaluate_inline`` method (as :class:`~otel_eval.evaluation.core.EvaluationCore` does), ``export``
            tries it first.
        max_queue_size: Requests waiting for the worker; further ones are dropped and counted as
            ``otel_eval.invocations.dropped{otel_eval.drop.reason=transport_queue_full}``.
        concurrency: Requests evaluated at once on the worker's loop.
        pipeline: Pipeline counters (drops, queue-size gauge ``otel_eval.queue=requests``).
    """

    def __init__(
        self,
        core: RequestEvaluator,
        *,
        max_queue_size: int = DEFAULT_QUEUE_SIZE,
        concurrency: int = DEFAULT_CONCURRENCY,
        pipeline: PipelineMetrics | None = None,
    ) -> None:
        if max_queue_size < 1:
            raise ValueError("max_queue_size must be at least 1")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.core = core
        self._evaluate_inline: Callable[[EvaluationRequest], object | None] | None = getattr(
            core, "evaluate_inline", None
        )
        self._max_queue_size = max_queue_size
        self._concurrency = concurrency
        self._pipeline = pipeline
        self._queue: deque[EvaluationRequest] = deque()
        self._in_flight = 0
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
        if not self._shutdown:
            self._start()

    @property
    def queue_size(self) -> int:
        """Requests waiting for the worker (not counting those being evaluated)."""
        return len(self._queue)

    def has_capacity(self) -> bool:
        """Whether the queue has room for another request."""
        return not self._shutdown and len(self._queue) < self._max_queue_size

    def export(self, requests: Sequence[EvaluationRequest]) -> ExportResult:
        """Evaluates each request that needs no event loop here, at once; queues the others for the worker, and
        drops (and counts) those that do not fit. Never waits for the worker."""
        if self._shutdown:
            self._count_dropped(semconv.DROP_SHUTDOWN, len(requests))
            return ExportResult.FAILURE
        inline = self._evaluate_inline
        if inline is not None:
            requests = [request for request in requests if inline(request) is None]
            if not requests:
                return ExportResult.SUCCESS
        dropped = 0
        with self._changed:
            for request in requests:
                if len(self._queue) >= self._max_queue_size:
                    dropped += 1
                else:
                    self._queue.append(request)
        self._wake()
        if dropped:
            logger.warning("embedded evaluation queue full, dropped %d request(s)", dropped)
            self._count_dropped(semconv.DROP_TRANSPORT_QUEUE_FULL, dropped)
            return ExportResult.FAILURE
        return ExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Waits until every queued request is evaluated and emitted, and the core's backend sinks delivered what
        they hold. False when ``timeout_millis`` passed first."""
        deadline = time.monotonic() + max(0, timeout_millis) / 1000
        if not self._drain(deadline):
            return False
        flush_sinks = getattr(self.core, "force_flush", None)
        return bool(flush_sinks(_millis_until(deadline))) if callable(flush_sinks) else True

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
        """Stops intake, evaluates what is queued within ``timeout_millis``, then cancels the rest. Idempotent."""
        if self._shutdown:
            return
        self._shutdown = True
        deadline = time.monotonic() + max(0, timeout_millis) / 1000
        self._drain(deadline)
        with self._changed:
            abandoned = len(self._queue) + self._in_flight
            self._queue.clear()
        if abandoned:
            logger.warning("embedded worker shut down with %d request(s) not evaluated", abandoned)
            self._count_dropped(semconv.DROP_SHUTDOWN, abandoned)
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(self._stop_serving)
        self._thread.join(max(deadline - time.monotonic(), 0.0))
        stop_sinks = getattr(self.core, "shutdown", None)  # its backend sinks deliver what they hold, briefly
        if callable(stop_sinks):
            stop_sinks(_millis_until(deadline))

    # --- the worker thread ---------------------------------------------------------------------------------------

    def _run(self) -> None:
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
                while (request := self._pop()) is not None:
                    try:
                        await semaphore.acquire()
                    except asyncio.CancelledError:
                        self._done_with_one()
                        raise
                    task: asyncio.Task[object] = loop.create_task(self._evaluate(request, semaphore))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                if self._shutdown:
                    break
                await self._wakeup.wait()
        except asyncio.CancelledError:
            pass  # shutdown: the deadline passed with requests still waiting
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _pop(self) -> EvaluationRequest | None:
        with self._changed:
            if not self._queue:
                return None
            self._in_flight += 1
            return self._queue.popleft()

    async def _evaluate(self, request: EvaluationRequest, semaphore: asyncio.Semaphore) -> object:
        try:
            return await self.core.evaluate(request)
        finally:
            semaphore.release()
            self._done_with_one()

    def _done_with_one(self) -> None:
        with self._changed:
            self._in_flight -= 1
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


def _queued(weak_self: weakref.ref[EmbeddedInvocationExporter]) -> int:
    exporter = weak_self()
    return exporter.queue_size if exporter is not None else 0


def _millis_until(deadline: float) -> int:
    return max(0, int((deadline - time.monotonic()) * 1000))
