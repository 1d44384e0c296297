"""inference_call_count_v1: from the spans' model-call count, else ADK 2.13's count of model events (parity)."""

from __future__ import annotations

from google.adk.evaluation._efficiency_evaluators import _InferenceCallCountV1Evaluator
from hypothesis import given, settings

from otel_eval.model import EvalStatus
from tests.metrics._efficiency_cases import conversations
from tests.metrics._factories import Json, adk, evaluate, evaluator, invocation, scores, statuses, traced

METRIC = "inference_call_count_v1"


@settings(max_examples=100, deadline=None)
@given(conversations)
def test_values_equal_adk_when_spans_show_no_model_calls(actual: list[Json]) -> None:
    theirs = _InferenceCallCountV1Evaluator().evaluate_invocations([adk(a) for a in actual])
    result = evaluate(evaluator(METRIC), actual, None)
    assert result.overall_score == theirs.overall_score
    assert scores(result) == [r.score for r in theirs.per_invocation_results]
    assert statuses(result) == [r.eval_status.name for r in theirs.per_invocation_results]


def test_model_call_count_from_the_spans() -> None:
    actual = [
        traced(invocation(), model_call_count=3),
        traced(invocation(), model_call_count=1),
        traced(invocation()),  # no model-call spans and no ADK events: not available
    ]
    result = evaluate(evaluator(METRIC), actual, None)
    assert scores(result) == [3.0, 1.0, None]
    assert statuses(result) == ["INFORMATIONAL"] * 3
    assert result.per_invocation_results[2].explanation == "the trace shows no model calls for this invocation"
    assert result.overall_score == 2.0  # the mean of the available values
    assert result.overall_eval_status is EvalStatus.INFORMATIONAL


def test_no_value_anywhere_is_informational_with_reason() -> None:
    result = evaluate(evaluator(METRIC), [traced(invocation())], None)
    assert result.overall_score is None
    assert result.overall_eval_status is EvalStatus.INFORMATIONAL
    assert result.explanation == "the trace shows no model calls for this invocation"
