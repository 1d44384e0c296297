"""tool_trajectory_f1: hand-worked cases per rule of the definition (ADK proposal #5306)."""

from __future__ import annotations

import pytest

from otel_eval.errors import ConfigurationError
from otel_eval.model import EvalStatus
from tests.metrics._factories import Json, call, evaluate, evaluator, invocation, scores, statuses, traced

METRIC = "tool_trajectory_f1"
A, B, C = call("a", {"n": 1}), call("b", {"n": 2}), call("c", {})


@pytest.mark.parametrize(
    ("actual_calls", "expected_calls", "criterion", "score", "precision", "recall"),
    [
        ([], [], {}, 1.0, None, None),  # nothing expected, nothing done
        ([A], [], {}, 0.0, 0.0, None),  # exactly one side empty
        ([], [A], {}, 0.0, None, 0.0),
        ([A, B], [A, B], {}, 1.0, 1.0, 1.0),
        ([A, B, C], [A, B], {}, 0.8, 2 / 3, 1.0),  # an extra call costs precision: 2*2/(3+2)
        ([A], [A, B], {}, 2 / 3, 1.0, 0.5),  # a missing call costs recall: 2*1/(1+2)
        ([A, C], [A, B], {}, 0.5, 0.5, 0.5),
        ([C], [A, B], {}, 0.0, 0.0, 0.0),  # no pair at all
        # Args count under name_and_args (1 == 1.0; missing args equal {}), not under name_only.
        ([call("a", {"n": 1.0})], [call("a", {"n": 1})], {}, 1.0, 1.0, 1.0),
        ([call("a", {"n": 9})], [A], {}, 0.0, 0.0, 0.0),
        ([call("a", {"n": 9})], [A], {"match_mode": "name_only"}, 1.0, 1.0, 1.0),
        ([call("c")], [call("c", {})], {}, 1.0, 1.0, 1.0),
        ([call("a", {"n": 1, "x": 0})], [A], {}, 0.0, 0.0, 0.0),  # extra actual args make the args differ
        # Order: unordered by default; ordered pairs by a forward scan.
        ([B, A], [A, B], {}, 1.0, 1.0, 1.0),
        ([B, A], [A, B], {"ordered": True}, 0.5, 0.5, 0.5),
        ([A, C, B], [A, B], {"ordered": True}, 0.8, 2 / 3, 1.0),
        # Repeated calls pair one to one.
        ([A], [A, A], {}, 2 / 3, 1.0, 0.5),
        ([A, A, A], [A, A], {}, 0.8, 2 / 3, 1.0),
        ([A, A], [A, A], {"ordered": True}, 1.0, 1.0, 1.0),
        # name_and_required_args: the criterion's required_args decide which keys count.
        (
            [call("a", {"n": 1, "page": 2})],
            [call("a", {"n": 1, "page": 1})],
            {"match_mode": "name_and_required_args", "required_args": {"a": ["n"]}},
            1.0,
            1.0,
            1.0,
        ),
        (
            [call("a", {"n": 1, "page": 2})],
            [call("a", {"n": 1, "page": 1})],
            {"match_mode": "name_and_required_args"},  # no declaration: every expected key is required
            0.0,
            0.0,
            0.0,
        ),
        (
            [call("a", {"page": 2})],
            [call("a", {"page": 1})],
            {"match_mode": "name_and_required_args", "requiredArgs": {"a": ["n"]}},  # absent on both sides: equal
            1.0,
            1.0,
            1.0,
        ),
    ],
)
def test_definition(
    actual_calls: list[Json],
    expected_calls: list[Json],
    criterion: Json,
    score: float,
    precision: float | None,
    recall: float | None,
) -> None:
    metric = evaluator(METRIC, {"threshold": 0.5, **criterion})
    entry = evaluate(metric, [invocation(actual_calls)], [invocation(expected_calls)]).per_invocation_results[0]
    assert entry.score == pytest.approx(score, abs=1e-12)
    if entry.details is not None:
        assert entry.details["precision"] == pytest.approx(precision)
        assert entry.details["recall"] == pytest.approx(recall)
    else:
        assert score == 1.0 and precision is None and recall is None


def test_required_args_from_the_tool_declaration() -> None:
    declaration = {
        "functionDeclarations": [
            {"name": "a", "parametersJsonSchema": {"type": "object", "properties": {}, "required": ["n"]}}
        ]
    }
    expected = invocation(
        [call("a", {"n": 1, "page": 1})],
        app_details={"agent_details": {"root": {"name": "root", "tool_declarations": [declaration]}}},
    )
    metric = evaluator(METRIC, {"threshold": 1.0, "match_mode": "name_and_required_args"})
    assert evaluate(metric, [invocation([call("a", {"n": 1, "page": 2})])], [expected]).overall_score == 1.0
    assert evaluate(metric, [invocation([call("a", {"n": 2, "page": 1})])], [expected]).overall_score == 0.0


def test_overall_is_the_mean_over_invocations() -> None:
    actual = [invocation([A, B]), invocation([A]), invocation([])]
    expected = [invocation([A, B]), invocation([A, B]), invocation([])]
    result = evaluate(evaluator(METRIC, 0.85), actual, expected)
    assert scores(result) == pytest.approx([1.0, 2 / 3, 1.0])
    assert statuses(result) == ["PASSED", "FAILED", "PASSED"]
    assert result.overall_score == pytest.approx((1.0 + 2 / 3 + 1.0) / 3)
    assert result.overall_eval_status is EvalStatus.PASSED
    failed = result.per_invocation_results[1]
    assert failed.explanation == "1 of 2 expected and 1 actual tool call(s) matched (precision 1.00, recall 0.50)"
    assert failed.details is not None
    assert [(c.name, c.args) for c in failed.details["expected"]] == [("a", {"n": 1}), ("b", {"n": 2})]
    assert [(c.name, c.args) for c in failed.details["actual"]] == [("a", {"n": 1})]


def test_default_threshold_when_requested_by_name() -> None:
    assert evaluator(METRIC).threshold == 1.0


def test_no_reference_and_length_mismatch_are_not_evaluated() -> None:
    no_reference = evaluate(evaluator(METRIC), [invocation([A])], None)
    assert (no_reference.overall_eval_status, no_reference.error_type) == (EvalStatus.NOT_EVALUATED, "no_reference")
    mismatch = evaluate(evaluator(METRIC), [invocation([A])], [invocation([A]), invocation([A])])
    assert (mismatch.overall_eval_status, mismatch.error_type) == (
        EvalStatus.NOT_EVALUATED,
        "invocation_count_mismatch",
    )


def test_uncaptured_arguments_only_allow_name_only() -> None:
    actual = [traced(invocation([call("a", {})]), content_captured=False)]
    expected = [invocation([A])]
    assert evaluate(evaluator(METRIC), actual, expected).overall_eval_status is EvalStatus.NOT_EVALUATED
    names_only = evaluate(evaluator(METRIC, {"threshold": 1.0, "matchMode": "name_only"}), actual, expected)
    assert names_only.overall_score == 1.0


@pytest.mark.parametrize(
    ("criterion", "message"),
    [
        ({"threshold": 1, "match_mode": "EXACT"}, "match_mode: Input should be 'name_only', 'name_and_args' or"),
    ],
)
def test_bad_criteria_are_clear_configuration_errors(criterion: Json, message: str) -> None:
    with pytest.raises(ConfigurationError, match="tool_trajectory_f1") as caught:
        evaluator(METRIC, criterion)
    assert message in str(caught.value)
