"""``rubric_based_final_response_quality_v1``: an LLM judge checks the final response against yes/no rubrics.

Reference-free. ADK 2.13's prompt and scoring (see :mod:`otel_eval.metrics._judge_rubrics`).
"""

from __future__ import annotations

from otel_eval.judge import DataBlocks
from otel_eval.metrics._judge_context import (
    content_text,
    developer_instructions_for,
    grounding_metadata_json,
    invocation_text,
    tool_calls_and_responses_json,
    tool_declarations_json,
)
from otel_eval.metrics._judge_prompts_rubric import FINAL_RESPONSE_QUALITY_PROMPT
from otel_eval.metrics._judge_rubrics import RubricBasedJudgeEvaluator, RubricPrompt, effective_rubrics, rubrics_text
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import Invocation, RubricsBasedCriterion


class RubricBasedFinalResponseQualityV1Evaluator(RubricBasedJudgeEvaluator):
    """Rubric-judged quality of the final response, grounded in the user prompt and tool results."""

    info = MetricInfo(
        name="rubric_based_final_response_quality_v1",
        description="LLM judge: share of rubrics (yes/no properties) the final response fulfils, grounded in tools.",
        criterion_type=RubricsBasedCriterion,
        requires_judge=True,
        version="1",
        default_threshold=0.8,
    )
    rubric_type = "FINAL_RESPONSE_QUALITY"
    prompt_templates = (FINAL_RESPONSE_QUALITY_PROMPT,)

    def build_prompt(self, actual: Invocation, expected: Invocation | None) -> RubricPrompt:
        """ADK's prompt; everything read from the trace is a data block, the rubrics are not."""
        rubrics = effective_rubrics(self.criterion_rubrics, actual.rubrics, self.rubric_type)
        include = bool(self.criterion and self.criterion.include_intermediate_responses_in_final)
        fields = {
            "developer_instructions": developer_instructions_for(actual),
            "tool_declarations": tool_declarations_json(actual.app_details),
            "user_input": content_text(actual.user_content) or "",
            "response_steps": tool_calls_and_responses_json(actual.intermediate_data),
            "grounding_metadata": grounding_metadata_json(actual.intermediate_data),
            "final_response": invocation_text(actual, include_intermediate=include) or "",
        }
        data = DataBlocks(*fields.values())
        labels = {
            "developer_instructions": "Developer instructions",
            "tool_declarations": "Available tools",
            "user_input": "User prompt",
            "response_steps": "Response steps (tool calls and tool responses)",
            "grounding_metadata": "Grounding metadata",
            "final_response": "Final answer",
        }
        blocks = {name: data.block(labels[name], value) for name, value in fields.items()}
        text = FINAL_RESPONSE_QUALITY_PROMPT.format(**blocks, rubrics=rubrics_text(rubrics))
        return RubricPrompt(text=text, data=data, rubrics=tuple(rubrics))
