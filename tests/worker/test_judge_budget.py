"""The judge budget in the evaluation core (``otel-eval run``'s and both workers'): many invocations at once spend
within the budget, whole evaluations only, deterministic metrics first and always, priority invocations judged first.
"""

from __future__ import annotations

import asyncio
import math

import pytest
from click.testing import CliRunner
from google.genai import types as genai_types

from otel_eval import semconv
from otel_eval.cli import main
from otel_eval.conversations import Conversation
from otel_eval.emit import Emitters
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.evaluation import build_plan, evaluate_conversations
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.judge.output_estimate import OUTPUT_TOKEN_ALLOWANCE
from otel_eval.model import EvalStatus, Invocation
from otel_eval.model.messages import EvaluationRequest
from tests.judge.budget_helpers import (
    MODEL,
    Clock,
    answer,
    budgeted_judge,
    calls_by_answer,
    estimated_cost,
    hallucination_judge,
    traced_invocation,
)
from tests.judge.fake_gemini import FakeGemini
from tests.processor.telemetry import Telemetry

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")

JUDGED = "hallucinations_v1"
DETERMINISTIC = "tool_call_count_v1"


async def test_many_invocations_at_once_spend_within_the_budget_and_never_half_an_evaluation(
    fake_gemini: FakeGemini,
) -> None:
    fake_gemini.set_responder(hallucination_judge)
    clock = Clock()  # frozen: no refill while the test runs, the bound is the bucket
    probe = budgeted_judge(fake_gemini, "1000", clock)
    cost = estimated_cost(probe, traced_invocation(0))
    budget = 7.5 * cost
    judge = budgeted_judge(fake_gemini, f"{JUDGED}={budget!r}", clock)
    plan = build_plan({JUDGED: None, DETERMINISTIC: None}, judge=judge)
    conversations = [Conversation(invocations=[traced_invocation(i)]) for i in range(40)]

    reports = await evaluate_conversations(conversations, plan, max_concurrency=40)

    spent = judge.accounting.total().cost_usd
    one_call = max(
        judge.settings.prices.cost(MODEL, math.ceil(len(r.prompt + r.system_instruction) / 4), OUTPUT_TOKEN_ALLOWANCE)
        or 0.0
        for r in fake_gemini.generate_requests()
    )
    assert 0 < spent <= budget + one_call
    statuses = [{o.metric.name: o.result for o in report.outcomes} for report in reports]
    judged = [i for i, s in enumerate(statuses) if s[JUDGED].overall_eval_status is EvalStatus.PASSED]
    refused = [i for i, s in enumerate(statuses) if s[JUDGED].error_type == semconv.ERROR_TYPE_BUDGET_EXHAUSTED]
    assert len(judged) >= 5 and len(refused) >= 30 and len(judged) + len(refused) == 40
    calls = calls_by_answer(fake_gemini)
    assert calls == {answer(i): (1, 1) for i in judged}  # a segmenter call always has its validator call
    assert all(s[DETERMINISTIC].overall_eval_status is EvalStatus.INFORMATIONAL for s in statuses)
    assert judge.max_in_flight > 1  # the evaluations really ran at once


