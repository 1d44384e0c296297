"""The judge budget with a non-Gemini provider: an OpenAI judge (the real ``openai`` client over HTTP to the loopback
server's Chat Completions) priced from the built-in table, many invocations at once, whole evaluations only."""

from __future__ import annotations

import math

import pytest

from otel_eval import semconv
from otel_eval.conversations import Conversation
from otel_eval.evaluation import build_plan, evaluate_conversations
from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.judge.budget import BudgetSpec, CallEstimate, JudgeBudget
from otel_eval.judge.output_estimate import OUTPUT_TOKEN_ALLOWANCE
from otel_eval.metrics.hallucinations_v1 import call_sizes, steps_to_evaluate
from otel_eval.model import EvalStatus
from tests.judge.budget_helpers import Clock, answer, calls_by_answer, hallucination_judge, traced_invocation
from tests.judge.fake_gemini import FakeGemini

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")

MODEL = "gpt-4o-mini"
JUDGED = "hallucinations_v1"


def openai_judge(server: FakeGemini, budget: str, clock: Clock) -> JudgeClient:
    spec = BudgetSpec.parse(budget)
    assert spec is not None
    settings = JudgeSettings(
        default_model=MODEL, base_url=server.base_url, api_key="sk-test-budget-0000000000000000", budget=spec
    )
    judge = JudgeClient(settings)
    judge.budget = JudgeBudget(spec, settings.prices, clock=clock)
    return judge


async def test_an_openai_judge_spends_within_its_budget_whole_evaluations_only(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(hallucination_judge)
    clock = Clock()
    probe = openai_judge(fake_gemini, "1000", clock)
    assert probe.budget is not None
    steps = steps_to_evaluate(traced_invocation(0).invocation, intermediate=False)
    cost = probe.budget.estimate([CallEstimate(MODEL, size) for step in steps for size in call_sizes(step)])
    assert cost is not None and cost > 0  # gpt-4o-mini is priced by the built-in table
    budget = 4.5 * cost
    judge = openai_judge(fake_gemini, f"{JUDGED}={budget!r}", clock)
    plan = build_plan({JUDGED: None}, judge=judge)
    reports = await evaluate_conversations(
        [Conversation(invocations=[traced_invocation(i)]) for i in range(20)], plan, max_concurrency=20
    )
    await judge.aclose()

    assert {r.protocol for r in fake_gemini.generate_requests()} == {"openai.chat_completions"}
    spent = judge.accounting.total().cost_usd
    one_call = max(
        judge.settings.prices.cost(MODEL, math.ceil(len(r.prompt + r.system_instruction) / 4), OUTPUT_TOKEN_ALLOWANCE)
        or 0.0
        for r in fake_gemini.generate_requests()
    )
    assert 0 < spent <= budget + one_call
    results = [next(o.result for o in report.outcomes if o.metric.name == JUDGED) for report in reports]
    judged = [i for i, r in enumerate(results) if r.overall_eval_status is EvalStatus.PASSED]
    refused = [i for i, r in enumerate(results) if r.error_type == semconv.ERROR_TYPE_BUDGET_EXHAUSTED]
    assert len(judged) >= 2 and refused and len(judged) + len(refused) == 20
    assert calls_by_answer(fake_gemini) == {answer(i): (1, 1) for i in judged}
