"""A trace idle by the clock is held until the worker has read its partition to where it ended then: on a real broker
(tansu) with aiokafka's own consumer, the assembler's traces, and the assembler's clock driven by the test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaConnectionError
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from otel_eval.worker._read_barrier import PATIENCE, ReadBarrier
from otel_eval.worker.collector_path import AssembledTrace, TraceAssembler, parse_otlp_spans
from tests._kafka import create_topics, producer, random_topic
from tests.worker._collector import agent_spans
from tests.worker.test_collector_path import FakeClock

IDLE = 5.0

pytestmark = [pytest.mark.kafka, pytest.mark.integration]


@pytest.fixture
async def partition(kafka_bootstrap: str) -> AsyncIterator[tuple[AIOKafkaConsumer, TopicPartition]]:
    """A one-partition spans topic holding three messages: a trace's first spans, another trace, the first's root;
    and a consumer assigned to it that has read none."""
    topic = random_topic("spans")
    await create_topics(kafka_bootstrap, [topic])
    first, other = agent_spans(runs=1), agent_spans(runs=1)
    root = next(s for s in first if s.parent is None)
    async with producer(kafka_bootstrap) as prod:
        for spans in ([s for s in first if s is not root], other, [root]):
            await prod.send_and_wait(topic, encode_spans(spans).SerializeToString(), partition=0)
    consumer = AIOKafkaConsumer(bootstrap_servers=kafka_bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    try:
        yield consumer, tp
    finally:
        await consumer.stop()


@dataclass
class _Reader:
    """The worker's side, driven by the test: its consumer on the partition, the assembler, the hold, one clock."""

    consumer: AIOKafkaConsumer
    tp: TopicPartition
    clock: FakeClock = field(default_factory=FakeClock)

    def __post_init__(self) -> None:
        self.assembler = TraceAssembler(IDLE, clock=self.clock)
        self.barrier = ReadBarrier(
            self.consumer, spans_topic=self.tp.topic, logs_topic=None, idle_timeout=IDLE, clock=self.clock
        )

    async def read(self, count: int) -> None:
        """Reads the partition's next ``count`` messages into the assembler."""
        got = 0
        while got < count:
            fetched = await self.consumer.getmany(self.tp, timeout_ms=5000, max_records=count - got)
            for message in fetched.get(self.tp, []):
                where = f"{self.tp.topic}@{message.offset}"
                self.assembler.add(0, message.offset, parse_otlp_spans(message.value, where))
                got += 1

    async def hand_on(self) -> list[AssembledTrace]:
        """The traces handed on now, as the worker asks (``BatchPipeline.idle_traces``)."""
        return self.assembler.ready(held=await self.barrier.holds(self.assembler.idle()))


@pytest.fixture
def reader(partition: tuple[AIOKafkaConsumer, TopicPartition]) -> _Reader:
    return _Reader(*partition)


async def test_a_trace_idle_by_the_clock_waits_until_its_partition_is_read_to_where_it_ended(reader: _Reader) -> None:
    clock, assembler, tp = reader.clock, reader.assembler, reader.tp
    await reader.read(1)  # the first trace's first spans
    clock.now = IDLE
    [first] = assembler.idle()
    assert assembler.ready(held=await reader.barrier.holds([first])) == []  # the root waits unread at offset 2
    assert first.read_to == {tp: 3}
    await reader.read(1)  # the other trace, at offset 1
    clock.now = 2 * IDLE
    assert [t.trace_id for t in await reader.hand_on()] == []
    await reader.read(1)  # the root: the partition is read to where it ended
    assert first.read_to is None  # seen again: when it is idle again, the end offsets of then
    clock.now = 3 * IDLE
    handed_on = await reader.hand_on()
    assert {len(t.spans) for t in handed_on} == {len(agent_spans(runs=1))}  # both traces, each whole
    assert len(handed_on) == 2


async def test_a_trace_is_held_at_most_its_patience(reader: _Reader) -> None:
    await reader.read(1)
    reader.clock.now = IDLE
    assert await reader.hand_on() == []
    reader.clock.now = IDLE * (PATIENCE + 1) - 0.1
    assert await reader.hand_on() == []
    reader.clock.now = IDLE * (PATIENCE + 1)
    [trace] = await reader.hand_on()  # the worker never read on: it goes
    assert len(trace.spans) == len(agent_spans(runs=1)) - 1


async def test_when_the_broker_does_not_give_the_end_offsets_traces_go_by_the_clock(
    reader: _Reader, caplog: pytest.LogCaptureFixture
) -> None:
    await reader.read(2)

    async def unreachable(partitions: object) -> dict[TopicPartition, int]:
        raise KafkaConnectionError("the broker went away")

    reader.consumer.end_offsets = unreachable  # an outage on the ListOffsets request alone
    reader.clock.now = IDLE
    assert len(await reader.hand_on()) == 2  # by the clock, root unread
    (said,) = [r.getMessage() for r in caplog.records if r.name == "otel_eval.worker._read_barrier"]
    assert "did not give the end offsets of 1 partition(s) (KafkaConnectionError)" in said


async def test_a_partition_no_longer_assigned_holds_nothing_back(reader: _Reader) -> None:
    await reader.read(1)
    reader.clock.now = IDLE
    assert await reader.hand_on() == []
    reader.consumer.assign([])  # revoked: its next owner reads the trace again; the worker's position there is gone
    reader.clock.now = 2 * IDLE
    assert len(await reader.hand_on()) == 1
