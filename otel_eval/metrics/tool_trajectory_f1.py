"""``tool_trajectory_f1``: partial credit for tool trajectories (ADK proposal #5306).

**Definition.** Per invocation, with ``E`` expected tool calls, ``A`` actual tool calls and ``M`` pairs in a
one-to-one alignment of expected to actual calls (:mod:`otel_eval.metrics._tool_alignment`):

- precision ``P = M / A``, recall ``R = M / E``, score ``F1 = 2PR / (P + R)`` (equivalently ``2M / (A + E)``);
- ``E = A = 0`` scores 1.0 (nothing expected, nothing done); exactly one of them 0 scores 0.0; ``M = 0`` scores 0.0.

Two calls may pair when the tool names are equal and, by ``match_mode``:

- ``name_only``: nothing else;
- ``name_and_args`` (default): their ``args`` are equal (Python equality as ADK's trajectory metric compares them:
  ``1 == 1.0``, key order irrelevant; missing args count as ``{}``);
- ``name_and_required_args``: the required argument keys have equal values (a key absent on both sides is equal).
  The required keys of a tool are ``required_args[tool]`` from the criterion, else the parameters its declaration
  marks ``required`` in ``app_details`` (expected invocation first, else actual), else all keys of the expected call.

``ordered=False`` (default) pairs calls in any order, maximising the number of pairs (ties broken towards the closest
positions); ``ordered=True`` pairs them by a forward scan in order, so calls out of order count as unmatched.

The overall score is the mean over invocations; PASSED when it is at least the threshold (1.0 when requested by
name). Without expected invocations, or with a different number of them, the metric is NOT_EVALUATED; so is an
invocation whose spans carried no message content, unless ``match_mode`` is ``name_only``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from otel_eval.judge import Judge
from otel_eval.metrics._reference import ReferenceEvaluator, not_captured
from otel_eval.metrics._tool_alignment import Eligible, align, declared_required_params
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import (
    BaseCriterion,
    Invocation,
    PerInvocationResult,
    ToolTrajectoryF1Criterion,
    TracedInvocation,
    get_all_tool_calls,
)
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct.reads import Reads

_MISSING = object()


class ToolTrajectoryF1Evaluator(ReferenceEvaluator):
    """F1 of the actual against the expected tool calls under a one-to-one alignment (see the module docstring)."""

    reads = Reads.TOOL_CALLS | Reads.APP_DETAILS

    info: ClassVar[MetricInfo] = MetricInfo(
        name="tool_trajectory_f1",
        description=(
            "F1 of precision (matched/actual) and recall (matched/expected) tool calls per invocation under a "
            "one-to-one alignment (match_mode name_only, name_and_args or name_and_required_args; ordered or not), "
            "averaged over invocations."
        ),
        criterion_type=ToolTrajectoryF1Criterion,
        requires_reference=True,
        default_threshold=1.0,
    )

    def __init__(self, criterion: BaseCriterion | None = None, *, judge: Judge | None = None) -> None:
        super().__init__(criterion, judge=judge)
        assert isinstance(self.criterion, ToolTrajectoryF1Criterion)  # validated by Evaluator.__init__
        self._options = self.criterion

    def score_invocation(self, traced: TracedInvocation, reference: Invocation) -> PerInvocationResult:
        """F1 of the actual against the expected tool calls (see the module docstring)."""
        mode = self._options.match_mode
        if not traced.content_captured and mode != "name_only":
            return not_captured("tool arguments were not captured in the trace; use match_mode name_only")
        expected_calls = get_all_tool_calls(reference.intermediate_data)
        actual_calls = get_all_tool_calls(traced.invocation.intermediate_data)
        if not expected_calls and not actual_calls:
            return PerInvocationResult(score=1.0, eval_status=self.status_of(1.0))
        eligible = self._eligibility(expected_calls, actual_calls, [reference, traced.invocation])
        pairs = align(expected_calls, actual_calls, eligible, ordered=self._options.ordered)
        matched = sum(j is not None for j in pairs)
        expected_count, actual_count = len(expected_calls), len(actual_calls)
        score = 2 * matched / (expected_count + actual_count)
        precision = matched / actual_count if actual_count else None
        recall = matched / expected_count if expected_count else None
        return PerInvocationResult(
            score=score,
            eval_status=self.status_of(score),
            explanation=None
            if score == 1.0
            else f"{matched} of {expected_count} expected and {actual_count} actual "
            f"tool call(s) matched (precision {_fmt(precision)}, recall {_fmt(recall)})",
            details={
                "precision": precision,
                "recall": recall,
                "matched": matched,
                "expected": expected_calls,
                "actual": actual_calls,
                "pairs": pairs,
            },
        )

    def _eligibility(
        self,
        expected: list[genai_types.FunctionCall],
        actual: list[genai_types.FunctionCall],
        invocations: list[Invocation],
    ) -> Eligible:
        mode = self._options.match_mode
        declared = declared_required_params(invocations) if mode == "name_and_required_args" else {}
        configured = self._options.required_args or {}

        def eligible(i: int, j: int) -> bool:
            expected_call, actual_call = expected[i], actual[j]
            if expected_call.name != actual_call.name:
                return False
            if mode == "name_only":
                return True
            expected_args, actual_args = expected_call.args or {}, actual_call.args or {}
            if mode == "name_and_args":
                return bool(expected_args == actual_args)
            name = expected_call.name or ""
            keys: Iterable[str] = expected_args.keys()
            if name in configured:
                keys = configured[name]
            elif name in declared:
                keys = declared[name]
            return all(expected_args.get(k, _MISSING) == actual_args.get(k, _MISSING) for k in keys)

        return eligible


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
