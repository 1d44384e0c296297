"""KafkaInvocationExporter against the real tansu broker: delivery, keys, schema, bounds, outage and recovery."""

from __future__ import annotations

import asyncio
import json
import os
import threading

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otel_eval import semconv
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.errors import ConfigurationError
from otel_eval.model.messages import EvaluationRequest
from otel_eval.transport.base import ExportResult
from otel_eval.transport.kafka import KafkaInvocationExporter
from tests._kafka import TansuBroker, TcpProxy, create_topics, free_port, random_topic, read_topic
from tests.collected import settled
from tests.transport._requests import request, traced_invocation

pytestmark = [pytest.mark.kafka, pytest.mark.integration]


def _dropped_points(reader: InMemoryMetricReader) -> dict[str, int]:
    data = settled(reader)
    found: dict[str, int] = {}
    for resource_metrics in data.resource_metrics if data else ():
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name != semconv.METRIC_INVOCATIONS_DROPPED:
                    continue
                for point in metric.data.data_points:
                    assert point.attributes[semconv.OTEL_EVAL_TRANSPORT] == "kafka"
                    found[str(point.attributes[semconv.OTEL_EVAL_DROP_REASON])] = int(point.value)
    return found


async def test_requests_arrive_keyed_by_trace_id_as_versioned_json(kafka_bootstrap: str) -> None:
    topic = random_topic("requests")
    await create_topics(kafka_bootstrap, [topic], partitions=3)
    sent = [request(i) for i in range(20)]
    exporter = KafkaInvocationExporter(kafka_bootstrap, topic=topic, compression="gzip")
    try:
        assert exporter.export(sent[:10]) is ExportResult.SUCCESS
        assert exporter.export(sent[10:]) is ExportResult.SUCCESS
        assert await asyncio.to_thread(exporter.force_flush, 15_000)
    finally:
        await asyncio.to_thread(exporter.shutdown, 5_000)

    records = await read_topic(kafka_bootstrap, topic, expected=20)
    assert len(records) == 20
    by_trace = {r.key.decode(): r for r in records}
    assert set(by_trace) == {r.trace_id for r in sent}
    for original in sent:
        record = by_trace[original.trace_id]
        payload = json.loads(record.value)
        assert payload["schema_version"] == 1
        assert record.value == original.to_wire() and b"null" not in record.value  # None fields left out
        assert EvaluationRequest.model_validate_json(record.value) == original
    # Keyed records of one trace always land on the same partition; several partitions are used.
    assert len({r.partition for r in records}) > 1
    stats = exporter.stats()
    assert (stats.accepted, stats.delivered, stats.pending, stats.dropped_total) == (20, 20, 0, 0)


async def test_the_turns_of_a_session_are_keyed_by_its_session_id_and_share_a_partition(kafka_bootstrap: str) -> None:
    topic = random_topic("requests")
    await create_topics(kafka_bootstrap, [topic], partitions=4)
    sessions = [f"session-{n}" for n in range(6)]
    turns = [
        EvaluationRequest(invocations=[traced_invocation(10 * n + turn).model_copy(update={"session_id": session})])
        for turn in range(3)
        for n, session in enumerate(sessions)
    ]  # interleaved, one trace per turn, as a chat agent's turns arrive
    alone = request(99)  # no session: keyed by its trace id
    exporter = KafkaInvocationExporter(kafka_bootstrap, topic=topic)
    try:
        assert exporter.export([*turns, alone]) is ExportResult.SUCCESS
        assert await asyncio.to_thread(exporter.force_flush, 15_000)
    finally:
        await asyncio.to_thread(exporter.shutdown, 5_000)

    records = await read_topic(kafka_bootstrap, topic, expected=len(turns) + 1)
    partitions: dict[str, set[int]] = {}
    for record in records:
        sent = EvaluationRequest.model_validate_json(record.value)
        assert record.key.decode() == (sent.invocations[0].session_id or sent.trace_id)
        partitions.setdefault(record.key.decode(), set()).add(record.partition)
    assert set(partitions) == {*sessions, alone.trace_id}
    assert all(len(found) == 1 for found in partitions.values())  # every turn of a session on one partition
    assert len(set().union(*partitions.values())) > 1


