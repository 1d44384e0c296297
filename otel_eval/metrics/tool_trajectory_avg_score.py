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
from collections.abc import Sequence
from typing import Any, ClassVar

from google.genai import types as genai_types

from otel_eval.metrics._reference import unpaired_reference
from otel_eval.metrics._tool_alignment import call_dict
from otel_eval.metrics.base import Evaluator, MetricInfo
from otel_eval.model import (
    BaseCriterion,
    ConversationScenario,
    EvalStatus,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    ToolTrajectoryCriterion,
    TracedInvocation,
    get_all_tool_calls,
)

MatchType = ToolTrajectoryCriterion.MatchType
FunctionCalls = list[genai_types.FunctionCall]


class ToolTrajectoryAvgScoreEvaluator(Evaluator):
    """Binary per-invocation tool trajectory match (EXACT / IN_ORDER / ANY_ORDER), averaged."""

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

    def __init__(self, criterion: BaseCriterion | None = None, *, judge: Any = None) -> None:
        super().__init__(criterion, judge=judge)
        assert isinstance(self.criterion, ToolTrajectoryCriterion)  # validated by Evaluator.__init__
        self._match_type = self.criterion.match_type
        self._ignore_args = self.criterion.ignore_args
        self._threshold = self.criterion.threshold

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """Scores each actual invocation against the expected one at the same position (see the module docstring)."""
        problem = unpaired_reference(self, actual, expected)
        if problem is not None:
            return problem
        assert expected is not None  # unpaired_reference returned NOT_EVALUATED otherwise
        match_type, ignore_args, threshold = self._match_type, self._ignore_args, self._threshold
        results: list[PerInvocationResult] = []
        for traced, reference in zip(actual, expected, strict=True):
            if not traced.content_captured and not ignore_args:
                results.append(
                    PerInvocationResult(
                        explanation="tool arguments were not captured in the trace; set ignore_args to compare names",
                        error_type="content_not_captured",
                    )
                )
                continue
            actual_calls = get_all_tool_calls(traced.invocation.intermediate_data)
            expected_calls = get_all_tool_calls(reference.intermediate_data)
            matched = trajectory_matches(match_type, actual_calls, expected_calls, ignore_args=ignore_args)
            score = 1.0 if matched else 0.0
            status = EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED
            if status is EvalStatus.PASSED:
                results.append(PerInvocationResult(score=score, eval_status=status))
            else:
                results.append(
                    PerInvocationResult(
                        score=score,
                        eval_status=status,
                        explanation=mismatch_reason(match_type, actual_calls, expected_calls, ignore_args=ignore_args),
                        details={
                            "expected": [call_dict(c) for c in expected_calls],
                            "actual": [call_dict(c) for c in actual_calls],
                        },
                    )
                )
        return self.mean_result(results)


def trajectory_matches(
    match_type: MatchType, actual: FunctionCalls, expected: FunctionCalls, *, ignore_args: bool
) -> bool:
    """Whether ``actual`` matches ``expected`` under ``match_type``, exactly as ADK 2.13 decides it."""
    if match_type is MatchType.EXACT:
        return len(actual) == len(expected) and all(
            _same_call(a, e, ignore_args) for a, e in zip(actual, expected, strict=True)
        )
    if match_type is MatchType.IN_ORDER:
        return _first_missing_in_order(actual, expected, ignore_args) is None
    if match_type is MatchType.ANY_ORDER:
        return _first_missing_any_order(actual, expected, ignore_args) is None
    raise ValueError(f"unsupported match type {match_type}")


def _same_call(actual: genai_types.FunctionCall, expected: genai_types.FunctionCall, ignore_args: bool) -> bool:
    return actual.name == expected.name and (ignore_args or actual.args == expected.args)


def _first_missing_in_order(actual: FunctionCalls, expected: FunctionCalls, ignore_args: bool) -> int | None:
    """Index of the first expected call not found in order (ADK's greedy subsequence scan), or None."""
    index = 0
    for call in actual:
        if index == len(expected):
            break
        if _same_call(call, expected[index], ignore_args):
            index += 1
    return None if index == len(expected) else index


def _first_missing_any_order(actual: FunctionCalls, expected: FunctionCalls, ignore_args: bool) -> int | None:
    """Index of the first expected call without a distinct matching actual call (ADK's greedy scan), or None."""
    remaining = list(actual)
    for index, wanted in enumerate(expected):
        for position, call in enumerate(remaining):
            if _same_call(call, wanted, ignore_args):
                del remaining[position]
                break
        else:
            return index
    return None


def mismatch_reason(match_type: MatchType, actual: FunctionCalls, expected: FunctionCalls, *, ignore_args: bool) -> str:
    """One line saying why ``actual`` does not match ``expected``."""
    mode = f"{match_type.name}{' (names only)' if ignore_args else ''}"
    if match_type is MatchType.EXACT:
        if len(actual) != len(expected):
            return f"{mode}: expected {len(expected)} tool call(s), got {len(actual)}"
        for position, (a, e) in enumerate(zip(actual, expected, strict=True), start=1):
            if not _same_call(a, e, ignore_args):
                return f"{mode}: call {position}: expected {_show(e)}, got {_show(a)}"
        return f"{mode}: no match"
    finder = _first_missing_in_order if match_type is MatchType.IN_ORDER else _first_missing_any_order
    missing = finder(actual, expected, ignore_args)
    if missing is None:
        return f"{mode}: no match"
    where = "in order " if match_type is MatchType.IN_ORDER else ""
    return f"{mode}: expected call {missing + 1} {_show(expected[missing])} not found {where}among the actual calls"


def _show(call: genai_types.FunctionCall) -> str:
    try:
        args = json.dumps(call.args, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        args = repr(call.args)
    return f"{call.name}({args})"
