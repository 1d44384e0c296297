"""``tool_trajectory_avg_score``: ADK 2.13's ``TrajectoryEvaluator``, score for score.

Per invocation the score is 1.0 when the actual tool calls match the expected ones under ``match_type``, else 0.0:

- ``EXACT``: the same number of calls, pairwise equal in order.
- ``IN_ORDER``: the expected calls appear in order among the actual calls (extra calls allowed anywhere).
- ``ANY_ORDER``: every expected call is matched by a distinct actual call, in any order (extra calls allowed).

Two calls are equal when the names are equal (case-sensitive) and, unless ``ignore_args``, ``args`` compare equal as
Python dicts (``1 == 1.0``, key order irrelevant, ``None`` differs from ``{}``); the call id is never compared. With
no expected calls, ``EXACT`` needs no actual calls either while ``IN_ORDER`` and ``ANY_ORDER`` score 1.0. The overall
score is the mean over invocations, PASSED when it is at least the threshold (1.0 when requested by name).

Differences from ADK, all where ADK would raise or cannot run: no expected invocations, or a different number of
actual and expected invocations, give NOT_EVALUATED with the reason; an invocation whose spans carried no message
content is NOT_EVALUATED unless ``ignore_args`` (the tool names are still known). Failed invocations carry the
expected and actual calls in ``details`` and a one-line explanation.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from otel_eval.judge import Judge
from otel_eval.metrics._reference import ReferenceEvaluator, not_captured
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import (
    BaseCriterion,
    EvalStatus,
    Invocation,
    PerInvocationResult,
    ToolTrajectoryCriterion,
    TracedInvocation,
    get_all_tool_calls,
)
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct.reads import Reads

MatchType = ToolTrajectoryCriterion.MatchType
FunctionCalls = list[genai_types.FunctionCall]


class ToolTrajectoryAvgScoreEvaluator(ReferenceEvaluator):
    """Binary per-invocation tool trajectory match (EXACT / IN_ORDER / ANY_ORDER), averaged."""

    reads = Reads.TOOL_CALLS

    info: ClassVar[MetricInfo] = MetricInfo(
        name="tool_trajectory_avg_score",
        description=(
            "Compares the actual tool calls of each invocation with the expected ones (match_type EXACT, IN_ORDER or "
            "ANY_ORDER; ignore_args compares names only): 1.0 on a match, else 0.0, averaged over invocations."
        ),
        criterion_type=ToolTrajectoryCriterion,
        requires_reference=True,
        default_threshold=1.0,
    )

    def __init__(self, criterion: BaseCriterion | None = None, *, judge: Judge | None = None) -> None:
        super().__init__(criterion, judge=judge)
        assert isinstance(self.criterion, ToolTrajectoryCriterion)  # validated by Evaluator.__init__
        self._match_type = self.criterion.match_type
        self._ignore_args = self.criterion.ignore_args
        self._threshold = self.criterion.threshold

    def score_invocation(self, traced: TracedInvocation, reference: Invocation) -> PerInvocationResult:
        """1.0 when the actual tool calls match the expected ones under ``match_type``, else 0.0 with the reason."""
        ignore_args = self._ignore_args
        if not (ignore_args or traced.content_captured):
            return not_captured("tool arguments were not captured in the trace; set ignore_args to compare names")
        actual_calls = get_all_tool_calls(traced.invocation.intermediate_data)
        expected_calls = get_all_tool_calls(reference.intermediate_data)
        position = first_mismatch(self._match_type, actual_calls, expected_calls, ignore_args=ignore_args)
        if position is None:
            return PerInvocationResult(score=1.0, eval_status=EvalStatus.PASSED)  # 1.0 meets every threshold
        if self._threshold <= 0.0:
            return PerInvocationResult(score=0.0, eval_status=EvalStatus.PASSED)
        return PerInvocationResult(
            score=0.0,
            eval_status=EvalStatus.FAILED,
            explanation=_reason(self._match_type, actual_calls, expected_calls, position, ignore_args=ignore_args),
            details={
                "expected": expected_calls,
                "actual": actual_calls,
            },
        )


def first_mismatch(
    match_type: MatchType, actual: FunctionCalls, expected: FunctionCalls, *, ignore_args: bool
) -> int | None:
    """None when ``actual`` matches ``expected`` under ``match_type`` exactly as ADK 2.13 decides it, else the position
    (in the expected calls, or in both for EXACT) where matching failed.

    Two calls are equal when ADK's ``name ==`` and (unless ``ignore_args``) ``args ==`` hold; tuple equality of
    ``(name, args)`` is that test.
    """
    if match_type is MatchType.EXACT:
        if len(actual) != len(expected):
            return min(len(actual), len(expected))
        for index, (got, wanted) in enumerate(zip(actual, expected, strict=True)):
            if got.name != wanted.name or not (ignore_args or got.args == wanted.args):
                return index
        return None
    actual_keys, expected_keys = _keys(actual, ignore_args), _keys(expected, ignore_args)
    if match_type is MatchType.IN_ORDER:
        # ADK's greedy subsequence scan: advance through the expected calls as the actual ones match.
        index = 0
        for key in actual_keys:
            if index == len(expected_keys):
                break
            if key == expected_keys[index]:
                index += 1
        return None if index == len(expected_keys) else index
    if match_type is MatchType.ANY_ORDER:
        # ADK's greedy scan: each expected call consumes the first equal remaining actual call.
        for index, key in enumerate(expected_keys):
            try:
                actual_keys.remove(key)
            except ValueError:
                return index
        return None
    raise ValueError(f"unsupported match type {match_type}")


def _keys(calls: FunctionCalls, ignore_args: bool) -> list[Any]:
    if ignore_args:
        return [call.name for call in calls]
    return [(call.name, call.args) for call in calls]


def _reason(
    match_type: MatchType, actual: FunctionCalls, expected: FunctionCalls, position: int, *, ignore_args: bool
) -> str:
    """One line saying why ``actual`` does not match ``expected`` (``position`` from :func:`first_mismatch`)."""
    mode = f"{match_type.name}{' (names only)' if ignore_args else ''}"
    if match_type is MatchType.EXACT:
        if len(actual) != len(expected):
            return f"{mode}: expected {len(expected)} tool call(s), got {len(actual)}"
        return f"{mode}: call {position + 1}: expected {_show(expected[position])}, got {_show(actual[position])}"
    where = "in order " if match_type is MatchType.IN_ORDER else ""
    return f"{mode}: expected call {position + 1} {_show(expected[position])} not found {where}among the actual calls"


_ARGS_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str)
"""Built once: ``json.dumps`` with options builds a new encoder per call, which costs more than the encoding."""


def _show(call: genai_types.FunctionCall) -> str:
    try:
        args = _ARGS_ENCODER.encode(call.args)
    except (TypeError, ValueError):
        args = repr(call.args)
    return f"{call.name}({args})"
