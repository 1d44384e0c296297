"""invocation_duration_v1: from the spans' timing, else ADK 2.13's invocation durations (parity incl. details)."""

from __future__ import annotations

from google.adk.evaluation._efficiency_evaluators import _InvocationDurationV1Evaluator
from hypothesis import given, settings

from otel_eval.model import DurationDetails, EvalStatus
from tests.metrics._efficiency_cases import conversations
from tests.metrics._factories import Json, adk, evaluate, evaluator, invocation, scores, statuses, traced

METRIC = "invocation_duration_v1"


@settings(max_examples=150, deadline=None)
@given(conversations)
def test_values_and_breakdown_equal_adk_without_span_timing(actual: list[Json]) -> None:
    theirs = _InvocationDurationV1Evaluator().evaluate_invocations([adk(a) for a in actual])
    result = evaluate(evaluator(METRIC), actual, None)
    assert result.overall_score == theirs.overall_score
    assert result.overall_eval_status.name == theirs.overall_eval_status.name
    assert scores(result) == [r.score for r in theirs.per_invocation_results]
    assert statuses(result) == [r.eval_status.name for r in theirs.per_invocation_results]
    ours_details = [r.duration_details for r in result.per_invocation_results]
    adk_details = [r.duration_details for r in theirs.per_invocation_results]
    assert [d.model_dump() if d else None for d in ours_details] == [d.model_dump() if d else None for d in adk_details]


def test_duration_from_the_spans() -> None:
    second = 1_000_000_000
    actual = [
        traced(
            invocation(), start_time_ns=10 * second, end_time_ns=12_500_000_000, model_seconds=1.75, tool_seconds=0.5
        ),
        traced(invocation(), start_time_ns=second, end_time_ns=2 * second, model_seconds=1.2, tool_seconds=0.0),
        traced(invocation(), start_time_ns=second, end_time_ns=3 * second),  # parts unknown
        traced(invocation(duration=9.0)),  # no span timing: the invocation's own duration
        traced(invocation()),
    ]
    result = evaluate(evaluator(METRIC), actual, None)
    assert scores(result) == [2.5, 1.0, 2.0, 9.0, None]
    assert statuses(result) == ["INFORMATIONAL"] * 5
    details = [r.duration_details for r in result.per_invocation_results]
    assert details[0] == DurationDetails(
        total_seconds=2.5, model_seconds=1.75, tool_seconds=0.5, framework_seconds=0.25
    )
    assert details[1] == DurationDetails(total_seconds=1.0, model_seconds=1.2, tool_seconds=0.0, framework_seconds=0.0)
    assert details[2] == DurationDetails(total_seconds=2.0)
    assert details[4] == DurationDetails()
    assert result.per_invocation_results[4].explanation == "the invocation carries no timing"
    assert result.overall_score == round((2.5 + 1.0 + 2.0 + 9.0) / 4, 3)
    assert result.overall_eval_status is EvalStatus.INFORMATIONAL