async def test_broker_outage_buffers_up_to_the_bound_drops_and_resumes() -> None:
    reader = InMemoryMetricReader()
    proxy = TcpProxy(target_port=free_port())
    broker = TansuBroker(port=proxy.target_port, advertised_port=proxy.port)
    broker.start()
    proxy.restore()
    topic = random_topic("outage")
    exporter = KafkaInvocationExporter(
        broker.bootstrap,
        topic=topic,
        max_queue_size=25,
        request_timeout_ms=2_000,
        meter_provider=MeterProvider(metric_readers=[reader]),
    )
    try:
        before = [request(i) for i in range(5)]
        assert exporter.export(before) is ExportResult.SUCCESS
        assert await asyncio.to_thread(exporter.force_flush, 15_000)
        proxy.cut()  # the broker becomes unreachable (it keeps its data, as a real broker would)

        # The broker is down: the agent's calls return at once, never raise, and memory stays at the bound.
        during = [request(100 + i) for i in range(60)]
        results = [exporter.export([r]) for r in during]
        assert results.count(ExportResult.SUCCESS) == 25
        assert results.count(ExportResult.FAILURE) == 35
        stats = exporter.stats()
        assert stats.pending == 25
        assert stats.dropped == {semconv.DROP_TRANSPORT_QUEUE_FULL: 35}
        assert _dropped_points(reader) == {semconv.DROP_TRANSPORT_QUEUE_FULL: 35}
        assert not await asyncio.to_thread(exporter.force_flush, 300)
        # Stay down past the send timeout, so that timed-out sends are queued again (not lost, not duplicated).
        for _ in range(300):
            if exporter.stats().retries > 0:
                break
            await asyncio.sleep(0.05)
        assert exporter.stats().retries > 0
        assert exporter.stats().pending == 25

        proxy.restore()
        assert await asyncio.to_thread(exporter.force_flush, 30_000)
        after = [request(200 + i) for i in range(5)]
        assert exporter.export(after) is ExportResult.SUCCESS
        assert await asyncio.to_thread(exporter.force_flush, 15_000)

        records = await read_topic(broker.bootstrap, topic)  # until idle: also catches duplicates
        keys = {r.key.decode() for r in records}
        assert len(records) == len(keys) == 35
        # Everything buffered during the outage and everything after it arrived; the dropped ones did not.
        assert {r.trace_id for r in before + during[:25] + after} <= keys
        assert not keys & {r.trace_id for r in during[25:]}
        final = exporter.stats()
        assert final.pending == 0
        assert final.dropped_total == 35
    finally:
        await asyncio.to_thread(exporter.shutdown, 5_000)
        proxy.stop()
        broker.stop()


