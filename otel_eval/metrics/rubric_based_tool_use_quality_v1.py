"""``rubric_based_tool_use_quality_v1``: an LLM judge checks the agent's tool use against yes/no rubrics.

Reference-free. ADK 2.13's prompt and scoring (see :mod:`otel_eval.metrics._judge_rubrics`).
"""

from __future__ import annotations

from otel_eval.judge import DataBlocks
from otel_eval.metrics._judge_context import content_text, tool_calls_and_responses_json, tool_declarations_json
from otel_eval.metrics._judge_prompts_rubric import TOOL_USE_QUALITY_PROMPT
from otel_eval.metrics._judge_rubrics import RubricBasedJudgeEvaluator, RubricPrompt, effective_rubrics, rubrics_text
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import Invocation, RubricsBasedCriterion


class RubricBasedToolUseV1Evaluator(RubricBasedJudgeEvaluator):
    """Rubric-judged quality of the tool calls an invocation made."""

    info = MetricInfo(
        name="rubric_based_tool_use_quality_v1",
        description="LLM judge: share of rubrics (yes/no properties) the agent's tool calls fulfil.",
        criterion_type=RubricsBasedCriterion,
        requires_judge=True,
        version="1",
        default_threshold=0.8,
    )
    rubric_type = "TOOL_USE_QUALITY"
    prompt_templates = (TOOL_USE_QUALITY_PROMPT,)

    def build_prompt(self, actual: Invocation, expected: Invocation | None) -> RubricPrompt:
        """ADK's prompt; tool declarations, user input and tool usage are data blocks, the rubrics are not."""
        rubrics = effective_rubrics(self.criterion_rubrics, actual.rubrics, self.rubric_type)
        declarations = tool_declarations_json(actual.app_details)
        user_input = content_text(actual.user_content) or ""
        usage = tool_calls_and_responses_json(actual.intermediate_data)
        data = DataBlocks(declarations, user_input, usage)
        text = TOOL_USE_QUALITY_PROMPT.format(
            tool_declarations=data.block("Available tools", declarations),
            user_input=data.block("User prompt", user_input),
            tool_usage=data.block("Tool calls and tool responses", usage),
            rubrics=rubrics_text(rubrics),
        )
        return RubricPrompt(text=text, data=data, rubrics=tuple(rubrics))
