"""A batch waiting on a judge for longer than the consumer's max poll interval: the worker stays in its group (it
polls, its partitions paused, while the batch runs), so the batch is not rebalanced away and evaluated again.
Real broker, loopback judge, one in-process worker."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from otel_eval.evaluation.core import EvaluationCore
from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, producer, random_topic, read_topic
from tests.judge.fake_gemini import FakeGemini, text_reply
from tests.transport._requests import request
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings

pytestmark = [pytest.mark.kafka, pytest.mark.integration]

TEST_KEY = "AIzaSyTEST-not-a-real-key-0000000000000"
JUDGED = "safety_v1"
POLL_INTERVAL_MS = 2_000
JUDGE_LATENCY_S = 6.0


async def _committed(bootstrap: str, group: str, topic: str) -> int | None:
    """The offset ``group`` committed on partition 0 of ``topic`` (a consumer of the group that does not join it)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        offset: int | None = await consumer.committed(TopicPartition(topic, 0))
    finally:
        await consumer.stop()
    return offset


async def test_a_batch_waiting_on_a_slow_judge_past_the_poll_interval_is_evaluated_and_committed_once(
    kafka_bootstrap: str,
) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    group = random_topic("group")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic])
    sent = [request(i) for i in range(3)]
    async with producer(kafka_bootstrap, acks="all") as prod:
        for one in sent:
            await prod.send(requests_topic, one.model_dump_json().encode(), key=one.trace_id.encode())
        await prod.flush()
    judge = FakeGemini(lambda model, body: text_reply("The response is safe."), latency=JUDGE_LATENCY_S).start()
    telemetry = MemoryTelemetry()
    client = JudgeClient(JudgeSettings(api_key=TEST_KEY, base_url=judge.base_url, max_attempts=1))
    core = EvaluationCore(
        emitters=telemetry.emitters(), criteria={JUDGED: {"threshold": 0.5}}, judge=client, judge_configured=True
    )
    settings = worker_settings(
        kafka_bootstrap,
        kafka_requests_topic=requests_topic,
        kafka_results_topic=results_topic,
        kafka_group_id=group,
        kafka_max_poll_interval_ms=POLL_INTERVAL_MS,
    )
    worker = Worker(settings, core=core, telemetry=telemetry.providers)
    expected = len(sent) * (1 + len(EFFICIENCY_METRICS))
    try:
        async with running_worker(worker):
            # One batch of three judge calls, each answered after three poll intervals.
            await wait_until_async(
                lambda: len({e.result_id for e in telemetry.events()}) >= expected,
                timeout=60,
                what="every result emitted",
            )
            await asyncio.sleep(POLL_INTERVAL_MS / 1000 * 2)  # a rebalance would re-read the batch by now
            assert worker.metrics.snapshot().get("assignments") == 1, "the worker left its group mid-batch"
            committed = await _committed(kafka_bootstrap, group, requests_topic)
    finally:
        judge.stop()
    assert len(judge.generate_requests()) == len(sent)  # each invocation judged once
    assert committed == len(sent)
    assert not worker.abandoned_uncommitted and worker.error is None
    published = [
        EvaluationRecord.model_validate_json(r.value) for r in await read_topic(kafka_bootstrap, results_topic)
    ]
    assert len(published) == len({r.result_id for r in published}) == expected  # each result published once
    assert Counter(e.result_id for e in telemetry.events()).most_common(1)[0][1] == 1  # and emitted once
