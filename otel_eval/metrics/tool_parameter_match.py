"""``tool_parameter_match``: argument-level score of aligned tool calls (ADK feature request #5643, PR #6726).

**Alignment.** Each expected call is paired one to one with an actual call of the same tool (see
:mod:`otel_eval.metrics._tool_alignment`): ``ordered=True`` (default) uses a forward scan as ADK PR #6726 does;
``ordered=False`` uses the maximum matching (most pairs, then the best argument scores, then the closest positions).
``match_mode`` decides which pairs are allowed:

- ``name_only``: the same tool name.
- ``name_and_args``: the same name and every expected argument matches (so a paired call always scores 1.0).
- ``name_and_required_args`` (default): the same name and every *required* argument the expected call gives matches.
  The required arguments of a tool are the parameters its declaration marks ``required`` in ``app_details`` (of the
  expected invocation, else the actual one). When the tool has no declaration there, no argument is required and
  calls pair by name, so that the arguments are scored rather than decide the pairing.

**Scores.** A paired call scores the fraction of the expected call's argument keys whose actual value matches under
the key's strategy (``per_arg_strategies[key]``, else ``default_strategy``: ``exact``, ``casefold_exact``,
``numeric`` with the absolute ``numeric_tolerance``, or ``contains``; see
:mod:`otel_eval.metrics._argument_strategies`); a key missing from the actual call does not match; an expected call
without arguments scores 1.0. Extra actual arguments and extra actual calls are not penalised. An unpaired expected
call scores 0.0. The invocation's score is the mean over its expected calls; an invocation that expects no tool calls
is NOT_EVALUATED and left out. The case score is the mean over the evaluated invocations (NOT_EVALUATED when none);
PASSED when it is at least the threshold (1.0 when requested by name). Without expected invocations, or with a
different number of them, the metric is NOT_EVALUATED; so is an invocation whose spans carried no message content.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import ClassVar

from otel_eval.judge import Judge
from otel_eval.metrics._argument_strategies import Matcher, matcher
from otel_eval.metrics._reference import ReferenceEvaluator, not_captured
from otel_eval.metrics._tool_alignment import align, declared_required_params
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import (
    BaseCriterion,
    Invocation,
    PerInvocationResult,
    ToolParameterMatchCriterion,
    TracedInvocation,
    get_all_tool_calls,
)
from otel_eval.model import genai as genai_types
from otel_eval.model.criteria import ArgumentStrategy
from otel_eval.reconstruct.reads import Reads

_STRATEGIES: tuple[ArgumentStrategy, ...] = ("exact", "casefold_exact", "numeric", "contains")


class ToolParameterMatchEvaluator(ReferenceEvaluator):
    """Mean argument match of deterministically aligned tool calls (see the module docstring)."""

    reads = Reads.TOOL_CALLS | Reads.APP_DETAILS

    info: ClassVar[MetricInfo] = MetricInfo(
        name="tool_parameter_match",
        description=(
            "Aligns expected and actual tool calls one to one, then scores the fraction of expected arguments each "
            "aligned call got right (exact, casefold_exact, numeric with tolerance, contains); unmatched expected "
            "calls score 0. Invocations expecting no tool calls are not evaluated."
        ),
        criterion_type=ToolParameterMatchCriterion,
        requires_reference=True,
        default_threshold=1.0,
    )

    def __init__(self, criterion: BaseCriterion | None = None, *, judge: Judge | None = None) -> None:
        super().__init__(criterion, judge=judge)
        assert isinstance(self.criterion, ToolParameterMatchCriterion)  # validated by Evaluator.__init__
        self._options = self.criterion
        tolerance = self.criterion.numeric_tolerance
        self._matchers: dict[str, Matcher] = {strategy: matcher(strategy, tolerance) for strategy in _STRATEGIES}

    def score_invocation(self, traced: TracedInvocation, reference: Invocation) -> PerInvocationResult:
        """The mean argument match over the expected calls (see the module docstring)."""
        expected_calls = get_all_tool_calls(reference.intermediate_data)
        if not expected_calls:
            return PerInvocationResult(explanation="the expected invocation has no tool calls", error_type="no_calls")
        if not traced.content_captured:
            return not_captured("tool arguments were not captured in the trace")
        actual_calls = get_all_tool_calls(traced.invocation.intermediate_data)
        required: dict[str, frozenset[str]] = {}
        if self._options.match_mode == "name_and_required_args":
            required = declared_required_params([reference, traced.invocation])
        comparison = _Comparison(expected_calls, actual_calls, self._key_matcher)
        mode = self._options.match_mode

        def eligible(i: int, j: int) -> bool:
            if expected_calls[i].name != actual_calls[j].name:
                return False
            if mode == "name_only":
                return True
            mismatched = comparison.mismatched_keys(i, j)
            if mode == "name_and_args":
                return not mismatched
            return not mismatched.intersection(required.get(expected_calls[i].name or "", ()))

        pairs = align(expected_calls, actual_calls, eligible, ordered=self._options.ordered, score=comparison.score)
        call_scores = [Fraction(0) if j is None else comparison.score(i, j) for i, j in enumerate(pairs)]
        score = float(sum(call_scores, Fraction(0)) / len(call_scores))
        status = self.status_of(score)
        return PerInvocationResult(
            score=score,
            eval_status=status,
            explanation=None if score == 1.0 else _explain(expected_calls, pairs, comparison),
            details={
                "expected": expected_calls,
                "actual": actual_calls,
                "pairs": pairs,
                "call_scores": [float(s) for s in call_scores],
            },
        )

    def _key_matcher(self, key: str) -> Matcher:
        strategies = self._options.per_arg_strategies
        strategy = strategies.get(key, self._options.default_strategy) if strategies else self._options.default_strategy
        return self._matchers[strategy]


class _Comparison:
    """Argument comparisons of expected vs actual calls, computed once per pair."""

    def __init__(
        self,
        expected: list[genai_types.FunctionCall],
        actual: list[genai_types.FunctionCall],
        key_matcher: Callable[[str], Matcher],
    ) -> None:
        self._expected = expected
        self._actual = actual
        self._key_matcher = key_matcher
        self._mismatched: dict[tuple[int, int], frozenset[str]] = {}

    def mismatched_keys(self, i: int, j: int) -> frozenset[str]:
        """The expected argument keys of call ``i`` that actual call ``j`` lacks or gives a non-matching value."""
        found = self._mismatched.get((i, j))
        if found is None:
            expected_args = self._expected[i].args or {}
            actual_args = self._actual[j].args or {}
            found = frozenset(
                key
                for key, value in expected_args.items()
                if key not in actual_args or not self._key_matcher(key)(value, actual_args[key])
            )
            self._mismatched[(i, j)] = found
        return found

    def score(self, i: int, j: int) -> Fraction:
        """Fraction of expected call ``i``'s argument keys that actual call ``j`` matches (1 without arguments)."""
        total = len(self._expected[i].args or {})
        if total == 0:
            return Fraction(1)
        return Fraction(total - len(self.mismatched_keys(i, j)), total)


def _explain(expected: list[genai_types.FunctionCall], pairs: list[int | None], comparison: _Comparison) -> str:
    problems = []
    for i, j in enumerate(pairs):
        name = expected[i].name
        if j is None:
            problems.append(f"expected call {i + 1} {name} has no matching actual call")
            continue
        mismatched = comparison.mismatched_keys(i, j)
        if mismatched:
            problems.append(f"call {i + 1} {name}: {', '.join(sorted(mismatched))} do not match (actual call {j + 1})")
    return "; ".join(problems)
