"""tool_call_count_v1: parity with ADK 2.13's _ToolCallCountV1Evaluator, and its informational rules."""

from __future__ import annotations

import pytest
from google.adk.evaluation._efficiency_evaluators import _ToolCallCountV1Evaluator
from hypothesis import given, settings

from otel_eval.errors import ConfigurationError
from otel_eval.model import BaseCriterion, EvalStatus
from tests.metrics._efficiency_cases import conversations
from tests.metrics._factories import REGISTRY, Json, adk, call, evaluate, evaluator, invocation, scores, statuses

METRIC = "tool_call_count_v1"


@settings(max_examples=100, deadline=None)
@given(conversations)
def test_values_equal_adk(actual: list[Json]) -> None:
    theirs = _ToolCallCountV1Evaluator().evaluate_invocations([adk(a) for a in actual])
    result = evaluate(evaluator(METRIC), actual, None)
    assert result.overall_score == theirs.overall_score
    assert result.overall_eval_status.name == theirs.overall_eval_status.name == "INFORMATIONAL"
    assert scores(result) == [r.score for r in theirs.per_invocation_results]
    assert statuses(result) == [r.eval_status.name for r in theirs.per_invocation_results]


def test_counts_calls_per_invocation_and_averages() -> None:
    actual = [
        invocation([call("a", {}), call("a", {}), call("b", {})]),
        invocation([]),
        invocation([call("c")], events=True),
    ]
    result = evaluate(evaluator(METRIC), actual, [invocation(), invocation(), invocation()])  # a reference is ignored
    assert scores(result) == [3.0, 0.0, 1.0]
    assert result.overall_score == pytest.approx(4 / 3)
    assert result.overall_eval_status is EvalStatus.INFORMATIONAL
    assert statuses(result) == ["INFORMATIONAL"] * 3


def test_no_invocations_is_informational_without_value() -> None:
    result = evaluate(evaluator(METRIC), [], None)
    assert (result.overall_score, result.overall_eval_status) == (None, EvalStatus.INFORMATIONAL)


def test_a_threshold_is_rejected_as_adk_does() -> None:
    with pytest.raises(ValueError, match="does not support a threshold"):
        from google.adk.evaluation.eval_metrics import EvalMetric

        _ToolCallCountV1Evaluator(EvalMetric(metric_name=METRIC, threshold=1.0))
    with pytest.raises(ConfigurationError, match="metric 'tool_call_count_v1' is informational and takes no threshold"):
        REGISTRY.create(METRIC, BaseCriterion(threshold=1.0))


def test_registry_info() -> None:
    info = REGISTRY.info(METRIC)
    assert (info.min_value, info.max_value, info.informational, info.requires_reference) == (0.0, None, True, False)
    assert info.value_range == ">= 0"
