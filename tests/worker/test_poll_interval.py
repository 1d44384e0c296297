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
from tests._kafka import committed_offset, create_topics, random_topic, read_topic
from tests.judge.fake_gemini import FakeGemini, text_reply
from tests.transport._requests import request
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, running_worker, send_requests, worker_settings

pytestmark = [pytest.mark.kafka, pytest.mark.integration]

TEST_KEY = "AIzaSyTEST-not-a-real-key-0000000000000"
JUDGED = "safety_v1"
POLL_INTERVAL_MS = 2_000
JUDGE_LATENCY_S = 6.0


def _judged_worker(bootstrap: str, telemetry: MemoryTelemetry, judge: FakeGemini, **settings: object) -> Worker:
    client = JudgeClient(JudgeSettings(api_key=TEST_KEY, base_url=judge.base_url, max_attempts=1))
    core = EvaluationCore(
        emitters=telemetry.emitters(), criteria={JUDGED: {"threshold": 0.5}}, judge=client, judge_configured=True
    )
    return Worker(worker_settings(bootstrap, **settings), core=core, telemetry=telemetry.providers)


def _assignments(worker: Worker) -> int:
    return worker.metrics.snapshot().get("assignments", 0)


async def test_a_batch_waiting_on_a_slow_judge_past_the_poll_interval_is_evaluated_and_committed_once(
    kafka_bootstrap: str,
) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    group = random_topic("group")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic])
    sent = [request(i) for i in range(3)]
    await send_requests(kafka_bootstrap, requests_topic, sent)
    judge = FakeGemini(lambda model, body: text_reply("The response is safe."), latency=JUDGE_LATENCY_S).start()
    telemetry = MemoryTelemetry()
    worker = _judged_worker(
        kafka_bootstrap,
        telemetry,
        judge,
        kafka_requests_topic=requests_topic,
        kafka_results_topic=results_topic,
        kafka_group_id=group,
        kafka_max_poll_interval_ms=POLL_INTERVAL_MS,
    )
    expected = len(sent) * (1 + len(EFFICIENCY_METRICS))
    try:
        async with running_worker(worker):
            # One batch of three judge calls, each answered after three poll intervals.
            await wait_until_async(
                lambda: len({e.result_id for e in telemetry.events()}) >= expected or _assignments(worker) > 1,
                timeout=60,
                what="every result emitted",
            )
            await asyncio.sleep(POLL_INTERVAL_MS / 1000 * 2)  # a rebalance would re-read the batch by now
            assert _assignments(worker) == 1, "the worker left its group mid-batch"
            committed = await committed_offset(kafka_bootstrap, group, requests_topic)
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


async def test_a_worker_joining_while_a_long_batch_is_polled_through_takes_its_share_and_each_result_is_published_once(
    kafka_bootstrap: str,
) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic], partitions=2)
    sent = [request(i) for i in range(6)]
    await send_requests(kafka_bootstrap, requests_topic, sent)
    settings = {
        "kafka_requests_topic": requests_topic,
        "kafka_results_topic": results_topic,
        "kafka_group_id": random_topic("group"),
        "kafka_max_poll_interval_ms": POLL_INTERVAL_MS,
    }
    slow = FakeGemini(lambda model, body: text_reply("The response is safe."), latency=JUDGE_LATENCY_S).start()
    fast = FakeGemini(lambda model, body: text_reply("The response is safe.")).start()
    first, second = MemoryTelemetry(), MemoryTelemetry()
    expected = len(sent) * (1 + len(EFFICIENCY_METRICS))
    try:
        async with running_worker(_judged_worker(kafka_bootstrap, first, slow, **settings)) as one:
            await wait_until_async(lambda: len(slow.generate_requests()) >= 1, timeout=30, what="a judge call")
            # The second worker joins while the first polls through its batch: a rebalance mid-batch.
            async with running_worker(_judged_worker(kafka_bootstrap, second, fast, **settings)) as other:
                await wait_until_async(
                    lambda: len({e.result_id for e in first.events() + second.events()}) >= expected,
                    timeout=60,
                    what="every result emitted",
                )
                await wait_until_async(lambda: one.assignment and other.assignment, timeout=30, what="both assigned")
                await asyncio.sleep(POLL_INTERVAL_MS / 1000 * 2)
    finally:
        slow.stop()
        fast.stop()
    assert one.error is None and other.error is None
    published = [
        EvaluationRecord.model_validate_json(r.value) for r in await read_topic(kafka_bootstrap, results_topic)
    ]
    assert len(published) == len({r.result_id for r in published}) == expected  # each result published once
    judged = [e.trace_id for e in first.events() + second.events() if e.metric == JUDGED]
    assert sorted(judged) == sorted(r.trace_id for r in sent)  # each request's judged metric scored once
