"""Running CPU-bound steps (decoding, rebuilding, deterministic metrics) off the caller's thread, with a deadline.

Spans are untrusted: one record can take arbitrarily long to decode or rebuild. The event loop of a worker (or the
processor's background thread) must not run such a step itself, or its consumer heartbeats (or the traces behind it)
stop. :class:`DeadlineExecutor` runs each step on a daemon thread and gives up waiting after ``timeout`` seconds.
Steps reuse one thread while it is idle (starting a thread per step cost as much CPU as a small trace's rebuild);
a step that arrives while another runs gets a thread of its own.

A Python thread cannot be killed. A step past its deadline keeps running on its thread until it ends by itself
(every walk over a span tree is linear, so it does end); the caller abandons that thread and goes on with the next
step on a new one, so the steps behind it are not delayed. Abandoned threads still share the GIL (the caller slows
down; it is not stopped), and being daemons they never hold up the process's exit. At most ``max_abandoned`` of them may be alive at once: past that the executor reports itself
:attr:`~DeadlineExecutor.exhausted`, and the worker stops so that its supervisor restarts the process (the records
already given up on were dead-lettered and committed, so the restart does not meet them again).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from otel_eval.errors import OtelEvalError

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_MAX_ABANDONED = 4


class RecordTimeoutError(OtelEvalError):
    """A record's CPU-bound step did not finish within its deadline (the record is dead-lettered or dropped)."""


