"""A worker stopped in the middle of a slow batch (a rolling restart): it publishes and commits what it finished, so
the worker after it scores and emits only the rest. Real broker, loopback judge, two in-process workers in turn."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from otel_eval.evaluation.core import EvaluationCore
from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, random_topic, read_topic
from tests.judge.fake_gemini import FakeGemini, text_reply
from tests.transport._requests import request
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, running_worker, send_requests, worker_settings

pytestmark = [pytest.mark.kafka, pytest.mark.integration]

TEST_KEY = "AIzaSyTEST-not-a-real-key-0000000000000"
JUDGED = "safety_v1"


def _worker(bootstrap: str, telemetry: MemoryTelemetry, judge: FakeGemini, **settings: object) -> Worker:
    client = JudgeClient(
        JudgeSettings(api_key=TEST_KEY, base_url=judge.base_url, max_concurrency=1, max_attempts=1)
    )  # one judge call at a time: the batch's requests wait for it, all of them in flight
    core = EvaluationCore(
        emitters=telemetry.emitters(), criteria={JUDGED: {"threshold": 0.5}}, judge=client, judge_configured=True
    )
    return Worker(worker_settings(bootstrap, **settings), core=core, telemetry=telemetry.providers)


async def test_a_worker_stopped_mid_batch_commits_what_it_finished_and_the_next_emits_only_the_rest(
    kafka_bootstrap: str,
) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic], partitions=2)
    sent = [request(i) for i in range(12)]
    await send_requests(kafka_bootstrap, requests_topic, sent)
    settings = {
        "kafka_requests_topic": requests_topic,
        "kafka_results_topic": results_topic,
        "kafka_group_id": random_topic("group"),
        "worker_max_batch_size": 12,
        "worker_shutdown_timeout": 4.0,
    }
    slow = FakeGemini(lambda model, body: text_reply("The response is safe."), latency=0.5).start()
    fast = FakeGemini(lambda model, body: text_reply("The response is safe.")).start()
    first, second = MemoryTelemetry(), MemoryTelemetry()
    try:
        worker = _worker(kafka_bootstrap, first, slow, **settings)
        serving = asyncio.create_task(worker.serve())
        await wait_until_async(lambda: len(slow.generate_requests()) >= 3, timeout=60, what="judge calls")
        worker.request_exit()  # what SIGTERM does
        await asyncio.wait_for(serving, timeout=30)
        assert worker.abandoned_uncommitted  # the batch (12 judge calls, 0.5 s each) could not finish in 4 s

        expected = len(sent) * (1 + len(EFFICIENCY_METRICS))
        async with running_worker(_worker(kafka_bootstrap, second, fast, **settings)):
            await wait_until_async(
                lambda: len({e.result_id for e in first.events() + second.events()}) >= expected,
                timeout=60,
                what="every result emitted",
            )
            await asyncio.sleep(1.0)  # any duplicate would arrive now
    finally:
        slow.stop()
        fast.stop()
    published = [
        EvaluationRecord.model_validate_json(r.value) for r in await read_topic(kafka_bootstrap, results_topic)
    ]
    assert len(published) == len({r.result_id for r in published}) == expected  # each result once
    finished_first = {e.trace_id for e in first.events() if e.metric == JUDGED}
    assert finished_first, "the first worker finished nothing before it was stopped"
    counts = Counter(e.result_id for e in first.events() + second.events())
    twice = [e for e in first.events() if counts[e.result_id] > 1]
    # Only what the cut left mid-way is emitted again: the deterministic metrics, scored before the judged one, of
    # the invocations the first worker had not finished.
    assert {e.metric for e in twice} <= set(EFFICIENCY_METRICS), twice
    assert not {e.trace_id for e in twice} & finished_first, twice
    assert {e.trace_id for e in first.events() + second.events() if e.metric == JUDGED} == {r.trace_id for r in sent}
