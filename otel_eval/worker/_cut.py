"""Cutting a batch short: when the worker must stop, or give its partitions up, before a slow batch is evaluated.

The invocations still being scored are cancelled and the batch settles as usual with what finished: its results
are published and each partition commits up to its first record not finished (dead-lettered and known records count
as finished). The next owner re-reads only the rest, so what this worker emitted is not emitted again, except the
records of the invocations cut mid-way (their metrics scored before the cut).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any, TypeVar

from otel_eval.worker.collector_path import AssembledTrace

T = TypeVar("T")

Start = tuple[str, int, int]
"""(topic, partition, offset) of a record a piece of work was read from (the first, for a Collector-path trace)."""


class BatchCut:
    """Whether the batch under way is to be cut short, and the offsets its unfinished work holds the commit at."""

    def __init__(self) -> None:
        self._requested = asyncio.Event()
        self._held: dict[tuple[str, int], int] = {}

    @property
    def requested(self) -> bool:
        """Whether the batch under way is being cut short."""
        return self._requested.is_set()

    @property
    def left_uncommitted(self) -> bool:
        """Whether the last batch prepared was cut with work not finished (its records are left to the group)."""
        return bool(self._held)

    def request(self) -> None:
        """Cuts the batch under way short (nothing happens between batches)."""
        self._requested.set()

    def reset(self) -> None:
        """A new batch starts: not cut, nothing held."""
        self._requested.clear()
        self._held = {}

    def unfinished(self, starts: Iterable[Start]) -> None:
        """Work read from ``starts`` was not finished: the commit stops before each."""
        for topic, partition, offset in starts:
            key = (topic, partition)
            self._held[key] = min(offset, self._held.get(key, offset))

    def forget(self, revoked: Iterable[Any]) -> None:
        """The ``revoked`` partitions are another worker's: it re-reads what was not finished there."""
        for tp in revoked:
            self._held.pop((tp.topic, tp.partition), None)

    def committable(self, tp: Any, offset: int) -> int:
        """``offset`` on ``tp`` (a Kafka ``TopicPartition``), held back at its first record not finished."""
        return min(offset, self._held.get((tp.topic, tp.partition), offset))

    async def finish(self, work: Sequence[tuple[Sequence[Start], Awaitable[T]]]) -> list[T | None]:
        """Each piece of ``work`` (where it was read from, its scoring) run until all are done, or the batch is cut:
        then the ones not done are cancelled, their outcome None, and the commit is held at where they were read."""
        tasks = [asyncio.ensure_future(scoring) for _, scoring in work]
        if not tasks:
            return []
        everything = asyncio.gather(*tasks, return_exceptions=True)
        cut = asyncio.ensure_future(self._requested.wait())
        first: list[asyncio.Future[Any]] = [everything, cut]
        try:
            await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cut.cancel()
            if not everything.done():
                for task in tasks:
                    task.cancel()
                await asyncio.wait([everything])
        outcomes: list[T | None] = []
        for (starts, _), task in zip(work, tasks, strict=True):
            if task.cancelled():
                self.unfinished(starts)
                outcomes.append(None)
            else:
                outcomes.append(task.result())  # what failed fails the batch, as before
        return outcomes


def trace_starts(trace: AssembledTrace, spans_topic: str, logs_topic: str) -> tuple[Start, ...]:
    """Where a Collector-path trace was first read from, per partition of the spans and the logs topic."""
    return (
        *((spans_topic, partition, offset) for partition, offset in trace.first_offsets.items()),
        *((logs_topic, partition, offset) for partition, offset in trace.first_log_offsets.items()),
    )
