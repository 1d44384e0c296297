"""A lone surrogate (``"\\ud800"``: valid JSON, no UTF-8 form) in a request on the requests topic: the request is
scored and its results published with U+FFFD in its place, and the requests behind it are scored too (the results
publisher used to raise on it, so the batch failed and was re-read for ever)."""

from __future__ import annotations

import json

import pytest

from otel_eval.evaluation.core import EvaluationCore
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.worker.results import parse_record
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, producer, random_topic, read_topic
from tests.transport._requests import request
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings

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
