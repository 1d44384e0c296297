"""tool_trajectory_avg_score: parity with ADK 2.13's TrajectoryEvaluator on generated inputs, plus the edge rules."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric
from google.adk.evaluation.eval_metrics import ToolTrajectoryCriterion as AdkToolTrajectoryCriterion
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_eval.errors import ConfigurationError
from otel_eval.model import EvalStatus
from tests.metrics._factories import Json, adk, call, evaluate, evaluator, invocation, scores, statuses, traced

METRIC = "tool_trajectory_avg_score"

# Small domains so that generated calls often coincide (repeated tools, equal args, 1 vs 1.0).
scalars = st.sampled_from([0, 1, 1.0, 2, 2.5, -1, True, None, "", "Paris", "paris", "東京", "ไทย"])
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["x", "y"]), inner, max_size=2),
    max_leaves=5,
)
args = st.none() | st.dictionaries(st.sampled_from(["city", "n", "opts"]), values, max_size=3)
calls = st.builds(
    lambda name, a, call_id: call(name, a, call_id=call_id),
    st.sampled_from(["get_weather", "search", "book"]),
    args,
    st.none() | st.sampled_from(["id-1", "id-2"]),
)
trajectories = st.lists(calls, max_size=4)
match_types = st.sampled_from(["EXACT", "IN_ORDER", "ANY_ORDER", "in-order", "any order", "Exact", 0, 1, 2])


@st.composite
def expected_from(draw: st.DrawFn, actual: list[Json]) -> list[Json]:
    """An expected trajectory: independent, or the actual one edited (shuffled, dropped, extended, args changed)."""
    kind = draw(st.sampled_from(["independent", "same", "shuffled", "drop", "extra", "changed"]))
    if kind == "independent" or not actual:
        return draw(trajectories)
    edited = [dict(c) for c in actual]
    if kind == "shuffled":
        return draw(st.permutations(edited))
    if kind == "drop":
        del edited[draw(st.integers(0, len(edited) - 1))]
    elif kind == "extra":
        edited.insert(draw(st.integers(0, len(edited))), draw(calls))
    elif kind == "changed":
        position = draw(st.integers(0, len(edited) - 1))
        edited[position] = {**edited[position], "args": draw(args)}
    return edited


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[Json], list[Json], Json | float]:
    count = draw(st.integers(1, 3))
    actual, expected = [], []
    for _ in range(count):
        actual_calls = draw(trajectories)
        expected_calls = draw(expected_from(actual_calls))
        actual.append(invocation(actual_calls, events=draw(st.booleans())))
        expected.append(invocation(expected_calls, events=draw(st.booleans())))
    threshold = draw(st.sampled_from([0.0, 0.3, 0.5, 2 / 3, 1.0]))
    if draw(st.booleans()):
        criterion: Json | float = threshold
    else:
        criterion = {"threshold": threshold, "match_type": draw(match_types)}
        if draw(st.booleans()):
            criterion["ignore_args"] = draw(st.booleans())
    return actual, expected, criterion


def adk_result(actual: list[Json], expected: list[Json], criterion: Json | float) -> Any:
    if isinstance(criterion, float):
        metric = AdkEvalMetric(metric_name=METRIC, threshold=criterion)
    else:
        metric = AdkEvalMetric(metric_name=METRIC, criterion=AdkToolTrajectoryCriterion.model_validate(criterion))
    return TrajectoryEvaluator(eval_metric=metric).evaluate_invocations(
        [adk(a) for a in actual], [adk(e) for e in expected]
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_scores_and_statuses_equal_adk(case: tuple[list[Json], list[Json], Json | float]) -> None:
    actual, expected, criterion = case
    theirs = adk_result(actual, expected, criterion)
    result = evaluate(evaluator(METRIC, criterion), actual, expected)
    assert result.overall_score == theirs.overall_score
    assert result.overall_eval_status.name == theirs.overall_eval_status.name
    assert scores(result) == [r.score for r in theirs.per_invocation_results]
    assert statuses(result) == [r.eval_status.name for r in theirs.per_invocation_results]


@pytest.mark.parametrize(
    ("match_type", "actual_calls", "expected_calls", "score"),
    [
        # No expected calls: EXACT needs none, IN_ORDER / ANY_ORDER pass regardless.
        ("EXACT", [], [], 1.0),
        ("EXACT", [call("a", {})], [], 0.0),
        ("IN_ORDER", [call("a", {})], [], 1.0),
        ("ANY_ORDER", [call("a", {})], [], 1.0),
        # Expected calls but none made.
        ("IN_ORDER", [], [call("a", {})], 0.0),
        ("ANY_ORDER", [], [call("a", {})], 0.0),
        # Dict equality: 1 == 1.0, key order irrelevant, None differs from {}, the call id is ignored.
        ("EXACT", [call("a", {"n": 1, "m": 2})], [call("a", {"m": 2, "n": 1.0})], 1.0),
        ("EXACT", [call("a", None)], [call("a", {})], 0.0),
        ("EXACT", [call("a", {}, call_id="x")], [call("a", {}, call_id="y")], 1.0),
        # Names are case-sensitive; list order inside args matters.
        ("EXACT", [call("A", {})], [call("a", {})], 0.0),
        ("EXACT", [call("a", {"l": [1, 2]})], [call("a", {"l": [2, 1]})], 0.0),
        # IN_ORDER allows extras but not reordering; ANY_ORDER allows both but needs distinct calls.
        ("IN_ORDER", [call("a", {}), call("x", {}), call("b", {})], [call("a", {}), call("b", {})], 1.0),
        ("IN_ORDER", [call("b", {}), call("a", {})], [call("a", {}), call("b", {})], 0.0),
        ("ANY_ORDER", [call("b", {}), call("x", {}), call("a", {})], [call("a", {}), call("b", {})], 1.0),
        ("ANY_ORDER", [call("a", {})], [call("a", {}), call("a", {})], 0.0),
    ],
)
def test_rules(match_type: str, actual_calls: list[Json], expected_calls: list[Json], score: float) -> None:
    metric = evaluator(METRIC, {"threshold": 1.0, "match_type": match_type})
    result = evaluate(metric, [invocation(actual_calls)], [invocation(expected_calls)])
    assert scores(result) == [score]
    assert result.overall_score == score
    assert result.overall_eval_status is (EvalStatus.PASSED if score == 1.0 else EvalStatus.FAILED)


def test_ignore_args_compares_names_only() -> None:
    actual, expected = [invocation([call("a", {"n": 1})])], [invocation([call("a", {"n": 2})])]
    assert evaluate(evaluator(METRIC, {"threshold": 1.0, "ignoreArgs": True}), actual, expected).overall_score == 1.0
    assert evaluate(evaluator(METRIC, 1.0), actual, expected).overall_score == 0.0


def test_overall_is_the_mean_and_failed_invocations_carry_calls() -> None:
    actual = [invocation([call("a", {"n": 1})]), invocation([call("b", {"q": "x"})])]
    expected = [invocation([call("a", {"n": 1})]), invocation([call("b", {"q": "y"})])]
    result = evaluate(evaluator(METRIC), actual, expected)
    assert result.overall_score == 0.5
    assert result.overall_eval_status is EvalStatus.FAILED
    assert evaluator(METRIC).threshold == 1.0  # the default when requested by name
    passed, failed = result.per_invocation_results
    assert passed.details is None and passed.explanation is None
    assert failed.details is not None
    assert {side: [(c.name, c.args) for c in calls] for side, calls in failed.details.items()} == {
        "expected": [("b", {"q": "y"})],
        "actual": [("b", {"q": "x"})],
    }
    assert failed.explanation == 'EXACT: call 1: expected b({"q": "y"}), got b({"q": "x"})'


@pytest.mark.parametrize(
    ("match_type", "actual_calls", "expected_calls", "reason"),
    [
        ("EXACT", [call("a", {})], [call("a", {}), call("b", {})], "EXACT: expected 2 tool call(s), got 1"),
        (
            "IN_ORDER",
            [call("b", {}), call("a", {})],
            [call("a", {}), call("b", {})],
            "IN_ORDER: expected call 2 b({}) not found in order among the actual calls",
        ),
        (
            "ANY_ORDER",
            [call("a", {"n": 1})],
            [call("a", {"n": 2})],
            'ANY_ORDER: expected call 1 a({"n": 2}) not found among the actual calls',
        ),
    ],
)
def test_mismatch_reasons(match_type: str, actual_calls: list[Json], expected_calls: list[Json], reason: str) -> None:
    metric = evaluator(METRIC, {"threshold": 1.0, "match_type": match_type})
    result = evaluate(metric, [invocation(actual_calls)], [invocation(expected_calls)])
    assert result.per_invocation_results[0].explanation == reason


def test_no_expected_invocations_is_not_evaluated_with_reason() -> None:
    result = evaluate(evaluator(METRIC), [invocation([call("a", {})])], None)
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED
    assert result.overall_score is None
    assert result.error_type == "no_reference"
    assert "expected invocations" in (result.explanation or "")
    assert statuses(result) == ["NOT_EVALUATED"]


def test_length_mismatch_is_not_evaluated_where_adk_raises() -> None:
    actual, expected = [invocation(), invocation()], [invocation()]
    with pytest.raises(ValueError, match="same length"):
        adk_result(actual, expected, 1.0)
    result = evaluate(evaluator(METRIC), actual, expected)
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED
    assert result.error_type == "invocation_count_mismatch"
    assert "2 actual invocation(s) cannot be paired with 1 expected" in (result.explanation or "")


def test_uncaptured_content_is_not_evaluated_unless_names_only() -> None:
    actual = [traced(invocation([call("a", {})]), content_captured=False)]
    expected = [invocation([call("a", {"n": 1})])]
    result = evaluate(evaluator(METRIC), actual, expected)
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED
    assert result.per_invocation_results[0].error_type == "content_not_captured"
    names_only = evaluate(evaluator(METRIC, {"threshold": 1.0, "ignore_args": True}), actual, expected)
    assert names_only.overall_score == 1.0


@pytest.mark.parametrize(
    ("criterion", "message"),
    [
        ({"threshold": 1.0, "match_type": "SOMETIMES"}, "match_type: 'SOMETIMES' is not one of EXACT, IN_ORDER"),
        ({"threshold": 1.0, "matchType": 7}, "match_type: 7 is not one of EXACT, IN_ORDER, ANY_ORDER"),
    ],
)
def test_bad_criteria_are_clear_configuration_errors(criterion: Json, message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        evaluator(METRIC, criterion)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
