"""Broker outages, as the exporter and the worker live through them: quiet logs and a state.

* :func:`quiet_client_logs` keeps aiokafka's per-attempt errors of otel-eval's own clients out of the user's log. A
  filter on the ``aiokafka`` loggers takes every record emitted on an event loop that otel-eval registered (the
  exporter's sender loop, the worker's loop) and hands it to that loop's owner, which counts it and re-logs it at
  DEBUG under its own logger. Records of every other aiokafka client in the process pass untouched, and no
  handler, level or other logger of the user's configuration is changed.
* :class:`~otel_eval._runtime.outages.OutageMonitor` (with :data:`BROKER` as the peer's word) turns failed attempts
  into at most three kinds of lines: one WARNING when the broker becomes unreachable (its servers, never
  credentials), a summary WARNING at most once per ``summary_interval`` while it stays so (attempts and the owner's
  counts), and one INFO when it is back.

Stopping a client whatever the broker does is :func:`otel_eval.transport._aiokafka.stop_client`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import Callable
from typing import Final

from otel_eval._runtime.outages import SUMMARY_INTERVAL_S, OutageMonitor

BROKER: Final = "Kafka broker"
"""The peer's word in the outage lines of the Kafka clients."""

ClientLogSink = Callable[[logging.LogRecord], None]

_sinks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ClientLogSink] = weakref.WeakKeyDictionary()
_install_lock = threading.Lock()


class _OwnClientsFilter(logging.Filter):
    """On an ``aiokafka`` logger: hands records emitted on a registered loop to its sink instead of the handlers."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return True
        sink = _sinks.get(loop)
        if sink is None:
            return True
        try:
            sink(record)
        except Exception:  # noqa: BLE001 - a logging filter must never raise into aiokafka
            return False
        return False


_FILTER: Final = _OwnClientsFilter()


def quiet_client_logs(loop: asyncio.AbstractEventLoop, sink: ClientLogSink) -> None:
    """Sends aiokafka's records emitted on ``loop`` to ``sink`` instead of the user's handlers (until ``loop`` is
    garbage-collected or :func:`release_client_logs`). Idempotent; safe from any thread."""
    import aiokafka.admin
    import aiokafka.consumer.fetcher
    import aiokafka.consumer.group_coordinator
    import aiokafka.producer.sender  # noqa: F401

    with _install_lock:
        _sinks[loop] = sink
        for name, candidate in list(logging.root.manager.loggerDict.items()):
            ours = name == "aiokafka" or name.startswith("aiokafka.")
            if ours and isinstance(candidate, logging.Logger) and _FILTER not in candidate.filters:
                candidate.addFilter(_FILTER)


def release_client_logs(loop: asyncio.AbstractEventLoop) -> None:
    """Stops diverting the records of ``loop``."""
    with _install_lock:
        _sinks.pop(loop, None)


__all__ = [
    "BROKER",
    "SUMMARY_INTERVAL_S",
    "OutageMonitor",
    "quiet_client_logs",
    "release_client_logs",
]
