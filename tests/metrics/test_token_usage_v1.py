"""token_usage_v1: from the spans' token usage, else ADK 2.13's sums over usage_metadata (parity incl. details)."""

from __future__ import annotations

import pytest
from google.adk.evaluation._efficiency_evaluators import _TokenUsageV1Evaluator
from hypothesis import given, settings

from otel_eval.model import EvalStatus, TokenUsage, TokenUsageDetails
from tests.metrics._efficiency_cases import conversations
from tests.metrics._factories import Json, adk, evaluate, evaluator, invocation, scores, statuses, traced

METRIC = "token_usage_v1"


@settings(max_examples=150, deadline=None)
@given(conversations)
def test_values_and_breakdown_equal_adk_without_span_usage(actual: list[Json]) -> None:
    theirs = _TokenUsageV1Evaluator().evaluate_invocations([adk(a) for a in actual])
    result = evaluate(evaluator(METRIC), actual, None)
    assert result.overall_score == theirs.overall_score
    assert result.overall_eval_status.name == theirs.overall_eval_status.name
    assert scores(result) == [r.score for r in theirs.per_invocation_results]
    assert statuses(result) == [r.eval_status.name for r in theirs.per_invocation_results]
    ours_details = [r.token_usage_details for r in result.per_invocation_results]
    adk_details = [r.token_usage_details for r in theirs.per_invocation_results]
    assert [d.model_dump() if d else None for d in ours_details] == [d.model_dump() if d else None for d in adk_details]


def test_usage_from_the_spans() -> None:
    actual = [
        traced(invocation(), token_usage=TokenUsage(input_tokens=100, output_tokens=20, cached_input_tokens=60)),
        traced(invocation(), token_usage=TokenUsage(output_tokens=7, reasoning_tokens=3)),
        traced(invocation()),
    ]
    result = evaluate(evaluator(METRIC), actual, None)
    assert scores(result) == [120.0, 7.0, None]
    assert statuses(result) == ["INFORMATIONAL"] * 3
    assert result.per_invocation_results[0].token_usage_details == TokenUsageDetails(
        total_tokens=120, input_tokens=100, output_tokens=20, cached_tokens=60
    )
    assert result.per_invocation_results[1].token_usage_details == TokenUsageDetails(
        total_tokens=7, output_tokens=7, reasoning_tokens=3
    )
    assert result.per_invocation_results[2].explanation == "no token usage reported for this invocation"
    # ADK's average: over every invocation, a missing total counting as zero.
    assert result.overall_score == pytest.approx(127 / 3)
    assert result.overall_eval_status is EvalStatus.INFORMATIONAL


def test_span_usage_wins_over_invocation_events() -> None:
    data = invocation()
    data["intermediate_data"] = {
        "invocation_events": [{"author": "a", "usage_metadata": {"prompt_token_count": 1, "candidates_token_count": 1}}]
    }
    result = evaluate(evaluator(METRIC), [traced(data, token_usage=TokenUsage(input_tokens=50, output_tokens=5))], None)
    assert scores(result) == [55.0]
