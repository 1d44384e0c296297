"""``tool_call_count_v1``: tool (function) calls per invocation, as ADK 2.13 counts them. Informational.

The value is the number of tool calls in the invocation (``IntermediateData.tool_uses`` or the function-call parts
of ``InvocationEvents``, which for a traced invocation are its tool spans); the overall value is the mean over
invocations. Lower is better; it never passes or fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from otel_eval.metrics._efficiency import informational, mean_of_present, overall
from otel_eval.metrics.base import Evaluator, MetricInfo
from otel_eval.model import (
    BaseCriterion,
    ConversationScenario,
    EvaluationResult,
    Invocation,
    TracedInvocation,
    get_all_tool_calls,
)


class ToolCallCountV1Evaluator(Evaluator):
    """Counts the tool calls of each invocation."""

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

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """The tool-call count of each invocation; reference-free, so ``expected`` is ignored."""
        results = [informational(float(len(get_all_tool_calls(t.invocation.intermediate_data)))) for t in actual]
        return overall(results, mean_of_present([r.score for r in results]))
