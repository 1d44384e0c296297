"""``multi_turn_trajectory_quality_v1``: an LLM judge rates the quality of the path the agent took through the conversation.

Reference-free; one result on the last turn, the first N-1 turns NOT_EVALUATED. On Vertex AI, Vertex's Gen AI
evaluation service judges it, as ADK 2.13 does; with the Gemini API, a prompt of our own (not ADK's). See
:mod:`otel_eval.metrics._multi_turn_service`.
"""

from __future__ import annotations

from otel_eval.metrics._multi_turn_service import MultiTurnServiceEvaluator
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import EvalServiceCriterion


class MultiTurnTrajectoryQualityV1Evaluator(MultiTurnServiceEvaluator):
    """Evaluates the overall trajectory of the conversation: the path the agent took to its outcome, not only whether the goal was achieved."""

    info = MetricInfo(
        name="multi_turn_trajectory_quality_v1",
        description="LLM judge over the whole conversation: the quality of the path the agent took through the conversation (Vertex AI's evaluation service, or our own "
        "prompt on the Gemini API); scored on the last turn.",
        criterion_type=EvalServiceCriterion,
        requires_judge=True,
        conversation_level=True,
        version="1",
        default_threshold=0.8,
    )
    metric_title = "Trajectory quality"
    metric_definition = "Trajectory quality: how well did the agent get to its outcome over the conversation? Judge the path, not only whether the goal was met: the agent understood each turn, asked for missing information only when needed, kept track of what the user said earlier, took sensible steps in a sensible order, did not repeat itself or contradict itself, and kept the user informed."
