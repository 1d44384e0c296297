"""What ADK 2.13's informational efficiency metrics share (``google.adk.evaluation._efficiency_evaluators``).

Each reports a value per invocation as its score with status INFORMATIONAL (also when the value is None, meaning not
available), never passes or fails, takes no threshold (:class:`~otel_eval.metrics.base.Evaluator` rejects one), and
needs no reference. Values come from the span data of the :class:`~otel_eval.model.TracedInvocation` first, and from
the ADK invocation's own data (``InvocationEvents``, ``duration``) when the spans did not carry them.

A metric subclasses :class:`InformationalEvaluator` and says how to measure one invocation (and, when it is not the
mean of the available values, how ADK combines them).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from otel_eval.metrics.base import Evaluator
from otel_eval.model import (
    ConversationScenario,
    DurationDetails,
    EvalStatus,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    TokenUsageDetails,
    TracedInvocation,
)
from otel_eval.reconstruct.plain import PlainInvocation

_INFORMATIONAL = EvalStatus.INFORMATIONAL
"""Read once (an enum member read off its class is a call in Python 3.11), not per result."""


class InformationalEvaluator(Evaluator):
    """A reference-free metric reporting one INFORMATIONAL value per invocation and an overall value."""

    runs_inline = True  # a count or sum per invocation

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """The value of each invocation and the overall value; reference-free, so ``expected`` is ignored."""
        return self.evaluate_now(actual)

    def evaluate_now(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """:meth:`evaluate`'s work, synchronous (the workers call it without a coroutine)."""
        return self._overall_of([self.measure(traced) for traced in actual])

    def score_now(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """:meth:`evaluate_now` without the per-invocation details (:meth:`measure_score`)."""
        return self._overall_of([self.measure_score(traced) for traced in actual])

    def score_plain(
        self,
        actual: Sequence[PlainInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """:meth:`score_now` of the plain views, without making their models (:meth:`measure_plain`)."""
        return self._overall_of([self.measure_plain(plain) for plain in actual])

    def _overall_of(self, results: list[PerInvocationResult]) -> EvaluationResult:
        return overall(results, self.overall_value([r.score for r in results]))

    @abc.abstractmethod
    def measure(self, traced: TracedInvocation) -> PerInvocationResult:
        """The invocation's value (see :func:`informational`)."""

    def measure_score(self, traced: TracedInvocation) -> PerInvocationResult:
        """:meth:`measure`'s value, status and explanation, without the details only an offline report reads (by
        default :meth:`measure` itself)."""
        return self.measure(traced)

    def measure_plain(self, plain: PlainInvocation) -> PerInvocationResult:
        """:meth:`measure_score` of the plain view's model: by default of the model itself (made here); a metric
        whose rule a plain view holds reads it off the view instead."""
        return self.measure_score(plain.traced())

    def overall_value(self, values: Sequence[float | None]) -> float | None:
        """The overall value from the per-invocation ones: by default ADK's mean of the available values."""
        return mean_of_present(values)


def informational(
    score: float | None,
    *,
    explanation: str | None = None,
    token_usage_details: TokenUsageDetails | None = None,
    duration_details: DurationDetails | None = None,
) -> PerInvocationResult:
    """A per-invocation INFORMATIONAL result; ``explanation`` says why a None value is not available."""
    return PerInvocationResult(
        score=score,
        eval_status=_INFORMATIONAL,
        explanation=explanation,
        token_usage_details=token_usage_details,
        duration_details=duration_details,
    )


def mean_of_present(values: Sequence[float | None]) -> float | None:
    """ADK's overall value: the mean of the non-None values (``sum / count``), None when there are none."""
    present = [value for value in values if value is not None]
    return sum(present) / len(present) if present else None


def overall(per_invocation: list[PerInvocationResult], score: float | None) -> EvaluationResult:
    """The INFORMATIONAL overall result (ADK's status even without invocations or values)."""
    explanation = None
    if score is None:
        explanation = next((r.explanation for r in per_invocation if r.explanation), "no invocations")
    return EvaluationResult(
        overall_score=score,
        overall_eval_status=_INFORMATIONAL,
        per_invocation_results=per_invocation,
        explanation=explanation,
    )
