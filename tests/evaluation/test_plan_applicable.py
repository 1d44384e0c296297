"""A plan's metrics that apply with and without a reference, worked out once per plan: the metrics that need a
reference are left out of a conversation without one (as ``lacks_reference`` says), every metric applies with one,
and the answer is the caller's own list."""

from __future__ import annotations

from otel_eval.conversations import Conversation
from otel_eval.evaluation.plan import MetricPlan, build_plan
from otel_eval.evaluation.scoring import lacks_reference
from otel_eval.model import BaseCriterion
from tests.worker._core_helpers import traced

CRITERIA = {
    "tool_trajectory_avg_score": BaseCriterion(threshold=1.0),
    "tool_call_count_v1": None,
    "response_match_score": BaseCriterion(threshold=0.5),
}


def _plan() -> MetricPlan:
    return build_plan(CRITERIA)


def test_without_a_reference_the_metrics_that_need_one_are_left_out_as_lacks_reference_says() -> None:
    plan = _plan()
    bare = Conversation(invocations=[traced()])
    without = plan.applicable(has_reference=False)
    assert [m.name for m in without] == ["tool_call_count_v1"]
    assert without == [m for m in plan.metrics if not lacks_reference(m, bare)]
    assert plan.applicable(has_reference=True) == plan.metrics


def test_the_list_is_the_callers_own_and_the_answer_does_not_change() -> None:
    plan = _plan()
    first = plan.applicable(has_reference=False)
    first.clear()
    assert [m.name for m in plan.applicable(has_reference=False)] == ["tool_call_count_v1"]
    everything = plan.applicable(has_reference=True)
    everything.pop()
    assert len(plan.applicable(has_reference=True)) == len(CRITERIA)
