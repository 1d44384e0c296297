"""A lone surrogate (``"\\ud800"``: valid JSON, no UTF-8 form) in a request on the requests topic: the request is
scored and its results published with U+FFFD in its place, and the requests behind it are scored too (the results
publisher used to raise on it, so the batch failed and was re-read for ever)."""

from __future__ import annotations

import json

import pytest

from otel_eval import semconv
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.worker.results import parse_record
from otel_eval.worker.service import Worker
from otel_eval.worker.telemetry import create_telemetry
from tests._kafka import create_topics, producer, random_topic, read_topic
from tests.transport._requests import request
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, OtlpSink, running_worker, worker_settings

pytestmark = [pytest.mark.kafka, pytest.mark.integration]


async def test_a_request_with_a_lone_surrogate_is_scored_and_published(kafka_bootstrap: str) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic], partitions=1)
    hostile, good = request(0), request(1)
    document = json.loads(hostile.to_wire())
    document["invocations"][0]["agent_name"] = "weather\ud800agent"
    async with producer(kafka_bootstrap, acks="all") as prod:
        await prod.send(requests_topic, value=json.dumps(document).encode())  # ASCII: the surrogate as \ud800
        await prod.send(requests_topic, value=good.to_wire())
        await prod.flush()

    telemetry = MemoryTelemetry()
    worker = Worker(
        worker_settings(
            kafka_bootstrap,
            kafka_requests_topic=requests_topic,
            kafka_results_topic=results_topic,
            kafka_group_id=random_topic("group"),
        ),
        core=EvaluationCore(emitters=telemetry.emitters(), judge_configured=False),
        telemetry=telemetry.providers,
    )
    expected = 2 * len(EFFICIENCY_METRICS)
    async with running_worker(worker):
        await wait_until_async(
            lambda: worker.metrics.snapshot().get("results_published", 0) >= expected, what="results"
        )
        assert worker.metrics.snapshot().get("dead_letters", 0) == 0
    telemetry.shutdown()

    records = [parse_record(m.value) for m in await read_topic(kafka_bootstrap, results_topic, expected=expected)]
    agents = {r.trace_id: r.agent_name for r in records if r is not None}
    assert agents == {hostile.trace_id: "weather\ufffdagent", good.trace_id: "weather_agent"}


async def test_a_lone_surrogate_in_a_request_is_exported_over_otlp_as_u_fffd(
    kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The worker's results go out through the SDK's OTLP/HTTP exporters, whose protobuf encoder refuses a lone
    surrogate: the agent name and session id were dropped from the events, spans and points (the points counted
    under no agent), with an ERROR traceback for each."""
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic], partitions=1)
    hostile, good = request(0), request(1)
    document = json.loads(hostile.to_wire())
    document["invocations"][0]["agent_name"] = "weather\ud800agent"
    document["invocations"][0]["session_id"] = "session-\udc00"
    async with producer(kafka_bootstrap, acks="all") as prod:
        await prod.send(requests_topic, value=json.dumps(document).encode())  # ASCII: the surrogates as escapes
        await prod.send(requests_topic, value=good.to_wire())
        await prod.flush()

    receiver = OtlpSink().start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    telemetry = create_telemetry("otlp")
    worker = Worker(
        worker_settings(
            kafka_bootstrap,
            kafka_requests_topic=requests_topic,
            kafka_results_topic=results_topic,
            kafka_group_id=random_topic("group"),
        ),
        telemetry=telemetry,
    )
    expected = 2 * len(EFFICIENCY_METRICS)
    try:
        async with running_worker(worker):
            await wait_until_async(
                lambda: worker.metrics.snapshot().get("results_published", 0) >= expected, what="results"
            )
        telemetry.shutdown()  # exports what the batch processors and the metric reader hold
    finally:
        receiver.stop()

    events = receiver.events()
    assert {e.trace_id for e in events} == {hostile.trace_id, good.trace_id} and len(events) == expected
    assert receiver.evaluation_span_count() == expected
    attributes = [
        {kv.key: kv.value.string_value for kv in record.attributes}
        for request_ in receiver.log_requests
        for resource_logs in request_.resource_logs
        for scope_logs in resource_logs.scope_logs
        for record in scope_logs.log_records
        if record.trace_id.hex() == hostile.trace_id
    ]
    assert {a[semconv.GEN_AI_AGENT_NAME] for a in attributes} == {"weather\ufffdagent"}
    assert {a[semconv.GEN_AI_CONVERSATION_ID] for a in attributes} == {"session-\ufffd"}
    agents = {
        attribute.value.string_value
        for request_ in receiver.metric_requests
        for resource_metrics in request_.resource_metrics
        for scope_metrics in resource_metrics.scope_metrics
        for metric in scope_metrics.metrics
        if metric.name == semconv.METRIC_EVALUATION_RESULTS
        for point in metric.sum.data_points
        for attribute in point.attributes
        if attribute.key == semconv.GEN_AI_AGENT_NAME
    }
    assert agents == {"weather\ufffdagent", "weather_agent"}
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
