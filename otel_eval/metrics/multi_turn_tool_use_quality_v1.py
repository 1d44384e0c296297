"""``multi_turn_tool_use_quality_v1``: an LLM judge rates the quality of the agent's function calls over the conversation.

Reference-free; one result on the last turn, the first N-1 turns NOT_EVALUATED. On Vertex AI, Vertex's Gen AI
evaluation service judges it, as ADK 2.13 does; with the Gemini API, a prompt of our own (not ADK's). See
:mod:`otel_eval.metrics._multi_turn_service`.
"""

from __future__ import annotations

from otel_eval.metrics._multi_turn_service import MultiTurnServiceEvaluator
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import EvalServiceCriterion


class MultiTurnToolUseQualityV1Evaluator(MultiTurnServiceEvaluator):
    """Evaluates the function calls made during a multi-turn conversation."""

    info = MetricInfo(
        name="multi_turn_tool_use_quality_v1",
        description="LLM judge over the whole conversation: the quality of the agent's function calls over the conversation (Vertex AI's evaluation service, or our own "
        "prompt on the Gemini API); scored on the last turn.",
        criterion_type=EvalServiceCriterion,
        requires_judge=True,
        conversation_level=True,
        version="1",
        default_threshold=0.8,
    )
    metric_title = "Tool use quality"
    metric_definition = "Tool use quality: how well did the agent use its tools over the conversation? Judge every tool call: the right tool was chosen for the need, its arguments were correct and taken from what the user and earlier tool outputs said, no needed call was missing and no call was unnecessary or repeated, and the agent used the tool outputs correctly in its answers."
