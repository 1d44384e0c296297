"""KafkaInvocationExporter through broker outages on the real tansu broker: refused connections (broker killed), a
hung broker (SIGSTOP, then SIGCONT), a restart that keeps the broker's data. Asserted: the agent's log stays quiet,
shutdown is bounded, and every request is delivered once or dropped and counted."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otel_eval import semconv
from otel_eval.model.messages import EvaluationRequest
from otel_eval.transport import BROKER, OutageMonitor
from otel_eval.transport.base import ExportResult
from otel_eval.transport.kafka import KafkaInvocationExporter
from tests._kafka import TansuBroker, read_topic, topic_partitions
from tests.collected import settled
from tests.transport._brokers import durable_broker, hung
from tests.transport._requests import request

pytestmark = [pytest.mark.kafka, pytest.mark.integration]

SHUTDOWN_BOUND_S = 5.0 + 1.5
"""The default delivery timeout (5 s) plus slack for a loaded machine: catches a shutdown that waits for the broker."""


class UserLog(logging.Handler):
    """What a user with ``logging.basicConfig(level=logging.INFO)`` sees: records at INFO or above, from any logger."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def since(self, start: float) -> list[logging.LogRecord]:
        return [r for r in self.records if r.created >= start]


@pytest.fixture
def user_log() -> Iterator[UserLog]:
    handler = UserLog()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def _metric_points(reader: InMemoryMetricReader, name: str) -> list[tuple[dict[str, object], float]]:
    data = settled(reader)
    return [
        (dict(point.attributes or {}), point.value)
        for rm in (data.resource_metrics if data else ())
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if metric.name == name
        for point in metric.data.data_points
    ]


