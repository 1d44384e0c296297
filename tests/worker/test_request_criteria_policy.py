"""Requests set the judge's spend and tools only where the worker allows it: hostile criteria on a real broker are
refused, counted by reason, and the request is scored with the worker's own criteria."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from otel_eval import semconv
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.evaluation.request_criteria import (
    REFUSED_JUDGE_CONFIG,
    REFUSED_JUDGE_MODEL,
    REFUSED_MALFORMED,
    REFUSED_METRIC,
    REFUSED_NOT_ALLOWED,
    REFUSED_NUM_SAMPLES,
    RequestCriteriaPolicy,
)
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, producer, random_topic
from tests.transport._requests import request
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings

OPEN = RequestCriteriaPolicy.create(
    honour=True, metrics="safety_v1,hallucinations_v1", judge_models="gemini-2.5-flash", max_num_samples=20
)


def _judged(**options: Any) -> dict[str, Any]:
    return {"safety_v1": {"threshold": 0.5, "judgeModelOptions": options}}


@pytest.mark.parametrize(
    ("criteria", "reason"),
    [
        (_judged(numSamples=10_000_000), REFUSED_NUM_SAMPLES),
        (_judged(num_samples="1e7"), REFUSED_NUM_SAMPLES),  # pydantic would read the string as a number
        (_judged(judgeModel="gemini-2.5-pro"), REFUSED_JUDGE_MODEL),
        (_judged(judge_model=["x"]), REFUSED_JUDGE_MODEL),
        (_judged(judge_model_config={"tools": [{"google_search": {}}]}), REFUSED_JUDGE_CONFIG),
        (_judged(judgeModelConfig={"thinkingConfig": {"thinkingBudget": 24576}}), REFUSED_JUDGE_CONFIG),
        (_judged(judge_model_config={"candidate_count": 8}), REFUSED_JUDGE_CONFIG),
        (_judged(judge_model_config={"cached_content": "cachedContents/x"}), REFUSED_JUDGE_CONFIG),
        (_judged(judge_model_config={"maxOutputTokens": 1_000_000}), REFUSED_JUDGE_CONFIG),
        ({"response_match_score": 0.5}, REFUSED_METRIC),
        ({"criteria": {"safety_v1": 0.5}, "custom_metrics": {"safety_v1": {}}}, REFUSED_MALFORMED),
        ([1, 2], REFUSED_MALFORMED),
    ],
)
def test_hostile_criteria_are_refused_with_their_reason(criteria: Any, reason: str) -> None:
    refusal = OPEN.refusal(criteria)
    assert refusal is not None and refusal.reason == reason
    assert len(refusal.detail) < 300


def test_allowlisted_criteria_with_sampling_settings_pass_and_nothing_passes_by_default() -> None:
    allowed = _judged(
        judge_model="gemini-2.5-flash",
        numSamples=20,
        judgeModelConfig={"temperature": 0, "topP": 0.9, "top_k": 3, "seed": 7, "max_output_tokens": 1024},
    )
    assert OPEN.refusal(allowed) is None
    assert OPEN.refusal({"criteria": {"hallucinations_v1": 0.7}}) is None
    refusal = RequestCriteriaPolicy().refusal(allowed)
    assert refusal is not None and refusal.reason == REFUSED_NOT_ALLOWED


def test_the_process_own_criteria_are_trusted_whatever_their_samples() -> None:
    EvaluationCore(criteria=_judged(num_samples=21), judge_configured=False)  # ADK runs it: so do we


@pytest.fixture
def _no_judge(clean_genai_env: None) -> Iterator[None]:
    yield


def _refused_points(telemetry: MemoryTelemetry) -> dict[str, int]:
    points = telemetry.metric_points(semconv.METRIC_WORKER_CRITERIA_REFUSED)
    return {str(p.attributes[semconv.OTEL_EVAL_REFUSAL_REASON]): int(p.value) for p in points}


@pytest.mark.kafka
@pytest.mark.integration
@pytest.mark.usefixtures("_no_judge")
@pytest.mark.parametrize("honour", [False, True], ids=["default-off", "allowlisted"])
async def test_hostile_requests_on_a_real_broker_are_refused_counted_and_scored_with_the_worker_criteria(
    kafka_bootstrap: str, honour: bool, caplog: pytest.LogCaptureFixture
) -> None:
    requests_topic = random_topic("requests")
    await create_topics(kafka_bootstrap, [requests_topic])
    telemetry = MemoryTelemetry()
    settings = worker_settings(
        kafka_bootstrap,
        kafka_requests_topic=requests_topic,
        kafka_results_topic="",
        kafka_group_id=random_topic("group"),
        request_criteria=honour,
        request_metrics="safety_v1",
        request_judge_models="gemini-2.5-flash",
    )
    worker = Worker(settings, telemetry=telemetry.providers)  # the core as the CLI builds it, with the policy
    hostile = [
        _judged(num_samples=10_000_000),
        _judged(num_samples=10_000_000),
        _judged(judge_model_config={"tools": [{"code_execution": {}}], "temperature": 0}),
    ]
    allowed = _judged(judge_model="gemini-2.5-flash", num_samples=2, judge_model_config={"temperature": 0})
    sent = [request(n) for n in range(len(hostile) + 1)]
    for message, criteria in zip(sent, [*hostile, allowed], strict=True):
        message.criteria = criteria
    try:
        async with running_worker(worker):
            async with producer(kafka_bootstrap) as prod:
                for message in sent:
                    await prod.send_and_wait(requests_topic, message.model_dump_json().encode(), key=b"k")
            expected = len(sent) * len(EFFICIENCY_METRICS) + (1 if honour else 0)
            await wait_until_async(lambda: len(telemetry.events()) >= expected, timeout=60, what="the results")
        events = telemetry.events()
        by_trace: dict[str, set[str]] = {}
        for event in events:
            by_trace.setdefault(event.trace_id, set()).add(event.metric)
        for message in sent[:-1]:  # scored with the worker's own criteria (here the defaults: no judge configured)
            assert by_trace[message.trace_id] == set(EFFICIENCY_METRICS)
        allowed_metrics = by_trace[sent[-1].trace_id]
        assert ("safety_v1" in allowed_metrics) is honour
        counted = worker.metrics.snapshot()
        if honour:
            assert _refused_points(telemetry) == {REFUSED_NUM_SAMPLES: 2, REFUSED_JUDGE_CONFIG: 1}
            assert counted["criteria_refused.num_samples"] == 2
        else:
            assert _refused_points(telemetry) == {REFUSED_NOT_ALLOWED: len(sent)}
        said = [r.getMessage() for r in caplog.records if "criteria of a request refused" in r.getMessage()]
        assert len(said) == (2 if honour else 1)  # once per reason
        assert json.dumps(hostile[0]) not in " ".join(said)
    finally:
        telemetry.shutdown()
