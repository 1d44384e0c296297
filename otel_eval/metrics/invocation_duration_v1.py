"""``invocation_duration_v1``: wall-clock seconds per invocation, with ADK 2.13's ``DurationDetails``. Informational.

The value is the invocation's total seconds: from the spans, the duration of the invocation's root span, with
``model_seconds`` (time with a model call in flight) and ``tool_seconds`` (time in tools not awaiting a model) as the
reconstruction measured them; when the spans carry no timing, the ADK invocation's own ``duration``,
``model_duration`` and ``tool_duration``. ``framework_seconds`` is ADK's remainder, ``max(total - model - tool, 0)``
rounded to milliseconds, None when a part is unknown. Unlike ADK (which times only its own eval runs), recorded
traces have durations too.

The overall value is ADK's: the mean of the available totals, rounded to milliseconds. Lower is better; it never
passes or fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from otel_eval.metrics._efficiency import InformationalEvaluator, informational, mean_of_present
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import BaseCriterion, DurationDetails, PerInvocationResult, TracedInvocation
from otel_eval.reconstruct.plain import PlainInvocation
from otel_eval.reconstruct.reads import Reads


class InvocationDurationV1Evaluator(InformationalEvaluator):
    """Reports each invocation's duration and where the time went."""

    reads = Reads.TIMING

    info: ClassVar[MetricInfo] = MetricInfo(
        name="invocation_duration_v1",
        description=(
            "Wall-clock seconds per invocation, averaged over the conversation, split into model, tool and "
            "framework time. Informational efficiency metric (lower is better): reports a value, never passes or "
            "fails."
        ),
        criterion_type=BaseCriterion,
        max_value=None,
        informational=True,
    )

    def measure(self, traced: TracedInvocation) -> PerInvocationResult:
        """The invocation's total seconds, with the split in ``duration_details``."""
        return _measured(duration_details(traced))

    def measure_score(self, traced: TracedInvocation) -> PerInvocationResult:
        """:meth:`measure` without the split: the root span's seconds (without them, :meth:`measure`)."""
        total = traced.duration_seconds
        if total is None:
            return self.measure(traced)
        return informational(total)

    def measure_plain(self, plain: PlainInvocation) -> PerInvocationResult:
        """:meth:`measure_score` of a plain view (which carries no ADK durations: the rebuild from spans sets none)."""
        total = plain.duration_seconds
        if total is None:
            return _measured(DurationDetails())
        return informational(total)

    def overall_value(self, values: Sequence[float | None]) -> float | None:
        """ADK's: the mean of the available totals, rounded to milliseconds."""
        mean = mean_of_present(values)
        return None if mean is None else round(mean, 3)


def _measured(details: DurationDetails) -> PerInvocationResult:
    explanation = None if details.total_seconds is not None else "the invocation carries no timing"
    return informational(details.total_seconds, explanation=explanation, duration_details=details)


def duration_details(traced: TracedInvocation) -> DurationDetails:
    """The invocation's total, model, tool and framework seconds (see the module docstring)."""
    total = traced.duration_seconds
    if total is not None:
        model, tool = traced.model_seconds, traced.tool_seconds
    else:
        invocation = traced.invocation
        total, model, tool = invocation.duration, invocation.model_duration, invocation.tool_duration
        if total is None:
            return DurationDetails()
    framework = None if model is None or tool is None else round(max(total - model - tool, 0.0), 3)
    return DurationDetails(total_seconds=total, model_seconds=model, tool_seconds=tool, framework_seconds=framework)