async def _wait(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        await asyncio.sleep(0.05)


def _keys(records: list[object]) -> list[str]:
    return [r.key.decode() for r in records]  # type: ignore[attr-defined]


async def _delivered(bootstrap: str, topic: str, expected: int) -> list[str]:
    await topic_partitions(bootstrap, topic)
    return _keys(await read_topic(bootstrap, topic, expected=expected, timeout=30))


async def test_refused_connections_one_warning_bounded_shutdown_and_drops_counted(user_log: UserLog) -> None:
    reader = InMemoryMetricReader()
    broker = TansuBroker()
    broker.start()
    exporter = KafkaInvocationExporter(
        broker.bootstrap,
        topic="refused",
        request_timeout_ms=2_000,
        meter_provider=MeterProvider(metric_readers=[reader]),
    )
    try:
        assert exporter.export([request(0)]) is ExportResult.SUCCESS
        assert await asyncio.to_thread(exporter.force_flush, 15_000)
        outage_started = time.time()
        broker.stop()  # connections are refused from now on
        during = [request(1 + i) for i in range(10)]
        assert all(exporter.export([r]) is ExportResult.SUCCESS for r in during)  # held, never blocking
        await _wait(lambda: exporter.stats().unavailable, 30, "the exporter to see the outage")
        await asyncio.sleep(3.0)  # aiokafka keeps retrying meanwhile
        stats = exporter.stats()
        assert stats.pending == 10
        assert stats.failed_attempts >= 2
        # force_flush gives up after the delivery timeout, not the caller's 30 s; nothing is dropped by it.
        started = time.monotonic()
        assert not await asyncio.to_thread(exporter.force_flush, 30_000)
        assert time.monotonic() - started < SHUTDOWN_BOUND_S
        assert exporter.stats().pending == 10
    finally:
        started = time.monotonic()
        await asyncio.to_thread(exporter.shutdown)  # the SDK's default: 30 s
        took = time.monotonic() - started
        broker.stop()
    assert took < SHUTDOWN_BOUND_S

    final = exporter.stats()
    assert final.accepted == final.delivered + final.dropped_total == 11
    assert final.dropped == {semconv.DROP_SHUTDOWN: 10}
    lines = user_log.since(outage_started)
    assert not [r for r in lines if r.name.startswith("aiokafka")]
    warnings = [r.getMessage() for r in lines if r.levelno == logging.WARNING]
    assert len(lines) <= 3, [r.getMessage() for r in lines]
    assert "unreachable at " + broker.bootstrap in warnings[0]
    assert "10 undelivered evaluation requests dropped" in warnings[-1]
    attempts = _metric_points(reader, semconv.METRIC_TRANSPORT_FAILED_ATTEMPTS)
    assert [a for a, _ in attempts] == [{semconv.OTEL_EVAL_TRANSPORT: semconv.TRANSPORT_KAFKA}]
    assert attempts[0][1] == final.failed_attempts >= 2
    assert _metric_points(reader, semconv.METRIC_INVOCATIONS_DROPPED) == [
        ({semconv.OTEL_EVAL_DROP_REASON: semconv.DROP_SHUTDOWN, semconv.OTEL_EVAL_TRANSPORT: "kafka"}, 10)
    ]


async def test_hung_broker_holds_requests_then_delivers_each_once_when_it_answers_again(user_log: UserLog) -> None:
    reader = InMemoryMetricReader()
    broker = TansuBroker()
    broker.start()
    topic = "hung"
    exporter = KafkaInvocationExporter(
        broker.bootstrap, topic=topic, request_timeout_ms=2_000, meter_provider=MeterProvider(metric_readers=[reader])
    )
    before, during = [request(i) for i in range(3)], [request(10 + i) for i in range(12)]
    try:
        assert exporter.export(before) is ExportResult.SUCCESS
        assert await asyncio.to_thread(exporter.force_flush, 15_000)
        with hung(broker):
            outage_started = time.time()
            assert all(exporter.export([r]) is ExportResult.SUCCESS for r in during)
            await _wait(lambda: exporter.stats().unavailable, 30, "the exporter to see the outage")
            await asyncio.sleep(2.0)
            outage = _metric_points(reader, semconv.METRIC_TRANSPORT_OUTAGE_DURATION)
            assert [a for a, _ in outage] == [{semconv.OTEL_EVAL_TRANSPORT: semconv.TRANSPORT_KAFKA}]
            assert outage[0][1] >= 1.5
            assert exporter.stats().pending == len(during)
        # Thawed: the held requests go out without a restart of anything.
        assert await asyncio.to_thread(exporter.force_flush, 30_000)
        await _wait(lambda: not exporter.stats().unavailable, 30, "the exporter to see the broker back")
    finally:
        await asyncio.to_thread(exporter.shutdown, 10_000)
    lines = user_log.since(outage_started)
    try:
        keys = await _delivered(broker.bootstrap, topic, len(before) + len(during))
    finally:
        broker.stop()
    # None lost. A send whose acknowledgement timed out while the broker was frozen is sent again (at-least-once:
    # the frozen broker still appends the first copy when it wakes); workers de-duplicate by result id.
    stats = exporter.stats()
    assert set(keys) == {r.trace_id for r in before + during}
    assert len(keys) - len(set(keys)) <= stats.retries
    assert stats.dropped_total == 0 and stats.delivered >= len(before) + len(during)
    assert [r.levelname for r in lines] == ["WARNING", "INFO"], [r.getMessage() for r in lines]
    assert "reachable again" in lines[1].getMessage()
    assert [v for _, v in _metric_points(reader, semconv.METRIC_TRANSPORT_OUTAGE_DURATION)] == [0]


async def test_shutdown_against_a_hung_broker_is_bounded_and_counts_what_it_drops(user_log: UserLog) -> None:
    broker = TansuBroker()
    broker.start()
    exporter = KafkaInvocationExporter(broker.bootstrap, topic="hung-shutdown", request_timeout_ms=30_000)
    try:
        assert exporter.export([request(0)]) is ExportResult.SUCCESS
        assert await asyncio.to_thread(exporter.force_flush, 15_000)
        with hung(broker):
            assert exporter.export([request(1 + i) for i in range(5)]) is ExportResult.SUCCESS
            started = time.monotonic()
            await asyncio.to_thread(exporter.shutdown)
            took = time.monotonic() - started
    finally:
        broker.stop()
    assert took < SHUTDOWN_BOUND_S
    stats = exporter.stats()
    assert stats.accepted == stats.delivered + stats.dropped_total == 6
    assert stats.dropped == {semconv.DROP_SHUTDOWN: 5}
    assert not [r for r in user_log.records if r.name.startswith("aiokafka")]


async def test_a_broker_restart_keeping_its_data_loses_and_repeats_nothing(user_log: UserLog) -> None:
    topic = "restart"
    sent: list[EvaluationRequest] = []
    with durable_broker() as broker:
        exporter = KafkaInvocationExporter(broker.bootstrap, topic=topic, request_timeout_ms=2_000)
        try:
            sent += [request(i) for i in range(5)]
            assert exporter.export(sent) is ExportResult.SUCCESS
            assert await asyncio.to_thread(exporter.force_flush, 15_000)
            broker.stop()
            during = [request(10 + i) for i in range(8)]
            sent += during
            assert exporter.export(during) is ExportResult.SUCCESS
            await _wait(lambda: exporter.stats().unavailable, 30, "the exporter to see the outage")
            broker.start()
            assert await asyncio.to_thread(exporter.force_flush, 30_000)
            after = [request(20 + i) for i in range(3)]
            sent += after
            assert exporter.export(after) is ExportResult.SUCCESS
            assert await asyncio.to_thread(exporter.force_flush, 15_000)
        finally:
            await asyncio.to_thread(exporter.shutdown, 10_000)
        keys = await _delivered(broker.bootstrap, topic, len(sent))
    assert sorted(keys) == sorted(r.trace_id for r in sent)
    stats = exporter.stats()
    assert (stats.accepted, stats.delivered, stats.dropped_total) == (16, 16, 0)
    messages = [r.getMessage() for r in user_log.records if r.name.startswith("otel_eval")]
    assert sum("unreachable at" in m for m in messages) == 1
    assert sum("reachable again" in m for m in messages) == 1


async def test_aiokafka_errors_of_other_clients_still_reach_the_users_log(user_log: UserLog) -> None:
    """Only the exporter's own producer is quietened: the user's aiokafka clients log as before."""
    from aiokafka import AIOKafkaProducer

    dead = TansuBroker()  # never started
    exporter = KafkaInvocationExporter(dead.bootstrap, topic="mine")
    try:
        exporter.export([request(0)])
        await _wait(lambda: exporter.stats().failed_attempts > 0, 30, "the exporter's failed attempts")
        theirs = AIOKafkaProducer(bootstrap_servers=dead.bootstrap)
        with pytest.raises(Exception, match="Unable to bootstrap"):
            await theirs.start()
        await theirs.stop()
    finally:
        await asyncio.to_thread(exporter.shutdown, 2_000)
    aiokafka_lines = [r for r in user_log.records if r.name.startswith("aiokafka")]
    assert aiokafka_lines and all(r.levelno >= logging.ERROR for r in aiokafka_lines)
    assert all(r.threadName != "OtelEvalKafkaExporter" for r in aiokafka_lines)  # none from the exporter


def test_the_outage_monitor_logs_one_warning_a_summary_a_minute_and_one_info() -> None:
    now = [100.0]
    records: list[logging.LogRecord] = []
    log = logging.getLogger("tests.outage-monitor")
    log.propagate = False
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    monitor = OutageMonitor(
        "exporter",
        ["kafka-1:9092", "kafka-2:9092"],
        log,
        peer=BROKER,
        counts=lambda: {"held": 7},
        clock=lambda: now[0],
    )
    for second in range(0, 150):
        now[0] = 100.0 + second
        monitor.unreachable("KafkaConnectionError('refused')")
        monitor.tick()
    assert monitor.outage_seconds() == 149
    now[0] = 260.0
    monitor.reachable()
    monitor.reachable()
    assert [r.levelname for r in records] == ["WARNING", "WARNING", "WARNING", "INFO"]
    first, summary = records[0].getMessage(), records[1].getMessage()
    assert "unreachable at kafka-1:9092,kafka-2:9092" in first
    assert "still unreachable after 60 s" in summary and "7 held" in summary
    assert "reachable again after 160.0 s" in records[3].getMessage()
    assert monitor.outage_seconds() == 0 and monitor.outages == 1 and monitor.attempts == 150
