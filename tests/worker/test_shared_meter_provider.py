"""Two workers on one meter provider (one process, one telemetry set-up) both report their consumer lag and their
broker outage: one gauge per name is fed by every worker. The SDK keeps the first callbacks of an instrument name only,
so a second worker's own gauges reported nothing."""

from __future__ import annotations

import pytest

from otel_eval import semconv
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, random_topic
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings

pytestmark = [pytest.mark.kafka, pytest.mark.integration]


async def test_two_workers_on_one_meter_provider_both_report_lag_and_outage(kafka_bootstrap: str) -> None:
    topics = [random_topic("requests"), random_topic("requests")]
    await create_topics(kafka_bootstrap, topics)
    shared = MemoryTelemetry()
    workers = [
        Worker(
            worker_settings(
                kafka_bootstrap, kafka_requests_topic=topic, kafka_results_topic="", kafka_group_id=random_topic("g")
            ),
            core=EvaluationCore(emitters=shared.emitters(), judge_configured=False),
            telemetry=shared.providers,
        )
        for topic in topics
    ]

    def lag_topics() -> set[object]:
        return {p.attributes[semconv.KAFKA_TOPIC] for p in shared.metric_points(semconv.METRIC_CONSUMER_LAG)}

    try:
        async with running_worker(workers[0]), running_worker(workers[1]):
            await wait_until_async(lambda: lag_topics() == set(topics), timeout=60, what="both workers' lag")
            outage = shared.metric_points(semconv.METRIC_TRANSPORT_OUTAGE_DURATION)
            assert [p.value for p in outage] == [0]  # one series: the longest outage of the process (none)
    finally:
        shared.shutdown()
