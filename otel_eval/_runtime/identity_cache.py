"""A small cache of values worked out from long-lived objects (a tracer's instrumentation scope, a provider's resource,
a planned metric), looked up by the object's identity.

Each entry holds its object, so the object's ``id`` cannot be reused by another while the entry lives; the cache is
emptied when it reaches its bound (a process has a few such objects, so a full cache means they are not long-lived).
Its reads and writes are single dict operations: threads may share it, and an entry lost to a concurrent clear is
worked out again.
"""

from __future__ import annotations

from typing import Generic, TypeVar

ValueT = TypeVar("ValueT")


class IdentityCache(Generic[ValueT]):
    """Values by the identity of the object they were worked out from, at most ``bound`` of them."""

    __slots__ = ("_bound", "_entries", "last")

    def __init__(self, bound: int) -> None:
        self._bound = bound
        self._entries: dict[int, tuple[object, ValueT]] = {}
        self.last: tuple[object, ValueT] | None = None
        """The entry last found or kept (replaced whole): a caller that asks for the same object many times in a
        row (the spans of a batch name the same resource) may compare ``last[0] is source`` before calling."""

    def get(self, source: object) -> ValueT | None:
        """The value kept for ``source`` itself, or None."""
        entry = self._entries.get(id(source))
        if entry is None or entry[0] is not source:
            return None
        self.last = entry
        return entry[1]

    def put(self, source: object, value: ValueT) -> ValueT:
        """Keeps ``value`` for ``source`` (emptying the cache first when it is full) and returns it."""
        if len(self._entries) >= self._bound:
            self._entries.clear()
        self._entries[id(source)] = self.last = (source, value)
        return value

    def clear(self) -> None:
        """Forgets every entry."""
        self._entries.clear()
        self.last = None
