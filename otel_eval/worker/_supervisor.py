"""``Supervisor``: the worker's tasks, none of which may die unnoticed: one that ends with an error stops the worker
with that error (the worker's ``fail``), as a task of an ``asyncio.TaskGroup`` would, but without cancelling the others
first, so that the worker still drains and shuts down in order."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Final

logger = logging.getLogger(__name__)

_CANCEL_AGAIN_S: Final = 0.1


class Supervisor:
    """The worker's tasks: one that ends with an error stops the worker with it (``on_error``)."""

    def __init__(self, on_error: Callable[[BaseException], None]) -> None:
        self._on_error = on_error
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, coroutine: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        task = asyncio.create_task(coroutine, name=name)
        task.add_done_callback(self._ended)
        self._tasks.append(task)
        return task

    def _ended(self, task: asyncio.Task[None]) -> None:
        error = None if task.cancelled() else task.exception()
        if error is not None:  # the worker reports it once it has stopped (serve raises it)
            logger.debug("task %s failed", task.get_name(), exc_info=error)
            self._on_error(error)

    async def stop(self) -> None:
        """Cancels the tasks still running and waits for them."""
        await cancel_and_wait(*self._tasks)


async def cancel_and_wait(*tasks: asyncio.Task[None]) -> None:
    """Cancels ``tasks`` and waits until each has ended, cancelling again every so often: code a task awaits may
    swallow one cancellation (``asyncio.wait_for`` before Python 3.12 does when its call fails in the same turn)."""
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=_CANCEL_AGAIN_S)
