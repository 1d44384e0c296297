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
from otel_eval.metrics._judge_prompts_multi_turn import MULTI_TURN_TRAJECTORY_QUALITY_PROMPT
from otel_eval.metrics._judge_rubrics import RubricBasedJudgeEvaluator, RubricPrompt, effective_rubrics
from otel_eval.metrics._llm_judge import INVALID_INPUT, JudgePrompt
from otel_eval.metrics._multi_turn import dialogue, instructions_and_tools
from otel_eval.metrics._reference import unpaired_reference
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import (
    ConversationScenario,
    EvalStatus,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    Rubric,
    RubricsBasedCriterion,
    TracedInvocation,
)


class RubricBasedMultiTurnTrajectoryV1Evaluator(RubricBasedJudgeEvaluator):
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

    def build_prompt(self, actual: Invocation, expected: Invocation | None) -> JudgePrompt:
        """Not used: the prompt covers the whole conversation (:meth:`conversation_prompt`)."""
        raise NotImplementedError("rubric_based_multi_turn_trajectory_quality_v1 judges whole conversations")

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

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """One judged result on the last turn, the first N-1 turns NOT_EVALUATED (ADK's layout)."""
        del conversation_scenario
        count = len(actual)
        if not actual:
            return EvaluationResult()
        if expected is not None:
            unpaired = unpaired_reference(self, actual, expected)
            if unpaired is not None:
                return unpaired
        unavailable = self.judge_unavailable(count)
        if unavailable is not None:
            return unavailable
        last = await self._judge_last_turn(actual)
        earlier = [PerInvocationResult(score=None, eval_status=EvalStatus.NOT_EVALUATED) for _ in actual[:-1]]
        result = self.aggregate_invocations([*earlier, last])
        return result

    async def _judge_last_turn(self, conversation: Sequence[TracedInvocation]) -> PerInvocationResult:
        for traced in conversation:  # an incomplete turn anywhere makes the dialogue untrustworthy
            problem = self.context_problem(traced)
            if problem is not None:
                return problem.result()
        try:
            prompt = self.conversation_prompt(conversation)
        except ValueError as exc:
            return PerInvocationResult(explanation=f"{self.info.name}: {exc}", error_type=INVALID_INPUT)
        overflow = self.prompt_overflow(prompt)
        if overflow is not None:
            return overflow.result()
        return await self._admitted_invocation(conversation[-1], prompt, self.num_samples())


def properties_json(rubrics: Sequence[Rubric]) -> str:
    """ADK's ``<properties>``: a JSON list (indent 2) of ``{"id", "property"[, "type"]}``."""
    listed = []
    for rubric in rubrics:
        entry: dict[str, str | None] = {"id": rubric.rubric_id, "property": rubric.rubric_content.text_property}
        if rubric.type:
            entry["type"] = rubric.type
        listed.append(entry)
    return json.dumps(listed, indent=2)
