"""``PollKeeper``: keeps the worker in its consumer group while a batch runs for longer than the max poll interval.

aiokafka leaves the group when no fetch (``getmany``) has run for ``max_poll_interval_ms``: its heartbeat task
watches the time since the last fetch ended. A batch waiting on a slow judge can take minutes; without polling, the
worker would leave mid-batch, its partitions would be rebalanced and the batch evaluated again. So while a batch
runs, the keeper pauses the assigned partitions and calls ``getmany(timeout_ms=0)`` every so often: paused
partitions give no records, and the call resets the timer. Records it gets all the same (partitions newly assigned by
a rebalance during the batch are not paused) are given back: each partition is sought to the first of them. The
partitions paused are resumed when the batch ends.

A ``getmany`` under way is never cancelled (aiokafka would count a fetch in progress forever, and so never leave
the group even when the worker is stuck): one still waiting when the batch ends (for a rebalance to finish) is waited
for, shielded (a shutdown cancelling the wait leaves it to finish on its own), and gives back what it got.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, Final

logger = logging.getLogger(__name__)

_LONGEST_S: Final = 1.0
"""The longest the keeper waits between two polls (a quarter of the max poll interval when that is shorter)."""


class PollKeeper:
    """Polls the group consumer while a batch runs (see the module's docstring).

    Args:
        consumer: the group consumer (an ``AIOKafkaConsumer``).
        max_poll_interval_ms: the consumer's ``max_poll_interval_ms``.
    """

    def __init__(self, consumer: Any, max_poll_interval_ms: int) -> None:
        self._consumer = consumer
        self._every = min(_LONGEST_S, max_poll_interval_ms / 4000)
        self._error: Exception | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def take_error(self) -> Exception | None:
        """What a poll of the keeper raised (the first, once), for the main loop to handle as a failed fetch."""
        error, self._error = self._error, None
        return error

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Keeps polling, with the assigned partitions paused, until the block ends; then resumes them."""
        consumer = self._consumer
        paused = set(consumer.assignment()) - set(consumer.paused())
        consumer.pause(*paused)
        stop = asyncio.Event()
        task = asyncio.create_task(self._keep(stop), name="otel-eval-worker-poll-keeper")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            yield
        finally:
            stop.set()
            # A poll under way (one waits for a rebalance to finish) ends before the main loop polls again: two
            # fetches at once could both get records, and the keeper's seek would give the loop some twice.
            await asyncio.shield(task)
            assigned = consumer.assignment()
            consumer.resume(*(tp for tp in paused if tp in assigned))

    async def _keep(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._every)
            if stop.is_set():
                return
            try:
                got = await self._consumer.getmany(timeout_ms=0)
            except Exception as exc:  # noqa: BLE001 - handed to the main loop, as its own fetch's failure would be
                logger.debug("poll during a batch failed: %r", exc)
                if self._error is None:
                    self._error = exc
                return
            for tp, records in got.items():
                if records:
                    self._consumer.seek(tp, records[0].offset)
