"""Driving aiokafka clients: errors worth retrying, a metadata probe, and stopping a client within a time limit.

Everything otel-eval does with aiokafka beyond its documented API is here, and nowhere else. It was checked against
aiokafka :data:`AIOKAFKA_CHECKED`; ``tests/transport/test_aiokafka.py`` pins each behaviour against the installed
version (run it after an upgrade). Each access degrades instead of failing: a renamed attribute makes a stop slower
or a probe fail (the broker then looks unreachable), never an exception in the caller.

* :func:`probe_broker`: one metadata round trip. The consumer has it publicly (``topics()``); a producer only through
  its ``client`` attribute (``AIOKafkaClient.fetch_all_metadata``).
* :func:`stop_client`: aiokafka has no "stop now" for a client whose broker does not answer (``stop()`` waits for
  it); past the time limit the client's background tasks are cancelled and its connections closed, through the
  private ``_sender._sender_task``, ``_coordinator._*_task``, ``_fetcher._fetch_task``, ``_fetcher._pending_tasks``,
  ``_client._sync_task`` and ``_client._conns``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Final

logger = logging.getLogger(__name__)

AIOKAFKA_CHECKED: Final = "0.14.0"
"""The aiokafka version the private accesses below were checked against."""

_BACKGROUND_TASKS: Final = (
    ("_sender", "_sender_task"),
    ("_coordinator", "_coordination_task"),
    ("_coordinator", "_heartbeat_task"),
    ("_coordinator", "_commit_refresh_task"),
    ("_fetcher", "_fetch_task"),
)
"""(owner, task) attributes of a client: its background tasks that wait for the broker."""


def is_retriable(exc: BaseException) -> bool:
    """Whether a Kafka error means the broker did not answer in time (retriable, timed out, connection lost): the
    operation is worth trying again once the broker is back, and the error counts towards an outage."""
    from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError

    return bool(getattr(exc, "retriable", False)) or isinstance(
        exc, (KafkaTimeoutError, KafkaConnectionError, asyncio.TimeoutError)
    )


async def probe_broker(client: Any, timeout: float) -> None:
    """One metadata request through ``client`` (a started producer or consumer), answered within ``timeout`` s.

    Raises:
        asyncio.TimeoutError: no answer in time.
        Exception: the request failed (aiokafka's error).
    """
    request = asyncio.ensure_future(
        client.topics() if hasattr(client, "topics") else client.client.fetch_all_metadata()
    )
    # Not asyncio.wait_for: before Python 3.12 it returns the request's error, swallowing the caller's cancellation,
    # when the two come in the same turn (a forced stop closes the connections, then cancels the prober).
    try:
        done, _ = await asyncio.wait({request}, timeout=timeout)
    except asyncio.CancelledError:
        request.cancel()
        if request.done() and not request.cancelled():
            request.exception()  # read, so that asyncio does not log it as never retrieved: the cancellation wins
        raise
    if not done:
        request.cancel()
        raise TimeoutError
    request.result()


async def stop_client(client: Any, timeout: float, *, describe: Callable[[BaseException], str] = repr) -> bool:
    """Stops an aiokafka producer, consumer or admin client within ``timeout`` seconds (plus a few ms).

    Returns True when it stopped gracefully (pending sends flushed, the group left); False when it had to be
    closed without: its background tasks cancelled and its connections closed, so nothing is left open. When the
    caller is cancelled meanwhile, the client is closed the same way before the cancellation goes on.
    """
    stopping = asyncio.ensure_future(client.stop() if hasattr(client, "stop") else client.close())
    try:
        done, _ = await asyncio.wait({stopping}, timeout=max(0.0, timeout))
    except asyncio.CancelledError:
        stopping.cancel()
        await close_now(client)
        raise
    if stopping in done:
        if not stopping.cancelled() and stopping.exception() is None:
            return True
        if not stopping.cancelled():
            logger.debug("stopping a Kafka client failed: %s", describe(stopping.exception()))
    else:
        stopping.cancel()
        await asyncio.wait({stopping}, timeout=1.0)
    await close_now(client)
    return False


async def close_now(client: Any) -> None:
    """Cancels ``client``'s background tasks and closes its connections, without a word to the broker."""
    tasks = []
    for owner_name, task_name in _BACKGROUND_TASKS:
        task = getattr(getattr(client, owner_name, None), task_name, None)
        if isinstance(task, asyncio.Task) and not task.done():
            task.cancel()
            tasks.append(task)
    fetcher = getattr(client, "_fetcher", None)
    for task in list(getattr(fetcher, "_pending_tasks", ())):  # fetch requests the fetch task started
        if isinstance(task, asyncio.Task) and not task.done():
            task.cancel()
            tasks.append(task)
    if tasks:
        await asyncio.wait(tasks, timeout=1.0)
    inner = getattr(client, "_client", None) or getattr(client, "client", None)
    if inner is None:
        return
    sync = getattr(inner, "_sync_task", None)
    if isinstance(sync, asyncio.Task) and not sync.done():
        sync.cancel()
    for conn in list(getattr(inner, "_conns", {}).values()):
        with contextlib.suppress(Exception):
            conn.close()
    with contextlib.suppress(Exception):
        inner._conns = {}


__all__ = ["AIOKAFKA_CHECKED", "close_now", "is_retriable", "probe_broker", "stop_client"]
