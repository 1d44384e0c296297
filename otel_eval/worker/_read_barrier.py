"""Holding a trace that is idle by the clock until the worker has read what was written before it went idle.

The Collector path's idle timeout goes by the worker's clock. A worker behind its partitions (a backlog, or a batch
slower than the timeout because it waits on a judge) would otherwise hand a trace on while its next spans still wait
unread behind other records, and then drop them as ``late``. So once a trace is idle by the clock, the broker is asked
for the end offsets of the partitions it was read from, and the trace is held until the worker's position on each has
reached them: every record written before then has been read and added. A worker that keeps up passes them at its
next fetch.

The partitions are the ones the trace was read from (the Collector's ``partition_traces_by_id`` puts every span and
log record of a trace there). When the broker cannot say, the trace goes by the clock; an end offset reported too low
(some brokers do) only makes the wait shorter. A trace is held at most :data:`PATIENCE` idle timeouts, and
``max_open_traces`` still bounds what is held.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from otel_eval.worker.collector_path import AssembledTrace

logger = logging.getLogger(__name__)

PATIENCE = 10
"""Idle timeouts a trace idle by the clock is held at most, waiting for the worker to read its partitions."""
_ASKS_PER_TIMEOUT = 10
"""The broker is asked for end offsets at most this many times per idle timeout (and at least once a second)."""
_ASK_TIMEOUT_S = 5.0


class ReadBarrier:
    """Holds back traces idle by the clock until the worker has read their partitions to their end as of then.

    Args:
        consumer: the worker's started ``AIOKafkaConsumer``.
        spans_topic: the ``otlp_spans`` topic (a trace's :attr:`~AssembledTrace.first_offsets` are its partitions).
        logs_topic: the ``otlp_logs`` topic when the worker reads it (:attr:`~AssembledTrace.first_log_offsets`).
        idle_timeout: the assembler's idle timeout, in seconds.
        clock: monotonic seconds: the assembler's clock.
    """

    def __init__(
        self,
        consumer: Any,
        *,
        spans_topic: str,
        logs_topic: str | None,
        idle_timeout: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._consumer = consumer
        self._spans_topic = spans_topic
        self._logs_topic = logs_topic
        self._ask_every = min(idle_timeout / _ASKS_PER_TIMEOUT, 1.0)
        self._longest = idle_timeout * (PATIENCE + 1)
        self._clock = clock
        self._next_ask = 0.0
        self._unanswered = False

    async def holds(self, idle: Sequence[AssembledTrace]) -> Callable[[AssembledTrace], bool]:
        """Of ``idle`` (traces idle by the clock), which ones to hold back now: asks the broker for the end offsets of
        the partitions of those that do not have them yet, then compares each with the worker's positions."""
        waiting = [trace for trace in idle if trace.read_to is None]
        if waiting and self._clock() >= self._next_ask:
            await self._ask(waiting)
        positions = await self._positions({tp for trace in idle if trace.read_to for tp in trace.read_to})
        now = self._clock()

        def held(trace: AssembledTrace) -> bool:
            if now - trace.last_seen >= self._longest:
                return False
            if trace.read_to is None:
                return True  # idle since the last ask: asked next time
            return any(tp in positions and positions[tp] < end for tp, end in trace.read_to.items())

        return held

    async def _positions(self, partitions: set[Any]) -> dict[Any, int]:
        """The worker's position on each of ``partitions`` still assigned to it (one revoked meanwhile, left out,
        holds nothing back: its traces are forgotten)."""
        from aiokafka.errors import IllegalStateError

        positions = {}
        for tp in partitions & self._consumer.assignment():
            try:
                positions[tp] = await self._consumer.position(tp)
            except IllegalStateError:  # revoked while this awaited
                continue
        return positions

    async def _ask(self, traces: Sequence[AssembledTrace]) -> None:
        from aiokafka import TopicPartition
        from aiokafka.errors import KafkaError

        partitions_of = {
            id(trace): [TopicPartition(self._spans_topic, p) for p in trace.first_offsets]
            + [TopicPartition(self._logs_topic, p) for p in trace.first_log_offsets if self._logs_topic]
            for trace in traces
        }
        assigned = self._consumer.assignment()
        wanted = sorted({tp for tps in partitions_of.values() for tp in tps if tp in assigned})
        ends: dict[Any, int] = {}
        try:
            if wanted:
                ends = await asyncio.wait_for(self._consumer.end_offsets(wanted), _ASK_TIMEOUT_S)
        except (TimeoutError, KafkaError) as exc:
            if not self._unanswered:
                logger.warning(
                    "the broker did not give the end offsets of %d partition(s) (%s): traces idle by the clock go on "
                    "without waiting for the records behind them (said once until it answers)",
                    len(wanted),
                    type(exc).__name__,
                )
            self._unanswered = True
        else:
            self._unanswered = False
        for trace in traces:
            trace.read_to = {tp: ends[tp] for tp in partitions_of[id(trace)] if tp in ends}
        self._next_ask = self._clock() + self._ask_every
