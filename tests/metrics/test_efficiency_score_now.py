"""``score_now`` (what online evaluation's records read) of the efficiency metrics: the scores, statuses,
explanations and error types ``evaluate_now`` gives, on every recorded trace, without building the token and duration
breakdowns only an offline report reads."""

from __future__ import annotations

import dataclasses

from otel_eval.metrics import EFFICIENCY_METRICS, Evaluator, default_registry
from otel_eval.model import EvaluationResult, TokenUsage
from tests.evaluation.test_inline import _recorded_invocations


def _what_records_read(result: EvaluationResult) -> tuple[object, ...]:
    per = [(r.score, type(r.score), r.eval_status, r.explanation, r.error_type) for r in result.per_invocation_results]
    return (result.overall_score, result.overall_eval_status, result.explanation, result.error_type, per)


def _details(result: EvaluationResult) -> int:
    return sum(
        r.token_usage_details is not None or r.duration_details is not None for r in result.per_invocation_results
    )


def test_score_now_gives_what_evaluate_now_gives_the_records_on_every_recorded_trace() -> None:
    invocations = _recorded_invocations()
    assert len(invocations) > 50
    for name in EFFICIENCY_METRICS:
        metric = default_registry().create(name)
        for actual in [*([i] for i in invocations), invocations]:
            full, scored = metric.evaluate_now(actual), metric.score_now(actual)
            assert _what_records_read(scored) == _what_records_read(full)
            assert _details(scored) <= _details(full)
        if name in ("token_usage_v1", "invocation_duration_v1"):  # the breakdowns are left out where spans tell
            assert _details(metric.score_now(invocations)) < _details(metric.evaluate_now(invocations))


def test_a_token_total_no_float_holds_exactly_takes_the_validated_path() -> None:
    metric = default_registry().create("token_usage_v1")
    (traced,) = [i for i in _recorded_invocations() if i.token_usage.total_tokens][:1]
    for total in (2**53 + 1, 10**20):
        huge = traced.model_copy(update={"token_usage": TokenUsage(input_tokens=total, output_tokens=0)})
        assert _what_records_read(metric.score_now([huge])) == _what_records_read(metric.evaluate_now([huge]))


def test_a_metric_that_does_not_say_otherwise_scores_as_evaluate_now() -> None:
    metric = default_registry().create("tool_trajectory_avg_score")
    assert type(metric).score_now is Evaluator.score_now
    actual = _recorded_invocations()[:5]
    expected = [traced.invocation for traced in actual]
    assert dataclasses.asdict(metric.score_now(actual, expected)) == dataclasses.asdict(
        metric.evaluate_now(actual, expected)
    )
