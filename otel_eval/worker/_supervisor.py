"""``Supervisor``: the worker's tasks, none of which may die unnoticed: one that ends with an error stops the worker
with that error (the worker's ``fail``), as a task of an ``asyncio.TaskGroup`` would, but without cancelling the others
first, so that the worker still drains and shuts down in order."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

logger = logging.getLogger(__name__)


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
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