async def test_priority_invocations_are_judged_first_when_the_budget_cannot_cover_all(
    fake_gemini: FakeGemini,
) -> None:
    fake_gemini.set_responder(hallucination_judge)
    clock = Clock()
    probe = budgeted_judge(fake_gemini, "1000", clock)
    cost = estimated_cost(probe, traced_invocation(0))
    judge = budgeted_judge(fake_gemini, f"{20.5 * cost!r}", clock)  # '*': every judged metric
    plan = build_plan({"response_match_score": None, JUDGED: None, DETERMINISTIC: None}, judge=judge)
    conversations = [Conversation(invocations=[traced_invocation(i)]) for i in range(30)]
    conversations[3].invocations[0].ended_in_error = True
    conversations[11].invocations[0].feedback = "Thumbs_Down"
    conversations[19].invocations[0].ended_in_error = True
    failing = conversations[27]  # fails a deterministic metric: its answer is far from the expected one
    failing.expected = [
        Invocation(
            invocation_id="expected",
            user_content=genai_types.Content(role="user", parts=[genai_types.Part(text="Is it fine?")]),
            final_response=genai_types.Content(role="model", parts=[genai_types.Part(text="No, it is broken.")]),
        )
    ]
    conversations[8].invocations[0].feedback = "thumbs_up"  # not negative: a normal invocation

    reports = await evaluate_conversations(conversations, plan, max_concurrency=30)

    results = [{o.metric.name: o.result for o in report.outcomes} for report in reports]
    assert results[27]["response_match_score"].overall_eval_status is EvalStatus.FAILED
    judged = {i for i, r in enumerate(results) if r[JUDGED].overall_eval_status is EvalStatus.PASSED}
    assert {3, 11, 19, 27} <= judged  # every priority invocation, though normal ones ran out first
    refused = {i for i, r in enumerate(results) if r[JUDGED].error_type == semconv.ERROR_TYPE_BUDGET_EXHAUSTED}
    assert refused and not refused & {3, 11, 19, 27} and judged | refused == set(range(30))
    assert len(judged - {3, 11, 19, 27}) <= 16  # normal ones stop at the reserve (a fifth of 20.5 evaluations)
    # Deterministic metrics ran on every invocation, budget or not, and are reported in plan order.
    assert all(list(r) == ["response_match_score", JUDGED, DETERMINISTIC] for r in results)
    assert all(r[DETERMINISTIC].overall_eval_status is EvalStatus.INFORMATIONAL for r in results)


async def test_the_worker_core_reports_budget_refusals_as_not_evaluated_and_counts_them(
    fake_gemini: FakeGemini, telemetry: Telemetry
) -> None:
    fake_gemini.set_responder(hallucination_judge)
    clock = Clock()
    probe = budgeted_judge(fake_gemini, "1000", clock)
    cost = estimated_cost(probe, traced_invocation(0))
    judge = budgeted_judge(fake_gemini, f"{JUDGED}={4.5 * cost!r}", clock)
    pipeline = PipelineMetrics(telemetry.meter_provider)
    core = EvaluationCore(
        criteria={JUDGED: 0.8},
        judge=judge,
        emitters=Emitters.create(**telemetry.providers()),
        pipeline=pipeline,
    )
    requests = [EvaluationRequest(invocations=[traced_invocation(i)]) for i in range(12)]
    requests[9].invocations[0].ended_in_error = True

    batches = await asyncio.gather(*(core.evaluate(r) for r in requests))

    judged = [r for batch in batches for r in batch if r.metric_name == JUDGED]
    passed = {r.invocation_id for r in judged if r.eval_status is EvalStatus.PASSED}
    refused = [r for r in judged if r.error_type == semconv.ERROR_TYPE_BUDGET_EXHAUSTED]
    assert "inv-9" in passed and len(passed) <= 4 and len(passed) + len(refused) == 12
    assert all(r.label == semconv.LABEL_NOT_EVALUATED and r.score is None for r in refused)
    assert pipeline.snapshot()[f"evaluation.errors.{semconv.ERROR_TYPE_BUDGET_EXHAUSTED}"] == len(refused)
    assert all(any(r.metric_name == DETERMINISTIC for r in batch) for batch in batches)
    assert calls_by_answer(fake_gemini) == {answer(int(i.removeprefix("inv-"))): (1, 1) for i in passed}


def test_a_bad_budget_stops_the_worker_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EVAL_JUDGE_BUDGET", "hallucinations_v1=1,=2")
    result = CliRunner().invoke(main, ["worker", "--telemetry", "none"])
    assert result.exit_code == 2
    assert "OTEL_EVAL_JUDGE_BUDGET='hallucinations_v1=1,=2': entry '=2' has no metric name" in result.output


def test_a_budget_naming_an_unknown_metric_stops_the_worker_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EVAL_JUDGE_BUDGET", "halucinations_v1=1")
    result = CliRunner().invoke(main, ["worker", "--telemetry", "none"])
    assert result.exit_code == 2, result.output
    assert "OTEL_EVAL_JUDGE_BUDGET: unknown metric 'halucinations_v1'; did you mean hallucinations_v1?" in (
        result.output
    )
