"""Matching tool runs to function calls in linear time: the first item not yet taken under a key.

Each convention pairs the function calls of the model with the tool spans that ran them (same call id, else same name
and arguments, else same name, in order). Scanning every run for every call is quadratic on a trace with thousands of
tool calls; :class:`FirstUnused` keeps one queue per key and skips taken items lazily, so all lookups together cost
O(items + lookups).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")


class FirstUnused(Generic[T]):
    """``items`` in order, each taken at most once, looked up by any of the keys ``keys(item)`` gives it."""

    def __init__(self, items: Sequence[T], keys: Callable[[T], Iterable[Hashable]]) -> None:
        self.items = list(items)
        self._taken = [False] * len(self.items)
        self._index = {id(item): index for index, item in enumerate(self.items)}
        self._queues: dict[Hashable, deque[int]] = {}
        self.add_keys(keys)

    def add_keys(self, keys: Callable[[T], Iterable[Hashable]]) -> None:
        """Indexes every item under more keys (items already taken too: they are skipped on lookup). Keys that are
        costly to make, and looked up only sometimes, can be added on the first lookup that needs them."""
        for index, item in enumerate(self.items):
            for key in keys(item):
                self._queues.setdefault(key, deque()).append(index)

    def first(self, key: Hashable, expired: Callable[[T], bool] | None = None) -> T | None:
        """The first item under ``key`` not taken yet, or None.

        ``expired`` marks items that can never match again (e.g. a tool that started before the model call now
        looked at, when calls are looked at in time order): they are dropped from ``key``'s queue for good.
        """
        queue = self._queues.get(key)
        while queue and (self._taken[queue[0]] or (expired is not None and expired(self.items[queue[0]]))):
            queue.popleft()
        return self.items[queue[0]] if queue else None

    def take(self, item: T) -> None:
        """Marks ``item`` (one of ``items``) taken."""
        self._taken[self._index[id(item)]] = True

    def leftovers(self) -> list[T]:
        """The items never taken, in order."""
        return [item for item, taken in zip(self.items, self._taken, strict=True) if not taken]
