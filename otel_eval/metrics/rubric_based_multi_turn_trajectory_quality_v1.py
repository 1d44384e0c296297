"""``rubric_based_multi_turn_trajectory_quality_v1``: an LLM judge checks a whole conversation against yes/no rubrics.

ADK 2.13's ``RubricBasedMultiTurnTrajectoryEvaluator``: the dialogue of every turn (user texts, the agent's
intermediate texts, tool calls and tool outputs read from the turn's events, final answers; see
:mod:`otel_eval.metrics._multi_turn`), the agents' instructions and tools, and the rubrics of the criterion plus the
last turn's ``TRAJECTORY_QUALITY`` rubrics go into one prompt, judged ``num_samples`` times and parsed and voted as
the other rubric metrics (:mod:`otel_eval.metrics._judge_rubrics`). The result sits on the last turn; the first N-1
turns are NOT_EVALUATED; the overall result is the last turn's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from otel_eval.judge import DataBlocks
from otel_eval.metrics._conversation_judge import ConversationJudgeEvaluator
from otel_eval.metrics._judge_prompts_multi_turn import MULTI_TURN_TRAJECTORY_QUALITY_PROMPT
from otel_eval.metrics._judge_rubrics import RubricBasedJudgeEvaluator, RubricPrompt, effective_rubrics
from otel_eval.metrics._multi_turn import dialogue, instructions_and_tools
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import (
    Rubric,
    RubricsBasedCriterion,
    TracedInvocation,
)


class RubricBasedMultiTurnTrajectoryV1Evaluator(ConversationJudgeEvaluator, RubricBasedJudgeEvaluator):
    """Rubric-judged quality of the agent's behaviour over a whole conversation (one verdict, on the last turn)."""

    info = MetricInfo(
        name="rubric_based_multi_turn_trajectory_quality_v1",
        description="LLM judge over the whole conversation: share of rubrics (yes/no properties) the agent's turns, "
        "tool calls included, fulfil; scored on the last turn.",
        criterion_type=RubricsBasedCriterion,
        requires_judge=True,
        conversation_level=True,
        version="1",
        default_threshold=0.8,
    )
    rubric_type = "TRAJECTORY_QUALITY"
    prompt_templates = (MULTI_TURN_TRAJECTORY_QUALITY_PROMPT,)

    def conversation_prompt(self, conversation: Sequence[TracedInvocation]) -> RubricPrompt:
        """ADK's prompt over ``conversation``; dialogue, instructions and tools are data blocks, the properties
        (ADK's JSON list of ``id``/``property``/``type``) are not. Raises ValueError without rubrics."""
        rubrics = effective_rubrics(self.criterion_rubrics, conversation[-1].invocation.rubrics, self.rubric_type)
        history = dialogue(conversation)
        instructions, tools = instructions_and_tools(conversation)
        data = DataBlocks(instructions, tools, history)
        text = MULTI_TURN_TRAJECTORY_QUALITY_PROMPT.format(
            agent_instructions=data.block("Agent instructions", instructions),
            agent_tool_definitions=data.block("Agent tool definitions", tools),
            user_agent_dialogue=data.block("Conversation history", history),
            properties=properties_json(rubrics),
        )
        return RubricPrompt(text=text, data=data, rubrics=tuple(rubrics))


def properties_json(rubrics: Sequence[Rubric]) -> str:
    """ADK's ``<properties>``: a JSON list (indent 2) of ``{"id", "property"[, "type"]}``."""
    listed = []
    for rubric in rubrics:
        entry: dict[str, str | None] = {"id": rubric.rubric_id, "property": rubric.rubric_content.text_property}
        if rubric.type:
            entry["type"] = rubric.type
        listed.append(entry)
    return json.dumps(listed, indent=2)