async def test_export_never_blocks_when_the_broker_is_unreachable_from_the_start() -> None:
    broker = TansuBroker()  # never started: nothing listens on its port
    exporter = KafkaInvocationExporter(broker.bootstrap, topic="never", max_queue_size=3, request_timeout_ms=1_000)
    try:
        # Many threads hammering export while the producer cannot even start.
        results: list[ExportResult] = []
        lock = threading.Lock()

        def agent_thread(base: int) -> None:
            for i in range(10):
                outcome = exporter.export([request(base + i)])
                with lock:
                    results.append(outcome)

        threads = [threading.Thread(target=agent_thread, args=(k * 100,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert len(results) == 40
        assert results.count(ExportResult.SUCCESS) == 3
        stats = exporter.stats()
        assert (stats.pending, stats.dropped_total, stats.connected) == (3, 37, False)
    finally:
        await asyncio.to_thread(exporter.shutdown, 500)
    stats = exporter.stats()
    # At shutdown the three that never left are counted as dropped for that reason.
    assert stats.dropped == {semconv.DROP_TRANSPORT_QUEUE_FULL: 37, semconv.DROP_SHUTDOWN: 3}
    assert exporter.export([request(999)]) is ExportResult.FAILURE
    assert exporter.stats().dropped[semconv.DROP_SHUTDOWN] == 4


async def test_a_lone_surrogate_in_a_session_id_or_text_is_delivered(kafka_bootstrap: str) -> None:
    """An agent's ``surrogateescape``-decoded text (a file name, a subprocess's output) in its session id and message:
    the request is sent keyed by the session id's bytes, its JSON with U+FFFD in their place, and the next one too."""
    topic = random_topic("surrogates")
    hostile, following = request(1, text="ls: caf\udce9"), request(2)
    hostile.invocations[0].session_id = "session-\udce9"
    exporter = KafkaInvocationExporter(kafka_bootstrap, topic=topic)
    try:
        assert exporter.export([hostile, following]) is ExportResult.SUCCESS
        assert await asyncio.to_thread(exporter.force_flush, 15_000)
    finally:
        await asyncio.to_thread(exporter.shutdown, 5_000)
    records = {r.key: r.value for r in await read_topic(kafka_bootstrap, topic, expected=2)}
    key = "session-\udce9".encode("utf-8", "surrogatepass")  # the session's turns share a partition, as before
    assert set(records) == {key, following.trace_id.encode()}
    sent = EvaluationRequest.model_validate_json(records[key])
    assert sent.invocations[0].session_id == "session-\ufffd"
    assert "caf\ufffd" in records[key].decode()
    assert exporter.stats().dropped == {}


async def test_oversized_requests_are_dropped_and_the_rest_delivered(kafka_bootstrap: str) -> None:
    topic = random_topic("big")
    exporter = KafkaInvocationExporter(kafka_bootstrap, topic=topic, max_request_size=4_000)
    try:
        small = request(1)
        big = request(2, text="x" * 10_000)
        assert exporter.export([big, small]) is ExportResult.SUCCESS
        assert await asyncio.to_thread(exporter.force_flush, 15_000)
    finally:
        await asyncio.to_thread(exporter.shutdown, 5_000)
    records = await read_topic(kafka_bootstrap, topic, expected=1)
    assert [r.key.decode() for r in records] == [small.trace_id]
    assert exporter.stats().dropped == {semconv.DROP_TRANSPORT_MESSAGE_TOO_LARGE: 1}


def test_configuration_errors_are_clear() -> None:
    with pytest.raises(ConfigurationError, match="compression 'brotli'"):
        KafkaInvocationExporter("127.0.0.1:1", compression="brotli")
    with pytest.raises(ConfigurationError, match="bootstrap servers"):
        KafkaInvocationExporter(" , ")
    with pytest.raises(ConfigurationError, match="max_queue_size 0"):
        KafkaInvocationExporter("127.0.0.1:1", max_queue_size=0)
    with pytest.raises(ConfigurationError, match="OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS"):
        KafkaInvocationExporter.from_env({})


@pytest.mark.parametrize(
    ("servers", "shown"),
    [
        ("k1:9092,admin:pw123@k2:9092", "k2:9092"),
        # a Kafka listener name urllib does not take for a scheme: the entry was shown whole, password included
        ("k1:9092,SASL_SSL://admin:pw123@k2:9093", "SASL_SSL://k2:9093"),
    ],
)
def test_bootstrap_servers_with_credentials_are_refused_without_showing_them(servers: str, shown: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        KafkaInvocationExporter(servers)
    assert f"{shown!r} is written with credentials" in str(caught.value)
    assert "OTEL_EVAL_KAFKA_SASL_PASSWORD" in str(caught.value)
    assert "pw123" not in str(caught.value) and "admin" not in str(caught.value)


@pytest.mark.parametrize("codec", ["zstd", "lz4", "snappy", "none"])
async def test_every_codec_round_trips(kafka_bootstrap: str, codec: str) -> None:
    topic = random_topic(codec)
    sent = [request(i) for i in range(3)]
    exporter = KafkaInvocationExporter(kafka_bootstrap, topic=topic, compression=codec)
    try:
        assert exporter.export(sent) is ExportResult.SUCCESS
        assert await asyncio.to_thread(exporter.force_flush, 15_000)
    finally:
        await asyncio.to_thread(exporter.shutdown, 5_000)
    records = await read_topic(kafka_bootstrap, topic, expected=3)
    assert sorted(EvaluationRequest.model_validate_json(r.value).trace_id for r in records) == sorted(
        r.trace_id for r in sent
    )


def test_drops_and_queue_size_go_through_the_processors_pipeline_counters() -> None:
    reader = InMemoryMetricReader()
    pipeline = PipelineMetrics(MeterProvider(metric_readers=[reader]), transport="kafka")
    broker = TansuBroker()  # never started
    exporter = KafkaInvocationExporter(broker.bootstrap, max_queue_size=2, request_timeout_ms=500, pipeline=pipeline)
    try:
        results = [exporter.export([request(i)]) for i in range(5)]
        assert results.count(ExportResult.FAILURE) == 3
        assert pipeline.snapshot()[f"invocations.dropped.{semconv.DROP_TRANSPORT_QUEUE_FULL}"] == 3
        data = reader.get_metrics_data()
        gauges = [
            point
            for rm in data.resource_metrics
            for sm in rm.scope_metrics
            for metric in sm.metrics
            if metric.name == semconv.METRIC_QUEUE_SIZE
            for point in metric.data.data_points
        ]
        assert [(dict(p.attributes), p.value) for p in gauges] == [
            ({semconv.OTEL_EVAL_TRANSPORT: "kafka", semconv.OTEL_EVAL_QUEUE: "requests"}, 2)
        ]
    finally:
        exporter.shutdown(200)


def test_a_forked_child_gets_its_own_sender(kafka_bootstrap: str) -> None:
    topic = random_topic("fork")
    exporter = KafkaInvocationExporter(kafka_bootstrap, topic=topic)
    parent_request, child_request = request(1), request(2)
    try:
        assert exporter.export([parent_request]) is ExportResult.SUCCESS
        assert exporter.force_flush(15_000)
        pid = os.fork()
        if pid == 0:  # the child: a pre-fork server's worker process
            code = 0
            try:
                ok = exporter.export([child_request]) is ExportResult.SUCCESS and exporter.force_flush(15_000)
                code = 0 if ok else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        exporter.shutdown(5_000)
    records = asyncio.run(read_topic(kafka_bootstrap, topic))
    assert sorted(r.key.decode() for r in records) == sorted([parent_request.trace_id, child_request.trace_id])
