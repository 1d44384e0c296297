"""The judge budget: its syntax and start-up errors, the bucket's refill on an injected clock, the priority reserve,
and a judged metric refused without a call (NOT_EVALUATED, ``budget_exhausted``, counted)."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otel_eval import semconv
from otel_eval.errors import ConfigurationError
from otel_eval.judge import JudgeClient, JudgeSettings, PriceTable
from otel_eval.judge.budget import BudgetSpec, CallEstimate, JudgeBudget, Refusal, format_usd
from otel_eval.judge.output_estimate import OutputEstimates
from otel_eval.judge.priority import invocation_key, prioritising
from otel_eval.metrics.hallucinations_v1 import HallucinationsV1Evaluator
from otel_eval.model import EvalStatus
from tests.collected import settled
from tests.judge.budget_helpers import (
    MODEL,
    Clock,
    budgeted_judge,
    calls_by_answer,
    estimated_cost,
    hallucination_judge,
    thinking_hallucination_judge,
    traced_invocation,
)
from tests.judge.fake_gemini import FakeGemini
from tests.judge.helpers import TEST_KEY


def test_the_budget_syntax() -> None:
    assert BudgetSpec.parse("") is None
    assert BudgetSpec.parse("2.5") == BudgetSpec({"*": 2.5})
    spec = BudgetSpec.parse(" hallucinations_v1=1.0, safety_v1 = $0.5 ,*=2 ")
    assert spec == BudgetSpec({"hallucinations_v1": 1.0, "safety_v1": 0.5, "*": 2.0})
    assert spec.bucket_name("safety_v1") == "safety_v1"
    assert spec.bucket_name("rubric_based_final_response_quality_v1") == "*"
    assert BudgetSpec({"safety_v1": 1.0}).bucket_name("hallucinations_v1") is None  # not named, no '*': no limit


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("abc", "entry 'abc': expected a USD-per-hour amount >= 0"),
        ("-1", "entry '-1': expected a USD-per-hour amount >= 0"),
        ("nan", "expected a USD-per-hour amount"),
        ("hallucinations_v1=", "entry 'hallucinations_v1=': expected a USD-per-hour amount"),
        ("=2", "entry '=2' has no metric name"),
        ("safety_v1=1,safety_v1=2", "'safety_v1' is given twice"),
        ("1,2", "'*' is given twice"),
    ],
)
def test_a_bad_budget_is_a_start_up_error_naming_the_variable(value: str, problem: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        JudgeSettings.from_env({"OTEL_EVAL_JUDGE_BUDGET": value})
    assert str(caught.value).startswith(f"OTEL_EVAL_JUDGE_BUDGET={value!r}: ")
    assert problem in str(caught.value)


def test_a_budget_with_an_unpriced_default_judge_model_refuses_to_start() -> None:
    settings = JudgeSettings.from_env({"OTEL_EVAL_JUDGE_BUDGET": "1", "OTEL_EVAL_JUDGE_MODEL": "in-house-judge"})
    with pytest.raises(
        ConfigurationError, match="judge model 'in-house-judge' has no price; add it to OTEL_EVAL_JUDGE"
    ):
        JudgeClient(settings.with_overrides(api_key=TEST_KEY))
    priced = JudgeSettings.from_env(
        {
            "OTEL_EVAL_JUDGE_BUDGET": "1",
            "OTEL_EVAL_JUDGE_MODEL": "in-house-judge",
            "OTEL_EVAL_JUDGE_PRICES": '{"in-house-judge": {"input": 0.1, "output": 0.2}}',
        }
    )
    assert JudgeClient(priced.with_overrides(api_key=TEST_KEY)).budget is not None


def test_the_bucket_refills_continuously_up_to_one_hour_and_keeps_a_reserve_for_priority() -> None:
    clock = Clock()
    # $10 an hour; a call costs its output allowance (1024 tokens) at $1 per 1024 tokens: $1.
    dollar = JudgeBudget(BudgetSpec({"*": 10.0}), PriceTable({MODEL: (0.0, 1e6 / 1024)}), clock=clock, reserve=0.2)
    call = [CallEstimate(MODEL, 100)]
    assert dollar.estimate(call) == pytest.approx(1.0)
    admitted = [dollar.admit("safety_v1", call) for _ in range(10)]
    assert [type(a).__name__ for a in admitted] == ["Admission"] * 8 + ["Refusal"] * 2  # $2 kept for priority
    assert type(dollar.admit("safety_v1", call, priority=True)).__name__ == "Admission"
    assert type(dollar.admit("safety_v1", call, priority=True)).__name__ == "Admission"
    assert type(dollar.admit("safety_v1", call, priority=True)).__name__ == "Refusal"  # empty
    clock.advance(360)  # a tenth of an hour: $1 back
    assert type(dollar.admit("safety_v1", call, priority=True)).__name__ == "Admission"
    clock.advance(10 * 3600)  # idle for hours: back to one hour's worth, no more
    assert dollar.buckets["*"].level == pytest.approx(10.0)


def test_unpriced_models_are_refused_under_a_budget() -> None:
    budget = JudgeBudget(BudgetSpec({"*": 10.0}), PriceTable({}), clock=Clock())
    refusal = budget.admit("safety_v1", [CallEstimate("mystery-judge", 10)])
    assert type(refusal).__name__ == "Refusal" and "mystery-judge has no price" in refusal.reason  # type: ignore[union-attr]


async def test_whole_invocations_are_refused_without_a_call_and_judged_again_after_the_refill(
    fake_gemini: FakeGemini,
) -> None:
    fake_gemini.set_responder(hallucination_judge)
    clock = Clock()
    probe = budgeted_judge(fake_gemini, "1000", clock, input_price=0.0)
    cost = estimated_cost(probe, traced_invocation(0))  # exact: output tokens only, the judge uses all its allowance
    judge = budgeted_judge(fake_gemini, f"hallucinations_v1={1.5 * cost!r}", clock, input_price=0.0)
    reader = InMemoryMetricReader()
    judge.use_meter_provider(MeterProvider(metric_readers=[reader]))
    metric = HallucinationsV1Evaluator(judge=judge)

    first = await metric.evaluate([traced_invocation(1)])
    second = await metric.evaluate([traced_invocation(2)])
    assert first.overall_eval_status is EvalStatus.PASSED
    assert second.overall_eval_status is EvalStatus.NOT_EVALUATED
    assert second.error_type == semconv.ERROR_TYPE_BUDGET_EXHAUSTED == "budget_exhausted"
    assert "judge budget exhausted" in (second.explanation or "")
    assert calls_by_answer(fake_gemini) == {"Answer 001 is fine.": (1, 1)}  # invocation 2: no call at all

    clock.advance(1800)  # half an hour refills 0.75 of one evaluation: 1.25 in the bucket, 0.3 kept back
    assert (await metric.evaluate([traced_invocation(3)])).error_type == "budget_exhausted"
    with prioritising([invocation_key(traced_invocation(4))]):  # a priority invocation may use the reserve
        assert (await metric.evaluate([traced_invocation(4)])).overall_eval_status is EvalStatus.PASSED
    clock.advance(3600)
    assert (await metric.evaluate([traced_invocation(5)])).overall_eval_status is EvalStatus.PASSED
    assert set(calls_by_answer(fake_gemini)) == {"Answer 001 is fine.", "Answer 004 is fine.", "Answer 005 is fine."}

    assert judge.accounting.budget_refusals == 2
    assert "2 evaluation(s) refused by the judge budget" in judge.summary_line()
    points = [
        point
        for metric_data in settled(reader).resource_metrics[0].scope_metrics[0].metrics  # type: ignore[union-attr]
        if metric_data.name == semconv.METRIC_JUDGE_BUDGET_REFUSALS
        for point in metric_data.data.data_points
    ]
    assert [(p.value, dict(p.attributes)) for p in points] == [
        (2, {semconv.GEN_AI_EVALUATION_NAME: "hallucinations_v1", semconv.OTEL_EVAL_JUDGE_MODEL: MODEL})
    ]


async def test_the_output_estimate_learns_the_replies_real_size_and_admits_more_under_the_same_budget(
    fake_gemini: FakeGemini,
) -> None:
    # Replies of 100 output tokens (60 answer + 40 thinking), far below the 1,024 reserved per call at first. Output
    # tokens only are priced, at $4 per million: the budget is 10,100 tokens' worth an hour, 2,020 kept for priority.
    fake_gemini.set_responder(thinking_hallucination_judge(candidates=60, thoughts=40))
    budget = f"hallucinations_v1={10_100 * 4 / 1e6!r}"
    clock = Clock()  # frozen: no refill, the bucket is the bound
    learning = budgeted_judge(fake_gemini, budget, clock, input_price=0.0)
    fixed = budgeted_judge(fake_gemini, budget, clock, input_price=0.0, outputs=OutputEstimates(window=0))
    assert learning.budget is not None and fixed.budget is not None

    async def judge_one_by_one(judge: JudgeClient, first: int) -> tuple[list[bool], list[int]]:
        metric, admitted, estimates = HallucinationsV1Evaluator(judge=judge), [], []
        for index in range(first, first + 60):
            result = await metric.evaluate([traced_invocation(index)])
            admitted.append(result.overall_eval_status is EvalStatus.PASSED)
            assert judge.budget is not None
            estimates.append(judge.budget.outputs.tokens(MODEL))
        return admitted, estimates

    fixed_admitted, fixed_estimates = await judge_one_by_one(fixed, 0)
    learned_admitted, learned_estimates = await judge_one_by_one(learning, 100)

    # Two calls an evaluation: the estimate leaves the allowance with the 29th reply (the 15th evaluation) and is
    # then the replies' real output, thinking included.
    assert learned_estimates == [1024] * 14 + [100] * 46
    assert fixed_estimates == [1024] * 60
    # Admitted while the bucket keeps its reserve after the reservation: 31 evaluations with 2 x 1,024 tokens
    # reserved each, 40 once 2 x 100 are.
    assert fixed_admitted == [True] * 31 + [False] * 29
    assert learned_admitted == [True] * 40 + [False] * 20
    assert learning.accounting.total().output_tokens == 40 * 2 * 100

    # An hour later, 50 evaluations at once: the reservations are exact, so exactly the budget's 40 run.
    clock.advance(3600)
    metric = HallucinationsV1Evaluator(judge=learning)
    spent_before = learning.accounting.total().cost_usd
    results = await asyncio.gather(*(metric.evaluate([traced_invocation(200 + i)]) for i in range(50)))
    passed = [r for r in results if r.overall_eval_status is EvalStatus.PASSED]
    refused = [r for r in results if r.error_type == semconv.ERROR_TYPE_BUDGET_EXHAUSTED]
    assert len(passed) == 40 and len(refused) == 10
    assert learning.accounting.total().cost_usd - spent_before == pytest.approx(40 * 2 * 100 * 4 / 1e6)
    assert learning.max_in_flight > 1


def test_budget_amounts_print_in_plain_decimals() -> None:
    assert [format_usd(v) for v in (1e-05, 2.5, 2.0, 0.0, 1234.5678, 1e20)] == [
        "0.00001",
        "2.5",
        "2",
        "0",
        "1234.5678",
        "100000000000000000000",
    ]
    spec = BudgetSpec.parse("hallucinations_v1=1e-05,*=2", source="--budget")
    assert spec is not None and spec.describe() == "hallucinations_v1=$0.00001/h, *=$2/h"
    refusal = JudgeBudget(spec, PriceTable({MODEL: (1.0, 1.0)}), clock=Clock()).admit(
        "hallucinations_v1", [CallEstimate(MODEL, 400)]
    )
    assert isinstance(refusal, Refusal)
    assert "of $0.00001/h left" in refusal.reason and "e-0" not in refusal.reason
