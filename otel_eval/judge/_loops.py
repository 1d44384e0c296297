"""What the judge keeps per event loop: its concurrency limit and its own google-genai client.

google-genai opens its connections (an aiohttp session) on the event loop that makes the call, and they can only be
closed there. So each loop gets a client of its own, closed when the loop shuts down its asynchronous generators
(``asyncio.run``, ``asyncio.Runner`` and the embedded engine do before closing the loop): whoever owns a loop closes
the judge's connections on it without knowing about the judge.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass

from google import genai

logger = logging.getLogger(__name__)


@dataclass
class LoopState:
    """One event loop's share of the judge: its concurrency limit and in-flight counts."""

    semaphore: asyncio.Semaphore
    in_flight: int = 0
    max_in_flight: int = 0
    client: genai.Client | None = None
    closer: AsyncGenerator[None, None] | None = None


class PerLoop:
    """The judge's :class:`LoopState` of each event loop, and each loop's google-genai client.

    Args:
        max_concurrency: Judge calls in flight at once on one loop.
        new_client: Makes a google-genai client (called once per loop that calls the judge).
    """

    def __init__(self, max_concurrency: int, new_client: Callable[[], genai.Client]) -> None:
        self._max_concurrency = max_concurrency
        self._new_client = new_client
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

    async def client(self) -> genai.Client:
        """The running loop's own client, closed when the loop shuts down (or by :meth:`aclose`)."""
        state = self.state()
        if state.client is None:
            state.client = self._new_client()
            state.closer = _close_at_loop_shutdown(state.client)
            await anext(state.closer)  # from here the loop's shutdown_asyncgens() closes it
        return state.client

    async def aclose(self) -> None:
        """Closes the running loop's client now."""
        state = self.state()
        closer, state.client, state.closer = state.closer, None, None
        if closer is not None:
            await closer.aclose()


async def _close_at_loop_shutdown(client: genai.Client) -> AsyncGenerator[None, None]:
    """Suspended at its ``yield`` until closed: by the loop's ``shutdown_asyncgens()``, or :meth:`PerLoop.aclose`."""
    try:
        yield
    finally:
        await close_client(client)


async def close_client(client: genai.Client) -> None:
    """Closes ``client``'s connections on the running loop; a failure is logged at DEBUG (closing is best effort)."""
    try:
        await client.aio.aclose()
    except Exception:
        logger.debug("closing the judge client failed", exc_info=True)
