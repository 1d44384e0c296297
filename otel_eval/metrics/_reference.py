"""What the metrics that compare actual invocations with expected (reference) ones share.

A metric subclasses :class:`ReferenceEvaluator` and scores one actual invocation against the expected one at the same
position; pairing, the NOT_EVALUATED cases ADK would raise on, and the overall mean are done here.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from otel_eval.metrics.base import Evaluator
from otel_eval.model import ConversationScenario, EvaluationResult, Invocation, PerInvocationResult, TracedInvocation

NO_REFERENCE = "no_reference"
"""``error_type`` when there are no expected invocations."""
INVOCATION_COUNT_MISMATCH = "invocation_count_mismatch"
"""``error_type`` when actual and expected invocations cannot be paired one to one."""
CONTENT_NOT_CAPTURED = "content_not_captured"
"""``error_type`` of an invocation whose spans carried no message content."""


class ReferenceEvaluator(Evaluator):
    """Scores each actual invocation against the expected one at the same position; the overall score is the mean."""

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """Per-invocation scores (:meth:`score_invocation`) and their mean, ADK's aggregation; NOT_EVALUATED when
        ``expected`` is missing or cannot be paired with ``actual``."""
        problem = unpaired_reference(self, actual, expected, conversation_scenario)
        if problem is not None:
            return problem
        assert expected is not None  # unpaired_reference returned NOT_EVALUATED otherwise
        return self.mean_result([self.score_invocation(t, e) for t, e in zip(actual, expected, strict=True)])

    @abc.abstractmethod
    def score_invocation(self, traced: TracedInvocation, reference: Invocation) -> PerInvocationResult:
        """The result of one actual invocation against its expected one (NOT_EVALUATED: score None)."""


def not_captured(explanation: str) -> PerInvocationResult:
    """NOT_EVALUATED for an invocation whose spans carried no message content (``explanation`` says what is missing)."""
    return PerInvocationResult(explanation=explanation, error_type=CONTENT_NOT_CAPTURED)


SCENARIO_WITHOUT_CONVERSATION = (
    "its eval case is a conversation_scenario case, which has no expected conversation to compare with (ADK does "
    "not evaluate it either)"
)
"""Why a metric comparing with expected invocations is NOT_EVALUATED on a conversation paired with a scenario case."""


def unpaired_reference(
    evaluator: Evaluator,
    actual: Sequence[TracedInvocation],
    expected: Sequence[Invocation] | None,
    conversation_scenario: ConversationScenario | None = None,
) -> EvaluationResult | None:
    """NOT_EVALUATED when ``expected`` is missing or differs in length from ``actual`` (ADK 2.13 raises), else None."""
    name = evaluator.info.name
    if expected is None:
        return evaluator.not_evaluated(
            f"{name} needs expected invocations: {SCENARIO_WITHOUT_CONVERSATION}"
            if conversation_scenario is not None
            else f"{name} needs expected invocations (an eval case) and none were given",
            count=len(actual),
            error_type=NO_REFERENCE,
        )
    if len(actual) != len(expected):
        return evaluator.not_evaluated(
            f"{name}: {len(actual)} actual invocation(s) cannot be paired with {len(expected)} expected one(s)",
            count=len(actual),
            error_type=INVOCATION_COUNT_MISMATCH,
        )
    return None
