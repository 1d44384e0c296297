"""Waiting in tests: poll a condition with a bound (a bound on waiting for a hang, never a timing assertion)."""

from __future__ import annotations

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