class DeadlineExecutor:
    """Runs CPU-bound steps one at a time, each on its own daemon thread with a deadline.

    Args:
        timeout: Seconds a step may take.
        name: Thread name.
        max_abandoned: Abandoned threads that may still be running before :attr:`exhausted` turns true.
    """

    def __init__(self, timeout: float, *, name: str, max_abandoned: int = DEFAULT_MAX_ABANDONED) -> None:
        self.timeout = timeout
        self._name = name
        self._max_abandoned = max_abandoned
        self._lock = threading.Lock()
        self._abandoned: list[concurrent.futures.Future[Any]] = []
        self._idle: _StepThread | None = None
        self.timeouts = 0

    @property
    def abandoned_running(self) -> int:
        """Abandoned steps still running on their threads."""
        with self._lock:
            self._abandoned = [f for f in self._abandoned if not f.done()]
            return len(self._abandoned)

    @property
    def exhausted(self) -> bool:
        """Whether more than ``max_abandoned`` abandoned steps are still running (the process should restart)."""
        return self.abandoned_running > self._max_abandoned

    def _finished(self, future: concurrent.futures.Future[Any]) -> None:
        """An abandoned step ended: forgotten, with what it returned."""
        with self._lock, contextlib.suppress(ValueError):  # already pruned by :attr:`abandoned_running`
            self._abandoned.remove(future)

    def run(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` on its own thread, waiting at most :attr:`timeout` seconds. For synchronous callers.

        Raises:
            RecordTimeoutError: ``fn`` did not finish in time (its thread is abandoned).
            Exception: whatever ``fn`` raised.
        """
        future = self._start(fn)
        try:
            return future.result(timeout=self.timeout)
        except concurrent.futures.TimeoutError:
            raise self._abandon(future, what) from None

    async def run_async(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` on its own thread, awaited at most :attr:`timeout` seconds; the event loop keeps running.

        Raises:
            RecordTimeoutError: ``fn`` did not finish in time (its thread is abandoned).
            Exception: whatever ``fn`` raised.
        """
        future = self._start(fn)
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), timeout=self.timeout)
        except TimeoutError:
            raise self._abandon(future, what) from None

    async def map_async(self, steps: Sequence[tuple[str, Callable[[], T]]]) -> list[T | Exception]:
        """Runs ``steps`` (``(what, fn)`` pairs) one after another in one hand-off, each within :attr:`timeout`
        seconds; the event loop keeps running. Returns each step's value, or the exception it raised.

        One thread runs the steps in order (one wake-up for the lot instead of one per step). When one of them
        outlasts its deadline, its thread is abandoned as :meth:`run_async` abandons it (the step's outcome is a
        :class:`RecordTimeoutError`) and the steps after it go on on a new thread.
        """
        outcomes: list[T | Exception] = []
        while len(outcomes) < len(steps):
            rest = steps[len(outcomes) :]
            progress = _Progress(len(rest))
            future = self._start(partial(progress.run, [fn for _, fn in rest]))
            waiting = asyncio.wrap_future(future)
            while not waiting.done():
                await asyncio.wait({waiting}, timeout=max(0.0, progress.deadline(self.timeout) - time.monotonic()))
                late = None if waiting.done() else progress.abandon_if_late(self.timeout)
                if late is not None:
                    done, index = late
                    outcomes.extend(done)
                    outcomes.append(self._abandon(future, rest[index][0]))
                    break
            else:
                outcomes.extend(waiting.result())
        return outcomes

    def _start(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """``fn()`` on the idle step thread (started if there is none, or it died with a fork), else on a new one."""
        with self._lock:
            thread, self._idle = self._idle, None
        if thread is None or not thread.alive:
            thread = _StepThread(self._name, self._release)
        return thread.submit(fn)

    def _release(self, thread: _StepThread) -> None:
        """``thread``'s step ended (its outcome is not published yet, so that the caller's next step finds the
        thread idle): it becomes the idle thread, or retires when there already is one."""
        with self._lock:
            if self._idle is None and thread.alive:
                self._idle = thread
                return
        thread.retire()

    def _abandon(self, future: concurrent.futures.Future[Any], what: str) -> RecordTimeoutError:
        with self._lock:
            self._abandoned.append(future)
            self.timeouts += 1
        future.add_done_callback(self._finished)  # else it is kept with its outcome until someone asks how many run
        logger.error("%s took longer than %g s: given up (its thread is left to finish on its own)", what, self.timeout)
        return RecordTimeoutError(f"{what} took longer than {self.timeout:g} s")


class _Progress:
    """The steps of one :meth:`DeadlineExecutor.map_async` hand-off: which one runs since when, and the outcomes of
    those done (shared by the step thread and the waiting caller)."""

    def __init__(self, count: int) -> None:
        self._lock = threading.Lock()
        self._count = count
        self._started = time.monotonic()
        self._outcomes: list[Any] = []
        self._abandoned = False

    def run(self, fns: Sequence[Callable[[], Any]]) -> list[Any]:
        """On the step thread: each step in turn, until all are done or the caller gave up on the current one."""
        for fn in fns:
            try:
                outcome: Any = fn()
            except Exception as exc:  # noqa: BLE001 - the step's outcome, handed to the caller
                outcome = exc
            with self._lock:
                if self._abandoned:
                    break
                self._outcomes.append(outcome)
                self._started = time.monotonic()
        return self._outcomes

    def deadline(self, timeout: float) -> float:
        """When the current step's time is up."""
        with self._lock:
            return self._started + timeout

    def abandon_if_late(self, timeout: float) -> tuple[list[Any], int] | None:
        """The outcomes so far and the index of the current step, when it is past ``timeout`` (the thread then
        stops after it); None when it is not."""
        with self._lock:
            if len(self._outcomes) >= self._count or time.monotonic() < self._started + timeout:
                return None
            self._abandoned = True
            return list(self._outcomes), len(self._outcomes)


class _StepThread:
    """A daemon thread running submitted steps one after another (each in a copy of its submitter's context)."""

    def __init__(self, name: str, on_idle: Callable[[_StepThread], None]) -> None:
        self._on_idle = on_idle
        self._queue: queue.SimpleQueue[
            tuple[concurrent.futures.Future[Any], contextvars.Context, Callable[[], Any]] | None
        ]
        self._queue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        """False once retired, or in a forked child (where the thread does not exist)."""
        return self._thread.is_alive()

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._queue.put((future, contextvars.copy_context(), fn))
        return future

    def retire(self) -> None:
        """The thread ends after what it was given."""
        self._queue.put(None)

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            future, context, fn = item
            if not future.set_running_or_notify_cancel():
                self._on_idle(self)
                continue
            try:
                result = context.run(fn)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                self._on_idle(self)
                future.set_exception(exc)
            else:
                self._on_idle(self)
                future.set_result(result)
