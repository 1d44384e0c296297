"""``response_evaluation_score``: coherence of the final response on a 1-5 scale (ADK: Vertex ``COHERENCE``).

Needs expected invocations like ADK (the reference itself is not shown to the judge, as in Vertex's coherence).
See :mod:`otel_eval.metrics._judge_pointwise` for the Gemini-judge and Vertex AI paths.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from otel_eval.metrics._judge_pointwise import PointwiseJudgeEvaluator
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import EvalServiceCriterion

COHERENCE_PROMPT = """# Instruction
You are an expert evaluator. You will be given a user prompt and the response an AI agent gave to it.
Rate the coherence of the response, following the definition, criteria and rating rubric below.

# Evaluation
## Metric Definition
Coherence: how well the sentences of the response fit together as a whole, with a clear and logical progression of ideas.

## Criteria
- Logical flow: ideas follow each other in a sensible order, with no contradictions.
- Organisation: related ideas are grouped; structure (paragraphs, lists) helps the reader.
- Cohesion: transitions and references connect sentences; nothing is abrupt or out of place.
- Consistency: terminology, tense and point of view stay consistent.

## Rating Rubric
5: (Completely coherent). The response flows smoothly and logically from start to end.
4: (Mostly coherent). Minor lapses in flow or organisation that do not hinder understanding.
3: (Somewhat coherent). Noticeable lapses; the main line of thought is still followable.
2: (Somewhat incoherent). Frequent jumps or contradictions; hard to follow.
1: (Incoherent). No discernible logical progression.

## Evaluation Steps
STEP 1: Read the response as a whole and identify its main line of thought.
STEP 2: Check each criterion.
STEP 3: Choose the rating from the rubric.

# Output
Answer with one JSON object and nothing else:
{{"reasoning": "<short explanation>", "coherence_score": <integer 1-5>}}

# User Inputs and AI-generated Response
## User Prompt
{prompt}

## AI-generated Response
{response}
"""


class CoherenceVerdict(BaseModel):
    """The judge's structured coherence rating."""

    reasoning: str
    coherence_score: int = Field(ge=1, le=5)


class ResponseEvaluationScoreEvaluator(PointwiseJudgeEvaluator):
    """How coherent is the final response (1-5)?"""

    info = MetricInfo(
        name="response_evaluation_score",
        description="LLM judge: coherence of the final response on a 1-5 scale (needs an eval set, like ADK).",
        criterion_type=EvalServiceCriterion,
        min_value=1.0,
        max_value=5.0,
        requires_reference=True,
        requires_judge=True,
        version="1",
        default_threshold=3.5,
    )
    requires_expected = True
    prompt_template = COHERENCE_PROMPT
    verdict_model = CoherenceVerdict
    verdict_key = "coherence_score"
    vertex_input_key = "coherenceInput"
    vertex_result_key = "coherenceResult"

    def verdict_score(self, verdict: Any) -> float:
        """The 1-5 rating."""
        return float(verdict.coherence_score)
