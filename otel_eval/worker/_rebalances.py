"""``Rebalances``: what the worker does when its consumer group moves partitions (aiokafka awaits it around each
rebalance).

Before partitions go, the batch step under way (cut short when slow: what finished commits, see
:mod:`otel_eval.worker._cut`) and the last batch's commit are waited for (the new owner starts from the committed
offsets), and what the worker keeps for those partitions is forgotten. When partitions come, the recent
results on them are read back for de-duplication; the main loop processes nothing until that is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from aiokafka.abc import ConsumerRebalanceListener

from otel_eval.worker._batches import BatchPipeline
from otel_eval.worker._metrics import WorkerMetrics
from otel_eval.worker.consumer import WorkerClients
from otel_eval.worker.health import WorkerHealth
from otel_eval.worker.results import ResultLedger
from otel_eval.worker.settings import WorkerSettings

logger = logging.getLogger(__name__)

_CUT_AFTER = 0.75
"""Of the time a revocation waits for the batch under way, the share after which the batch is cut short."""


class Rebalances(ConsumerRebalanceListener):  # type: ignore[misc]  # aiokafka ships no type information
    """The worker's rebalance listener (see the module's docstring).

    Args:
        settings: the worker's settings (its group's session timeout, how many results to read back).
        batches: the worker's batch pipeline (settled and told what to forget before partitions go).
        clients: the worker's Kafka clients (the results publisher and its read-back consumer, once started).
        ledger: where read-back results are remembered.
        metrics: the worker's instruments.
        health: whether the worker is a member of its group (``/readyz``).
    """

    def __init__(
        self,
        settings: WorkerSettings,
        *,
        batches: BatchPipeline,
        clients: WorkerClients,
        ledger: ResultLedger,
        metrics: WorkerMetrics,
        health: WorkerHealth,
    ) -> None:
        self._settings = settings
        self._batches = batches
        self._clients = clients
        self._ledger = ledger
        self._metrics = metrics
        self._health = health
        self.assignment: frozenset[tuple[str, int]] = frozenset()
        """The (topic, partition) pairs assigned to this worker now (empty while rebalancing)."""
        self.batch_idle = asyncio.Event()
        """Cleared by the main loop while a batch step runs: a revocation waits for it."""
        self.batch_idle.set()
        self.readback_done = asyncio.Event()
        """Cleared while recent results are read back: the main loop waits for it before processing."""
        self.readback_done.set()

    async def on_partitions_revoked(self, revoked: set[Any]) -> None:
        """Before a rebalance: the last batch commits before its partitions go, then they are forgotten."""
        self.assignment = frozenset()
        self._health.group_member = False
        timeout = self._settings.kafka_session_timeout_ms / 2000
        try:
            await asyncio.wait_for(self.batch_idle.wait(), timeout=timeout * _CUT_AFTER)
        except TimeoutError:  # cut short: what finished commits, the new owner re-reads only the rest
            self._batches.cut.request()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.batch_idle.wait(), timeout=timeout * (1 - _CUT_AFTER))
        try:  # a new owner starts from the committed offsets
            await asyncio.wait_for(self._batches.settled(), timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - its records are redelivered to their next owner
            logger.warning("the last batch before the rebalance was not committed: %r", exc)
            self._metrics.error(type(exc).__name__)
        self._batches.forget(set(revoked))

    async def on_partitions_assigned(self, assigned: set[Any]) -> None:
        """After a rebalance, before fetching: the recent results on ``assigned`` are read back."""
        logger.info("partitions assigned: %s", sorted((tp.topic, tp.partition) for tp in assigned))
        self.assignment = frozenset((tp.topic, tp.partition) for tp in assigned)
        self._metrics.assigned()
        self._health.group_member = True
        publisher, readback = self._clients.publisher, self._clients.readback
        if publisher is None or readback is None or not assigned:
            return
        self.readback_done.clear()
        try:
            read = await publisher.read_back(
                readback, {tp.partition for tp in assigned}, self._settings.worker_dedup_readback, self._ledger
            )
            logger.info("read back %d recent results for de-duplication", read)
        except Exception as exc:  # noqa: BLE001 - without read-back, redelivered work is evaluated again
            logger.warning("reading back recent results failed: %r", exc)
            self._metrics.error("readback_failed")
        finally:
            self.readback_done.set()
