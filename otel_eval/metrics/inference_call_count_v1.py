"""``inference_call_count_v1``: model (inference) calls per invocation. Informational.

The value is the number of model-call spans the trace shows for the invocation. When the spans show none and the
invocation carries ADK ``InvocationEvents``, it is ADK 2.13's count: the events with ``usage_metadata`` or
``model_version``. Otherwise it is None (not available). The overall value is the mean of the available values.
Lower is better; it never passes or fails.
"""

from __future__ import annotations

from typing import ClassVar

from otel_eval.metrics._efficiency import InformationalEvaluator, informational
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import (
    BaseCriterion,
    IntermediateDataType,
    InvocationEvents,
    PerInvocationResult,
    TracedInvocation,
)
from otel_eval.reconstruct.plain import PlainInvocation
from otel_eval.reconstruct.reads import Reads


class InferenceCallCountV1Evaluator(InformationalEvaluator):
    """Counts the model calls of each invocation."""

    reads = Reads.USAGE

    info: ClassVar[MetricInfo] = MetricInfo(
        name="inference_call_count_v1",
        description=(
            "Inference (model) calls the agent made per invocation, averaged over the conversation. Informational "
            "efficiency metric (lower is better): reports a value, never passes or fails."
        ),
        criterion_type=BaseCriterion,
        max_value=None,
        informational=True,
    )

    def measure(self, traced: TracedInvocation) -> PerInvocationResult:
        """The number of model calls of the invocation (see the module docstring)."""
        return _model_calls(traced.model_call_count, traced.invocation.intermediate_data)

    def measure_plain(self, plain: PlainInvocation) -> PerInvocationResult:
        """:meth:`measure` of a plain view (whose intermediate data are never ADK's ``InvocationEvents``)."""
        return _model_calls(plain.model_call_count, None)


def _model_calls(count: int, data: IntermediateDataType | None) -> PerInvocationResult:
    """The spans' count of model calls when they show any, else ADK's count of the ``InvocationEvents``."""
    if count > 0:
        return informational(float(count))
    if isinstance(data, InvocationEvents):
        model_events = [
            e for e in data.invocation_events if e.usage_metadata is not None or e.model_version is not None
        ]
        return informational(float(len(model_events)))
    return informational(None, explanation="the trace shows no model calls for this invocation")
