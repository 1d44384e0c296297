"""The results topic: publishing each :class:`EvaluationRecord`, and remembering what was already emitted.

Guarantee (documented for users of the worker): delivery is at-least-once, and a redelivered request is not
evaluated or emitted again when this worker group already emitted its results, as long as

* the results were published to the results topic before the crash (they are published, with ``acks=all``, before
  the batch's offsets are committed), and are among the last ``worker_dedup_readback`` results of the results
  partition that corresponds to the request's partition (read back whenever partitions are assigned), or
* the same worker saw them, within its last ``worker_dedup_cache_size`` results.

A worker killed after its telemetry was exported but before the results were published re-emits that batch on
redelivery: telemetry may then contain a duplicate, never a gap. Consumers of the results topic de-duplicate
exactly by ``result_id`` (deterministic from trace id, span id, metric, metric version and judge model) and, where
the worker is configured with tenants, by the ``otel_eval.tenant`` header (absent for the default tenant): two tenants'
results on the same ids are two results.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import ValidationError

from otel_eval.model.messages import EvaluationRecord
from otel_eval.model.utf8_json import json_bytes
from otel_eval.worker._tenancy import of_worker_record, worker_headers

logger = logging.getLogger(__name__)

_READBACK_IDLE_MS = 300


def invocation_key(trace_id: str, span_id: str, tenant: str = "") -> str:
    """The key of one evaluated invocation of ``tenant`` in the ledger."""
    return f"{tenant}\x00{trace_id}/{span_id}" if tenant else f"{trace_id}/{span_id}"


def _of(tenant: str, key: str) -> str:
    """``key`` of ``tenant`` (the default tenant's keys are the bare ones)."""
    return f"{tenant}\x00{key}" if tenant else key


class ResultLedger:
    """A bounded LRU of emitted result ids, of evaluated invocations and of evaluated traces, per tenant (another
    tenant's results with the same trace and span ids never make one's own look already emitted).

    Args:
        capacity: entries kept per kind; 0 turns the ledger off (nothing is ever skipped).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._results: OrderedDict[str, None] = OrderedDict()
        self._invocations: OrderedDict[str, None] = OrderedDict()
        self._traces: OrderedDict[str, None] = OrderedDict()
        self._session_turns: OrderedDict[str, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._results)

    def _remember(self, lru: OrderedDict[str, None], key: str) -> None:
        if self.capacity <= 0:
            return
        if key in lru:
            lru.move_to_end(key)
            return
        lru[key] = None
        while len(lru) > self.capacity:
            lru.popitem(last=False)

    def add(self, records: Iterable[EvaluationRecord], *, tenant: str = "", invocations: bool = True) -> None:
        """Remembers ``records`` (of ``tenant``) as emitted (and their invocations and traces as evaluated; a session
        window's records, their turns as judged in a window).

        ``invocations`` False: the records' invocations and traces are not remembered here, for a caller that
        remembers each of them once with :meth:`add_invocation` (a session window's turns still are)."""
        remember, results = self._remember, self._results
        last = None
        for record in records:
            remember(results, _of(tenant, record.result_id))
            window = record.session_window is not None
            if not (invocations or window):
                continue
            invocation = (record.trace_id, record.span_id, window)
            if invocation == last:  # an invocation's records come together: remembered once
                continue
            last = invocation
            key = invocation_key(record.trace_id, record.span_id, tenant)
            if window:
                remember(self._session_turns, key)
                continue
            remember(self._invocations, key)
            remember(self._traces, _of(tenant, record.trace_id))

    def add_invocation(self, trace_id: str, span_id: str, tenant: str = "") -> None:
        """Remembers an invocation as evaluated even though it produced no record (no metric applied)."""
        self._remember(self._invocations, invocation_key(trace_id, span_id, tenant))
        self._remember(self._traces, _of(tenant, trace_id))

    def has_result(self, result_id: str, tenant: str = "") -> bool:
        """Whether ``result_id`` was emitted (for ``tenant``)."""
        return _of(tenant, result_id) in self._results

    def has_invocation(self, trace_id: str, span_id: str, tenant: str = "") -> bool:
        """Whether the invocation (root span ``span_id`` of ``trace_id``, of ``tenant``) was evaluated."""
        return invocation_key(trace_id, span_id, tenant) in self._invocations

    def has_invocation_key(self, key: str) -> bool:
        """:meth:`has_invocation` of the invocation whose :func:`invocation_key` is ``key``."""
        return key in self._invocations

    def has_session_turn(self, trace_id: str, span_id: str, tenant: str = "") -> bool:
        """Whether the invocation was judged as a turn of a session window."""
        return invocation_key(trace_id, span_id, tenant) in self._session_turns

    def has_trace(self, trace_id: str, tenant: str = "") -> bool:
        """Whether any invocation of ``trace_id`` (of ``tenant``) was evaluated."""
        return _of(tenant, trace_id) in self._traces


def parse_record(value: bytes | None) -> EvaluationRecord | None:
    """A record from the results topic, or None for anything that is not one (logged at debug level)."""
    if not value:
        return None
    try:
        return EvaluationRecord.model_validate_json(value)
    except ValidationError as exc:
        logger.debug("results topic: skipping a message that is not an EvaluationRecord: %s", exc.errors()[:1])
        return None


def _json(record: EvaluationRecord) -> bytes:
    """``record.model_dump_json().encode()``: the same bytes, straight from pydantic's serializer (no str between)."""
    return json_bytes(record)


class ResultsPublisher:
    """Publishes records to the results topic, keyed by trace id.

    A record goes to the results partition matching the partition its request came from (modulo the number of
    results partitions), so a worker that takes over a request partition knows which results partition to read
    back (:meth:`read_back`).

    Args:
        producer: a started ``AIOKafkaProducer``.
        topic: the results topic.
    """

    def __init__(self, producer: Any, topic: str) -> None:
        self._producer = producer
        self.topic = topic

    async def partition_count(self) -> int:
        """Partitions of the results topic (the topic is created by the broker on first use when allowed)."""
        partitions = await self._producer.partitions_for(self.topic)
        return max(1, len(partitions))

    async def publish(
        self, records: Sequence[tuple[int, EvaluationRecord]], tenants: Sequence[str] | None = None
    ) -> int:
        """Sends ``(source partition, record)`` pairs and waits for every acknowledgement. Returns the count.

        ``tenants`` (one per record): a record of a tenant other than the default one carries it in the
        :data:`~otel_eval.worker._tenancy.WORKER_TENANT_HEADER` header (read back by :meth:`read_back`).

        The records are packed into one producer batch per results partition (aiokafka's ``create_batch`` and
        ``send_batch``; a full batch is sent and a new one started), so a worker batch of results travels in a few
        produce requests, without a future per record.

        Raises:
            aiokafka.errors.KafkaError: a send finally failed (the batch is then not committed, so it is retried).
        """
        if not records:
            return 0
        count = await self.partition_count()
        producer, topic = self._producer, self.topic
        open_batches: dict[int, Any] = {}
        sent = []
        for index, (source_partition, record) in enumerate(records):
            partition = source_partition % count
            key, value = record.trace_id.encode(), _json(record)
            headers = worker_headers(tenants[index]) if tenants is not None else []
            batch = open_batches.get(partition)
            if batch is None:
                batch = open_batches[partition] = producer.create_batch()
            if batch.append(timestamp=None, key=key, value=value, headers=headers) is None:  # full: send, start anew
                sent.append(await producer.send_batch(batch, topic, partition=partition))
                batch = open_batches[partition] = producer.create_batch()
                batch.append(timestamp=None, key=key, value=value, headers=headers)  # an empty batch takes any one
        for partition, batch in open_batches.items():
            sent.append(await producer.send_batch(batch, topic, partition=partition))
        await asyncio.gather(*sent)
        return len(records)

    async def read_back(self, consumer: Any, source_partitions: Iterable[int], limit: int, ledger: ResultLedger) -> int:
        """Adds the last ``limit`` results of the results partitions matching ``source_partitions`` to ``ledger``.

        ``consumer`` is a started group-less ``AIOKafkaConsumer``. Reads until the end of each partition: past the
        reported end offset, until a fetch returns nothing (some brokers report the end offset too low).

        Returns:
            The number of records read.
        """
        from aiokafka import TopicPartition

        if limit <= 0:
            return 0
        count = await self.partition_count()
        tps = sorted({TopicPartition(self.topic, p % count) for p in source_partitions})
        if not tps:
            return 0
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        begins = await consumer.beginning_offsets(tps)
        for tp in tps:
            consumer.seek(tp, max(begins.get(tp, 0), ends.get(tp, 0) - limit))
        read = 0
        while True:
            batch = await consumer.getmany(timeout_ms=_READBACK_IDLE_MS, max_records=1000)
            if not batch:
                break
            for records in batch.values():
                for message in records:
                    record = parse_record(message.value)
                    if record is not None:
                        ledger.add([record], tenant=of_worker_record(message))
                        read += 1
        consumer.assign([])
        return read
