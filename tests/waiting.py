"""Waiting in tests: poll a condition with a bound (a bound on waiting for a hang, never a timing assertion)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


def wait_until(condition: Callable[[], object], timeout: float = 10.0) -> bool:
    """Polls ``condition`` every 10 ms until it is truthy or ``timeout`` seconds pass; returns whether it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return bool(condition())


async def wait_until_async(condition: Callable[[], object], timeout: float = 60.0, what: str = "condition") -> None:
    """:func:`wait_until` on a running event loop (polls every 50 ms without blocking it); fails the test with
    ``what`` when ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)
