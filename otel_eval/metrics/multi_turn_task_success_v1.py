"""``multi_turn_task_success_v1``: an LLM judge rates whether the agent achieved the user's goal or goals over the conversation.

Reference-free; one result on the last turn, the first N-1 turns NOT_EVALUATED. On Vertex AI, Vertex's Gen AI
evaluation service judges it, as ADK 2.13 does; with the Gemini API, a prompt of our own (not ADK's). See
:mod:`otel_eval.metrics._multi_turn_service`.
"""

from __future__ import annotations

from otel_eval.metrics._multi_turn_service import MultiTurnServiceEvaluator
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import EvalServiceCriterion


class MultiTurnTaskSuccessV1Evaluator(MultiTurnServiceEvaluator):
    """Evaluates if the agent was able to achieve the goal or goals of the conversation."""

    info = MetricInfo(
        name="multi_turn_task_success_v1",
        description="LLM judge over the whole conversation: whether the agent achieved the user's goal or goals over the conversation (Vertex AI's evaluation service, or our own "
        "prompt on the Gemini API); scored on the last turn.",
        criterion_type=EvalServiceCriterion,
        requires_judge=True,
        conversation_level=True,
        version="1",
        default_threshold=0.8,
    )
    metric_title = "Task success"
    metric_definition = "Task success: did the agent achieve the goal or goals the user pursued over the conversation? Identify every goal the user expressed (including ones added or changed in later turns) and judge, for each, whether the conversation ends with it achieved, or with the agent correctly explaining why it cannot be. How the agent got there does not matter for this metric."
