"""Daemon threads for CPU-bound work: a pool whose callables never hold up the process's exit, a one-off thread,
and a per-thread event loop for running a coroutine to completion."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextvars
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def in_daemon_thread(fn: Callable[[], T], *, name: str) -> concurrent.futures.Future[T]:
    """Starts ``fn()`` on a new daemon thread (in a copy of the current context); its future holds the outcome.

    Daemon, so that a step that never ends cannot keep the process from exiting (executor threads are joined at exit).
    """
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    context = contextvars.copy_context()

    def target() -> None:
        if future.set_running_or_notify_cancel():
            _settle(future, context, fn)

    threading.Thread(target=target, name=name, daemon=True).start()
    return future


class DaemonThreadPool:
    """``workers`` daemon threads running submitted callables in order, each in a copy of the submitter's context.

    Unlike ``concurrent.futures.ThreadPoolExecutor`` (whose threads are joined at exit), a callable that never ends
    cannot keep the process from exiting; it only occupies its thread. Each thread keeps one event loop for
    :func:`run_coroutine`.
    """

    def __init__(self, workers: int, *, name: str) -> None:
        self._queue: queue.SimpleQueue[tuple[concurrent.futures.Future[Any], contextvars.Context, Callable[[], Any]]]
        self._queue = queue.SimpleQueue()
        self._workers = workers
        self._name = name
        self._started = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Queues ``fn()``; its future holds the outcome."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._queue.put((future, contextvars.copy_context(), fn))
        with self._lock:
            if self._started < self._workers:
                self._started += 1
                threading.Thread(target=self._work, name=f"{self._name}-{self._started}", daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            future, context, fn = self._queue.get()
            if future.set_running_or_notify_cancel():
                _settle(future, context, fn)


_thread_loops = threading.local()


def run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    """Runs ``coroutine`` to completion on this thread's own event loop (made once per thread, kept)."""
    loop: asyncio.AbstractEventLoop | None = getattr(_thread_loops, "loop", None)
    if loop is None:
        loop = _thread_loops.loop = asyncio.new_event_loop()
        # Closed at exit while the interpreter is whole: a loop left to its finaliser at interpreter teardown finds
        # its self-pipe already closed and prints a traceback into the user's output.
        atexit.register(_close_idle, loop)
    return loop.run_until_complete(coroutine)


def _close_idle(loop: asyncio.AbstractEventLoop) -> None:
    if not loop.is_running() and not loop.is_closed():
        loop.close()


def _settle(future: concurrent.futures.Future[T], context: contextvars.Context, fn: Callable[[], T]) -> None:
    try:
        result = context.run(fn)
    except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
        future.set_exception(exc)
    else:
        future.set_result(result)
