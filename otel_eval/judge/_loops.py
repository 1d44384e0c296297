"""What the judge keeps per event loop: its concurrency limit, and each provider's own SDK client.

The SDKs open their connections (google-genai's aiohttp session, the httpx pools of ``openai`` and ``anthropic``) on
the event loop that makes the call, and they can only be closed there. So each loop gets clients of its own, closed
when the loop shuts down its asynchronous generators (``asyncio.run``, ``asyncio.Runner`` and the embedded engine do
before closing the loop): whoever owns a loop closes the judge's connections on it without knowing about the judge.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

ClientT = TypeVar("ClientT")


@dataclass
class LoopState:
    """One event loop's share of the judge: its concurrency limit and in-flight counts."""

    semaphore: asyncio.Semaphore
    in_flight: int = 0
    max_in_flight: int = 0


class PerLoop:
    """The judge's :class:`LoopState` of each event loop.

    Args:
        max_concurrency: Judge calls in flight at once on one loop.
    """

    def __init__(self, max_concurrency: int) -> None:
        self._max_concurrency = max_concurrency
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopState] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    @property
    def max_in_flight(self) -> int:
        """The most calls seen in flight at once on any loop."""
        with self._lock:
            return max((s.max_in_flight for s in self._states.values()), default=0)

    def state(self) -> LoopState:
        """The running loop's state (made on its first use)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            state = self._states.get(loop)
            if state is None:
                state = self._states[loop] = LoopState(asyncio.Semaphore(self._max_concurrency))
            return state


@dataclass
class _Held(Generic[ClientT]):
    client: ClientT
    closer: AsyncGenerator[None, None]


class PerLoopClient(Generic[ClientT]):
    """One SDK client per event loop, closed when its loop shuts down (or by :meth:`aclose`).

    Args:
        new_client: Makes a client (called once per loop that calls the provider).
        close: Closes a client's connections on the running loop.
    """

    def __init__(self, new_client: Callable[[], ClientT], close: Callable[[ClientT], Awaitable[None]]) -> None:
        self._new_client = new_client
        self._close = close
        self._held: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Held[ClientT]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    async def client(self) -> ClientT:
        """The running loop's own client."""
        loop = asyncio.get_running_loop()
        with self._lock:
            held = self._held.get(loop)
        if held is not None:
            return held.client
        client = self._new_client()
        closer = self._close_at_loop_shutdown(client)
        await anext(closer)  # from here the loop's shutdown_asyncgens() closes it
        with self._lock:
            self._held[loop] = _Held(client, closer)
        return client

    async def aclose(self) -> None:
        """Closes the running loop's client now."""
        with self._lock:
            held = self._held.pop(asyncio.get_running_loop(), None)
        if held is not None:
            await held.closer.aclose()

    async def _close_at_loop_shutdown(self, client: ClientT) -> AsyncGenerator[None, None]:
        """Suspended at its ``yield`` until closed: by the loop's ``shutdown_asyncgens()``, or :meth:`aclose`."""
        try:
            yield
        finally:
            await best_effort(self._close(client))


async def best_effort(closing: Awaitable[None]) -> None:
    """Awaits ``closing``; a failure is logged at DEBUG (closing is best effort)."""
    try:
        await closing
    except Exception:
        logger.debug("closing a judge client failed", exc_info=True)
