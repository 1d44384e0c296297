"""Handing work from the agent's threads to a background thread: draining what was queued, and what is left of a
deadline in the milliseconds the SDK's ``force_flush``/``shutdown`` take."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")


def drain(queue: deque[T], count: int) -> Iterator[T]:
    """Pops up to ``count`` items from the left of ``queue`` (appended to by other threads meanwhile: a deque's
    ``append`` and ``popleft`` are thread safe), lazily."""
    for _ in range(min(count, len(queue))):
        yield queue.popleft()


def millis_until(deadline: float) -> int:
    """Milliseconds from now to ``deadline`` (a ``time.monotonic()`` value), never below 0."""
    return max(0, int((deadline - time.monotonic()) * 1000))
