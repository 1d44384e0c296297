"""Checks shared by the metrics that compare actual invocations with expected (reference) ones."""

from __future__ import annotations

from collections.abc import Sequence

from otel_eval.metrics.base import Evaluator
from otel_eval.model import EvaluationResult, Invocation, TracedInvocation

NO_REFERENCE = "no_reference"
"""``error_type`` when there are no expected invocations."""
INVOCATION_COUNT_MISMATCH = "invocation_count_mismatch"
"""``error_type`` when actual and expected invocations cannot be paired one to one."""


def unpaired_reference(
    evaluator: Evaluator, actual: Sequence[TracedInvocation], expected: Sequence[Invocation] | None
) -> EvaluationResult | None:
    """NOT_EVALUATED when ``expected`` is missing or differs in length from ``actual`` (ADK 2.13 raises), else None."""
    name = evaluator.info.name
    if expected is None:
        return evaluator.not_evaluated(
            f"{name} needs expected invocations (an eval case) and none were given",
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
