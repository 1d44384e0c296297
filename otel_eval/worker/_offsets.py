"""Where a worker is in each partition it reads: the next offset to read, and the offset committed (what a failed
batch is re-read from, and where the partition's next owner starts)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class PartitionOffsets:
    """The read position and the committed offset of each partition read (Kafka ``TopicPartition`` keys)."""

    def __init__(self) -> None:
        self.positions: dict[Any, int] = {}
        """The next offset to read, per partition read since it was assigned (or the last rewind)."""
        self._committed: dict[Any, int] = {}

    def fetched(self, batch: dict[Any, list[Any]]) -> None:
        """A batch is fetched: the first offset read from a partition is its committed offset (the point to rewind
        to)."""
        for tp, messages in batch.items():
            if messages:
                self._committed.setdefault(tp, messages[0].offset)

    def read(self, batch: dict[Any, list[Any]]) -> None:
        """A batch is read: each partition's position is past its last message."""
        for tp, messages in batch.items():
            if messages:
                self.positions[tp] = messages[-1].offset + 1

    async def commit(self, consumer: Any, offsets: dict[Any, int]) -> None:
        """Commits the ``offsets`` that moved, of the partitions still read."""
        moved = {tp: o for tp, o in offsets.items() if tp in self.positions and self._committed.get(tp) != o}
        if moved:
            await consumer.commit(moved)
            self._committed.update(moved)

    def rewind(self, consumer: Any, assigned: Iterable[Any]) -> None:
        """Seeks each of the ``assigned`` partitions back to its committed offset (local: no broker round trip)."""
        for tp in assigned:
            self.positions.pop(tp, None)
            committed = self._committed.get(tp)
            if committed is not None:
                consumer.seek(tp, committed)

    def forget(self, revoked: Iterable[Any]) -> None:
        """The ``revoked`` partitions are another worker's now."""
        for tp in revoked:
            self.positions.pop(tp, None)
            self._committed.pop(tp, None)
