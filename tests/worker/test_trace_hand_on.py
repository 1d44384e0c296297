"""The Collector path hands a trace on with all its spans when the worker lags: a batch that takes longer than the
idle timeout (here a request waiting on a slow judge) splits neither the trace whose next spans it has fetched already
nor the one whose next spans wait unread behind another trace's record (held until the worker has read its partition
to where it ended once the trace went idle)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import semconv
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.demo.gemini_server import Reply
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, producer, random_topic
from tests.judge.fake_gemini import FakeGemini, error_reply
from tests.transport._requests import request
from tests.waiting import wait_until_async
from tests.worker._collector import agent_spans, collector_worker
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


TOOL_SCENARIO = next(scenario for scenario in SCENARIOS if scenario.tool_steps)


def _slow_invocation() -> list[ReadableSpan]:
    """The ended spans of one tool-calling invocation, in end order: a model call, a tool, then the final model call
    and the root, which a slow model ends long after."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    TravelAgent(provider).run(TOOL_SCENARIO)
    return list(exporter.get_finished_spans())


@pytest.mark.kafka
@pytest.mark.integration
async def test_an_invocation_whose_next_span_ends_after_the_idle_timeout_is_evaluated_whole(
    kafka_bootstrap: str,
) -> None:
    # A reasoning model: no span of the trace ends for longer than the idle timeout, while its root still runs. The
    # spans that came have a parent in their process that has not (it is open): the trace is held, not split.
    spans_topic = random_topic("otlp_spans")
    await create_topics(kafka_bootstrap, [spans_topic], partitions=1)
    telemetry = MemoryTelemetry()
    core = EvaluationCore(emitters=telemetry.emitters(), judge_configured=False)
    worker = collector_worker(kafka_bootstrap, core, telemetry, spans_topic)
    spans = _slow_invocation()
    trace_id = format(spans[0].context.trace_id, "032x")
    root = next(s for s in spans if s.parent is None)
    first_call, tool = spans[:2]
    try:
        async with running_worker(worker), producer(kafka_bootstrap) as prod:
            await prod.send_and_wait(spans_topic, encode_spans([first_call, tool]).SerializeToString())
            await wait_until_async(lambda: len(worker.assembler) == 1, timeout=30, what="the first spans read")
            await asyncio.sleep(worker.assembler.idle_timeout * 3)  # the next model call takes its time
            assert telemetry.events() == []
            await prod.send_and_wait(spans_topic, encode_spans(spans[2:]).SerializeToString())
            await wait_until_async(lambda: telemetry.events(), timeout=30, what="the invocation scored")
            await asyncio.sleep(worker.assembler.idle_timeout * 1.5)
        scores = {e.metric: e.score for e in telemetry.events() if e.trace_id == trace_id}
        assert {e.span_id for e in telemetry.events()} == {format(root.context.span_id, "016x")}
        assert scores["tool_call_count_v1"] == 1 and scores["inference_call_count_v1"] == 2
        assert worker.metrics.snapshot().get(f"spans.dropped.{semconv.DROP_LATE}", 0) == 0
    finally:
        telemetry.shutdown()
