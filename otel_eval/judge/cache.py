"""An LRU cache of judge replies keyed by the full request, joining identical requests already in flight."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

ValueT = TypeVar("ValueT")


def request_key(model: str, request: dict[str, Any], sample: int) -> str:
    """SHA-256 of the canonical JSON of model, request (contents + config) and sample index.

    The sample index is part of the key on purpose: with ``num_samples > 1`` the samples of one item are distinct
    calls (a vote over one cached answer would be pointless), while a repeated identical item reuses every sample.
    """
    canonical = json.dumps(
        {"model": model.removeprefix("models/"), "request": request, "sample": sample},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ReplyCache(Generic[ValueT]):
    """Bounded LRU of successful replies. Failures are never cached.

    Thread-safe for the LRU itself; in-flight joining works per event loop (futures are loop-bound).
    """

    def __init__(self, max_entries: int) -> None:
        self._max_entries = max_entries
        self._entries: OrderedDict[str, ValueT] = OrderedDict()
        self._in_flight: dict[tuple[int, str], asyncio.Future[ValueT]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def get(self, key: str) -> ValueT | None:
        """The cached value (marked most recently used), or None."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: str, value: ValueT) -> None:
        """Stores ``value``, evicting the least recently used entry beyond the bound."""
        if self._max_entries <= 0:
            return
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    async def get_or_compute(self, key: str, compute: Callable[[], Awaitable[ValueT]]) -> tuple[ValueT, bool]:
        """The cached value (``hit=True``), else the result of ``compute()``; concurrent callers share one compute.

        Returns:
            ``(value, hit)``; ``hit`` is True when no new computation was started for this caller.
        """
        cached = self.get(key)
        if cached is not None:
            return cached, True
        if self._max_entries <= 0:
            return await compute(), False
        loop = asyncio.get_running_loop()
        slot = (id(loop), key)
        pending = self._in_flight.get(slot)
        if pending is not None:
            return await asyncio.shield(pending), True
        future: asyncio.Future[ValueT] = loop.create_future()
        self._in_flight[slot] = future
        try:
            value = await compute()
        except BaseException as exc:
            if not future.done():
                if isinstance(exc, asyncio.CancelledError):
                    future.cancel()
                else:
                    future.set_exception(exc)
                    future.exception()  # mark retrieved: joiners re-raise it, nobody else must
            raise
        else:
            self.put(key, value)
            future.set_result(value)
            return value, False
        finally:
            self._in_flight.pop(slot, None)
