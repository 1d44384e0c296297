"""``tool_call_count_v1``: tool (function) calls per invocation, as ADK 2.13 counts them. Informational.

The value is the number of tool calls in the invocation (``IntermediateData.tool_uses`` or the function-call parts
of ``InvocationEvents``, which for a traced invocation are its tool spans); the overall value is the mean over
invocations. Lower is better; it never passes or fails.
"""

from __future__ import annotations

from typing import ClassVar

from otel_eval.metrics._efficiency import InformationalEvaluator, informational
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import BaseCriterion, PerInvocationResult, TracedInvocation, get_all_tool_calls
from otel_eval.reconstruct.plain import PlainInvocation
from otel_eval.reconstruct.reads import Reads


class ToolCallCountV1Evaluator(InformationalEvaluator):
    """Counts the tool calls of each invocation."""

    reads = Reads.TOOL_CALLS

    info: ClassVar[MetricInfo] = MetricInfo(
        name="tool_call_count_v1",
        description=(
            "Tool (function) calls the agent made per invocation, averaged over the conversation. Informational "
            "efficiency metric (lower is better): reports a value, never passes or fails."
        ),
        criterion_type=BaseCriterion,
        max_value=None,
        informational=True,
    )

    def measure(self, traced: TracedInvocation) -> PerInvocationResult:
        """The number of tool calls in the invocation."""
        return informational(float(len(get_all_tool_calls(traced.invocation.intermediate_data))))

    def measure_plain(self, plain: PlainInvocation) -> PerInvocationResult:
        """The number of tool calls (a plain view's are its ``IntermediateData.tool_uses``)."""
        return informational(float(len(plain.tool_uses)))
