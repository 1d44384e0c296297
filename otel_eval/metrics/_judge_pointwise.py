"""Pointwise judged metrics with a structured JSON verdict (``safety_v1``, ``response_evaluation_score``).

ADK 2.13 sends these to Vertex AI's Gen AI evaluation service, one call per invocation (prompt = user text,
response = final text), and averages the non-None scores. Here the verdict comes from the Gemini judge with a
``response_schema``, validated strictly (anything else is an unparseable sample), one sample per invocation unless
``judge_model_options.num_samples`` is set. When the judge is configured for Vertex AI, the invocation is sent to
``evaluateInstances`` instead (``safetyInput`` / ``coherenceInput``); that path is exercised here only against a
loopback server speaking the documented REST shape, not against a Google Cloud project.
"""

from __future__ import annotations

import asyncio
import json
import math
import statistics
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError

from otel_eval.errors import JudgeError
from otel_eval.judge import JUDGE_INJECTION_SUSPECTED, JUDGE_UNPARSEABLE, DataBlocks
from otel_eval.metrics._judge_context import content_text
from otel_eval.metrics._llm_judge import JudgePrompt, Sample, SampledJudgeEvaluator
from otel_eval.model import (
    ConversationScenario,
    EvalStatus,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    TracedInvocation,
)


class PointwiseJudgeEvaluator(SampledJudgeEvaluator):
    """Template: subclasses give the prompt template, verdict model, score mapping and Vertex input/result keys."""

    prompt_template: ClassVar[str]
    verdict_model: ClassVar[type[BaseModel]]
    verdict_key: ClassVar[str]
    """The verdict field's name; when the evaluated data mentions it, passing verdicts are not trusted."""
    vertex_input_key: ClassVar[str]
    vertex_result_key: ClassVar[str]

    def verdict_score(self, verdict: Any) -> float:
        """The score of a validated verdict."""
        raise NotImplementedError

    def is_passing(self, score: float) -> bool:
        """Whether ``score`` would pass (injection-suspect verdicts are only rejected when they would)."""
        return self.status_of(score) is EvalStatus.PASSED

    def default_samples(self) -> int | None:
        """One judge call per invocation, like ADK's single Vertex call."""
        return 1

    def score_inputs(self) -> dict[str, Any]:
        """The judged-metric inputs with this metric's template; on Vertex AI, its evaluation service judges."""
        return {
            **super().score_inputs(),
            "prompt_templates": [self.prompt_template],
            "vertex_evaluation_service": self.judge_client.uses_vertex,
        }

    def build_prompt(self, actual: Invocation, expected: Invocation | None) -> JudgePrompt:
        """The template with the user prompt and the response as data blocks."""
        prompt = content_text(actual.user_content) or ""
        response = content_text(actual.final_response) or ""
        data = DataBlocks(prompt, response)
        text = self.prompt_template.format(
            prompt=data.block("User prompt", prompt), response=data.block("AI-generated response", response)
        )
        return JudgePrompt(text=text, data=data, response_schema=self.verdict_model)

    def parse(self, text: str, prompt: JudgePrompt) -> Sample:
        """Strict schema validation of the JSON verdict; anything else is unparseable, never a pass."""
        try:
            verdict = self.verdict_model.model_validate_json(text.strip())
        except ValidationError as exc:
            reason = f"judge verdict does not match the schema: {exc.errors()[0]['msg']}"
            return Sample(score=None, explanation=reason, error_type=JUDGE_UNPARSEABLE)
        score = self.verdict_score(verdict)
        if self.is_passing(score) and prompt.data.verdict_from_data(self.verdict_key):
            return Sample(
                score=None,
                explanation=f"the evaluated data contains the verdict field {self.verdict_key!r}; not trusted",
                error_type=JUDGE_INJECTION_SUSPECTED,
            )
        return Sample(score=score, explanation=str(getattr(verdict, "reasoning", "")) or None)

    def aggregate_samples(self, samples: list[Sample]) -> PerInvocationResult:
        """Mean of the readable samples (one sample: its score)."""
        scores = [s.score for s in samples if s.score is not None]
        score = statistics.mean(scores) if scores else None
        first = next((s for s in samples if s.score is not None), samples[0])
        return PerInvocationResult(
            score=score,
            eval_status=self.status_of(score),
            explanation=first.explanation,
            error_type=first.error_type if score is None else None,
        )

    def aggregate_invocations(self, results: list[PerInvocationResult]) -> EvaluationResult:
        """Mean of the non-None invocation scores (ADK's Vertex facade); none -> NOT_EVALUATED."""
        scores = [r.score for r in results if r.score is not None]
        overall = sum(scores) / len(scores) if scores else None
        return EvaluationResult(
            overall_score=overall,
            overall_eval_status=self.status_of(overall),
            per_invocation_results=results,
            explanation=None if scores else next((r.explanation for r in results if r.explanation), None),
            error_type=None if scores else next((r.error_type for r in results if r.error_type), None),
        )

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """Gemini judge by default; Vertex AI's evaluation service when the judge is configured for Vertex."""
        if not self.judge_client.uses_vertex:
            return await super().evaluate(actual, expected, conversation_scenario=conversation_scenario)
        if self.requires_expected and expected is None:
            return self.not_evaluated(f"{self.info.name} needs expected invocations", count=len(actual))
        results = await asyncio.gather(*(self._vertex_invocation(t) for t in actual))
        return self.aggregate_invocations(list(results))

    async def _vertex_invocation(self, traced: TracedInvocation) -> PerInvocationResult:
        problem = self.context_problem(traced)
        if problem is not None:
            return problem.result()
        invocation = traced.invocation
        body = {
            self.vertex_input_key: {
                "metricSpec": {},
                "instance": {
                    "prompt": content_text(invocation.user_content) or "",
                    "prediction": content_text(invocation.final_response) or "",
                },
            }
        }
        try:
            answer = await self.judge_client.evaluate_instances(body, metric=self.info.name)
        except JudgeError as exc:
            return PerInvocationResult(explanation=str(exc), error_type=exc.error_type)
        result = answer.get(self.vertex_result_key)
        raw = result.get("score") if isinstance(result, dict) else None
        if not isinstance(raw, (int, float)) or isinstance(raw, bool) or math.isnan(raw):
            reason = f"Vertex AI answered no score: {json.dumps(answer)[:300]}"
            return PerInvocationResult(explanation=reason, error_type=JUDGE_UNPARSEABLE)
        score = float(raw)
        explanation = result.get("explanation") if isinstance(result, dict) else None
        return PerInvocationResult(
            score=score, eval_status=self.status_of(score), explanation=str(explanation) if explanation else None
        )
