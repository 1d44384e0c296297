"""``final_response_match_v2``: an LLM judge decides whether the final response is valid against the reference.

As ADK 2.13: ``num_samples`` samples per invocation, majority vote (tie -> invalid), overall = valid / evaluated.
"""

from __future__ import annotations

import json

from otel_eval.judge import JUDGE_INJECTION_SUSPECTED, JUDGE_UNPARSEABLE, DataBlocks
from otel_eval.metrics._judge_context import content_text, invocation_text
from otel_eval.metrics._judge_labels import FINAL_RESPONSE_VERDICT_KEYS, Label, label_score, parse_critique
from otel_eval.metrics._judge_prompts_final_response import FINAL_RESPONSE_MATCH_V2_PROMPT
from otel_eval.metrics._llm_judge import JudgePrompt, Sample, SampledJudgeEvaluator, majority_vote
from otel_eval.metrics._reply_scan import quoted_or_bracketed
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import (
    EvalStatus,
    EvaluationResult,
    Invocation,
    LlmAsAJudgeCriterion,
    PerInvocationResult,
)


class FinalResponseMatchV2Evaluator(SampledJudgeEvaluator):
    """Judge-rated validity of the final response against the expected one."""

    info = MetricInfo(
        name="final_response_match_v2",
        description="LLM judge: is the final response valid given the reference response (majority of samples).",
        criterion_type=LlmAsAJudgeCriterion,
        requires_reference=True,
        requires_judge=True,
        version="2",
        default_threshold=0.8,
        verdicts=("valid", "invalid"),
    )
    requires_expected = True
    prompt_templates = (FINAL_RESPONSE_MATCH_V2_PROMPT,)

    def build_prompt(self, actual: Invocation, expected: Invocation | None) -> JudgePrompt:
        """ADK's prompt with the user prompt, response and reference as data blocks."""
        if expected is None:
            raise ValueError("expected_invocation is required for this metric.")
        include = bool(self.criterion and self.criterion.include_intermediate_responses_in_final)
        reference = invocation_text(expected, include_intermediate=include) or ""
        response = invocation_text(actual, include_intermediate=include) or ""
        user_prompt = content_text(expected.user_content) or ""
        data = DataBlocks(user_prompt, response, reference)
        text = FINAL_RESPONSE_MATCH_V2_PROMPT.format(
            prompt=data.block("User prompt", user_prompt),
            response=data.block("Agent response", response),
            golden_response=data.block("Reference response", reference),
        )
        return JudgePrompt(text=text, data=data)

    def parse(self, text: str, prompt: JudgePrompt) -> Sample:
        """ADK's ``_parse_critique``; a valid verdict is rejected when the data itself carries the verdict field."""
        label = parse_critique(text)
        explanation = _reasoning(text)
        if label is Label.NOT_FOUND:
            return Sample(score=None, explanation="judge verdict not found", error_type=JUDGE_UNPARSEABLE)
        if label is Label.VALID and any(prompt.data.verdict_from_data(key) for key in FINAL_RESPONSE_VERDICT_KEYS):
            return Sample(
                score=None,
                explanation="the evaluated data contains the verdict field; a 'valid' verdict is not trusted",
                error_type=JUDGE_INJECTION_SUSPECTED,
            )
        return Sample(score=label_score(label), explanation=explanation)

    def aggregate_samples(self, samples: list[Sample]) -> PerInvocationResult:
        """Majority vote; tie -> invalid; no readable sample -> the first sample (None)."""
        chosen = majority_vote(samples)
        votes = [s.score for s in samples]
        return PerInvocationResult(
            score=chosen.score,
            eval_status=self.status_of(chosen.score),
            explanation=chosen.explanation,
            error_type=chosen.error_type if chosen.score is None else None,
            details={"votes": votes},
        )

    def aggregate_invocations(self, results: list[PerInvocationResult]) -> EvaluationResult:
        """Valid / evaluated over invocations with a score; none evaluated -> NOT_EVALUATED."""
        evaluated = [r for r in results if r.score is not None and r.eval_status is not EvalStatus.NOT_EVALUATED]
        if not evaluated:
            return EvaluationResult(
                overall_score=None,
                overall_eval_status=EvalStatus.NOT_EVALUATED,
                per_invocation_results=results,
                explanation=next((r.explanation for r in results if r.explanation), None),
                error_type=next((r.error_type for r in results if r.error_type), None),
            )
        overall = sum(r.score or 0.0 for r in evaluated) / len(evaluated)
        return EvaluationResult(
            overall_score=overall, overall_eval_status=self.status_of(overall), per_invocation_results=results
        )


def _reasoning(text: str) -> str | None:
    """The ``"reasoning"`` field's list or string (``re.search(r'"reasoning"\\s*:\\s*(\\[.*?\\]|".*?(?<!\\\\)")',
    text, re.DOTALL)``, scanned in linear time), else None."""
    raw = quoted_or_bracketed(text, '"reasoning"')
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return raw.strip("[]\"' ")
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value)
