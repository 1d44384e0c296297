"""The Collector path hands a trace on with all its spans when the worker lags: a batch that takes longer than the
idle timeout (here a request waiting on a slow judge) splits neither the trace whose next spans it has fetched already
nor the one whose next spans wait unread behind another trace's record (held until the worker has read its partition
to where it ended once the trace went idle)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from otel_eval import semconv
from otel_eval.demo.gemini_server import Reply
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, producer, random_topic
from tests.judge.fake_gemini import FakeGemini, error_reply
from tests.transport._requests import request
from tests.waiting import wait_until_async
from tests.worker._collector import agent_spans
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings

IDLE_TIMEOUT = 5.0
JUDGE_SECONDS = 7.0
"""Longer than the idle timeout: the batch judging the request outlasts it."""


@pytest.mark.kafka
@pytest.mark.integration
@pytest.mark.parametrize("another_trace_between", [False, True], ids=["next", "behind_another"])
async def test_a_batch_slower_than_the_idle_timeout_does_not_split_the_trace_behind_it(
    kafka_bootstrap: str, another_trace_between: bool
) -> None:
    requests_topic, spans_topic = random_topic("requests"), random_topic("spans")
    await create_topics(kafka_bootstrap, [requests_topic, spans_topic], partitions=1)
    judging = threading.Event()

    def slow_judge(model: str, body: dict[str, Any]) -> Reply:
        if not judging.is_set():  # the first call only: the request's
            judging.set()
            time.sleep(JUDGE_SECONDS)
        return error_reply(503, "slow and then down")

    server = FakeGemini(slow_judge).start()
    judge = JudgeClient(
        JudgeSettings(
            api_key="AIzaSyTEST-not-a-real-key-0000000000000",
            base_url=server.base_url,
            timeout_seconds=JUDGE_SECONDS * 2,
            max_attempts=1,
            max_total_seconds=JUDGE_SECONDS * 3,
        )
    )
    telemetry = MemoryTelemetry()
    worker = Worker(
        worker_settings(
            kafka_bootstrap,
            kafka_requests_topic=requests_topic,
            kafka_spans_topic=spans_topic,
            kafka_results_topic="",
            kafka_group_id=random_topic("group"),
            worker_sources="requests,otlp_spans",
            worker_max_batch_size=1,
            trace_idle_timeout=IDLE_TIMEOUT,
        ),
        core=EvaluationCore(
            emitters=telemetry.emitters(), criteria={"hallucinations_v1": {"threshold": 0.5}}, judge=judge
        ),
        telemetry=telemetry.providers,
    )
    spans, other = agent_spans(runs=1), agent_spans(runs=1)
    [trace_id] = {format(s.context.trace_id, "032x") for s in spans}
    root = next(s for s in spans if s.parent is None)
    before_root = [s for s in spans if s is not root]
    try:
        async with running_worker(worker), producer(kafka_bootstrap) as prod:
            await prod.send_and_wait(spans_topic, encode_spans(before_root).SerializeToString(), key=trace_id.encode())
            await wait_until_async(lambda: len(worker.assembler) == 1, timeout=30, what="the trace's first spans read")
            judged = request(0)
            await prod.send_and_wait(requests_topic, judged.model_dump_json().encode(), key=judged.trace_id.encode())
            await wait_until_async(judging.is_set, timeout=30, what="the request's batch waiting on the judge")
            # The root span arrives while that batch waits: read only after the trace has been idle that long.
            if another_trace_between:  # ... and after another trace's record, read alone (batches of one)
                await prod.send_and_wait(spans_topic, encode_spans(other).SerializeToString(), key=b"another")
            await prod.send_and_wait(spans_topic, encode_spans([root]).SerializeToString(), key=trace_id.encode())

            def late() -> int:
                return int(worker.metrics.snapshot().get(f"spans.dropped.{semconv.DROP_LATE}", 0))

            def scored() -> bool:
                return any(e.trace_id == trace_id for e in telemetry.events())

            await wait_until_async(lambda: scored() or late(), timeout=60, what="the trace scored or its root dropped")
            assert late() == 0
            # Scored on its root span: rebuilt with every span (its first ones alone make no invocation of it).
            assert {e.span_id for e in telemetry.events() if e.trace_id == trace_id} == {
                format(root.context.span_id, "016x")
            }
    finally:
        server.stop()
        telemetry.shutdown()
