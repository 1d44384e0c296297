"""``hallucinations_v1``: share of response sentences supported by the invocation's context, as ADK 2.13.

Per step (the final response, plus each intermediate text with ``evaluate_intermediate_nl_responses``): a segmenter
call splits the text into ``<sentence>`` s, a validator call labels each against the context (developer
instructions, user prompt, tool declarations, grounding metadata, earlier texts, tool calls and outputs). Step score
= (supported + not_applicable) / labelled; invocation = mean of step scores; overall = mean of invocations. One
judge sample per call (ADK ignores ``num_samples`` here), i.e. two calls per step like ADK.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from otel_eval.errors import JudgeError
from otel_eval.judge import JUDGE_INJECTION_SUSPECTED, JUDGE_UNPARSEABLE, DataBlocks
from otel_eval.judge.budget import spending
from otel_eval.judge.prompt_safety import DATA_INSTRUCTION
from otel_eval.metrics._judge_context import content_text, hallucination_context
from otel_eval.metrics._judge_context_check import ContextProblem, context_overflow
from otel_eval.metrics._judge_prompts_hallucinations import SEGMENTER_PROMPT, VALIDATOR_PROMPT
from otel_eval.metrics._llm_judge import JudgePrompt, LlmJudgeEvaluator
from otel_eval.metrics._reply_scan import marked_blocks, tagged
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import (
    ConversationScenario,
    EvalStatus,
    EvaluationResult,
    HallucinationsCriterion,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    PerInvocationResult,
    TracedInvocation,
)

logger = logging.getLogger(__name__)

POSITIVE_LABELS = frozenset({"supported", "not_applicable"})
NEGATIVE_LABELS = frozenset({"unsupported", "contradictory", "disputed"})
MIN_SEGMENT_COVERAGE = 0.5
"""Segmented sentences copied from the response must cover at least this share of it (see ``_coverage``)."""

_VALIDATION_MARKERS = ("sentence:", "\nlabel:", "\nrationale:", "\nsupporting_excerpt:", "\ncontradicting_excerpt:")
_NON_ALNUM = re.compile(r"[\W_]+")
_COVERAGE_PASSES = 32


@dataclass(frozen=True, slots=True)
class Step:
    """A text to check and the context it is checked against."""

    context: str
    nl_response: str


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """A step's accuracy (None when not judged) with labelled sentences or the reason."""

    score: float | None
    sentences: list[dict[str, str | None]]
    reason: str | None = None
    error_type: str | None = None


def parse_sentences(text: str) -> list[str]:
    """ADK's segmenter parse: the contents of every ``<sentence>...</sentence>`` (its ``re.findall``, in linear
    time)."""
    return tagged(text, "<sentence>", "</sentence>")


def parse_validation_results(text: str) -> list[dict[str, str | None]]:
    """ADK's validator parse: one dict per ``sentence:/label:/rationale:/..._excerpt:`` block (its case-insensitive
    ``re.finditer`` with lazy fields up to the next ``\\nsentence:``, in linear time)."""
    results: list[dict[str, str | None]] = []
    for sentence, label, rationale, supporting, contradicting in marked_blocks(
        text.strip(), _VALIDATION_MARKERS, "\nsentence:"
    ):
        results.append(
            {
                "sentence": sentence.strip(),
                "label": label.strip(),
                "rationale": rationale.strip(),
                "supporting_excerpt": supporting.strip() if supporting.strip().lower() != "null" else None,
                "contradicting_excerpt": contradicting.strip() if contradicting.strip().lower() != "null" else None,
            }
        )
    return results


def accuracy(results: list[dict[str, str | None]]) -> float | None:
    """(supported + not_applicable) / labelled sentences; other labels are ignored; None when none is labelled."""
    scores = []
    for result in results:
        label = (result.get("label") or "").strip().lower()
        if label in POSITIVE_LABELS:
            scores.append(1)
        elif label in NEGATIVE_LABELS:
            scores.append(0)
    return statistics.mean(scores) if scores else None


def steps_to_evaluate(invocation: Invocation, *, intermediate: bool) -> list[Step]:
    """ADK's ``_get_steps_to_evaluate``: intermediate texts (each with the events before it), then the final text."""
    steps: list[Step] = []
    events: list[InvocationEvent] = []
    data = invocation.intermediate_data
    all_events = list(data.invocation_events) if isinstance(data, InvocationEvents) else []
    if intermediate:
        for event in all_events:
            texts = [p.text for p in event.content.parts if p.text] if event.content and event.content.parts else []
            if texts:
                step_events = (
                    [*events, event.model_copy(update={"content": None})] if event.grounding_metadata else events
                )
                context = hallucination_context(invocation, step_events)
                steps.extend(Step(context=context, nl_response=text) for text in texts)
            events.append(event)
    else:
        events = all_events
    final_text = content_text(invocation.final_response)
    if final_text:
        steps.append(Step(context=hallucination_context(invocation, events), nl_response=final_text))
    return steps


def _coverage(sentences: list[str], response: str) -> float:
    """Share of the response (letters and digits only) made of sentences that were copied from it.

    Each sentence is looked for from where the previous one was found (a segmenter copies them in order), then before
    that (the next ones are then looked for after it). The searches read at most ``_COVERAGE_PASSES`` times the
    response: sentences left when that is spent count as not copied. A reply of thousands of sentences that are not in
    the response thus costs a bounded number of passes over it, not one per sentence, while sentences copied in order
    cost one pass in all.
    """
    whole = _NON_ALNUM.sub("", response).lower()
    if not whole:
        return 1.0
    size = len(whole)
    budget = _COVERAGE_PASSES * size
    copied = 0
    cursor = 0
    for sentence in sentences:
        piece = _NON_ALNUM.sub("", sentence).lower()
        if not piece:
            continue
        if budget < size:  # the next one may need a whole pass
            break
        found = whole.find(piece, cursor)
        if found >= 0:
            budget -= found + len(piece) - cursor
        else:  # out of order: the part before the cursor (after it was just read)
            found = whole.find(piece, 0, cursor + len(piece) - 1)
            budget -= size
        if found >= 0:
            cursor = found + len(piece)
            copied += len(piece)
    return min(1.0, copied / size)


def call_sizes(step: Step) -> tuple[int, int]:
    """Estimated characters of the step's segmenter and validator prompts. The validator's sentences are unknown
    before the segmenter answers; they are copied from the response, so the response (twice, for the sentence tags
    and slack) stands in for them."""
    segmenter = len(SEGMENTER_PROMPT) + len(DATA_INSTRUCTION) + len(step.nl_response)
    validator = len(VALIDATOR_PROMPT) + len(DATA_INSTRUCTION) + len(step.context) + 2 * len(step.nl_response)
    return segmenter, validator


class HallucinationsV1Evaluator(LlmJudgeEvaluator):
    """Sentence-level groundedness of the agent's texts in its context."""

    info = MetricInfo(
        name="hallucinations_v1",
        description=(
            "LLM judge: share of response sentences supported by the context: instructions, tool declarations, user"
            " prompt and tool results."
        ),
        criterion_type=HallucinationsCriterion,
        requires_judge=True,
        version="1",
        default_threshold=0.8,
        verdicts=("grounded", "hallucinated"),
    )
    prompt_templates = (SEGMENTER_PROMPT, VALIDATOR_PROMPT)
    sampled = False  # one call per segmenter and validator step, as ADK: num_samples does not change the score
    judges_tool_results = True  # tool outputs are the context sentences are checked against

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """Scores every invocation; see the module docs."""
        del conversation_scenario
        unjudgeable = self.unjudgeable(actual, expected)  # reference-free, but an expected list must pair
        if unjudgeable is not None:
            return unjudgeable
        results = list(await asyncio.gather(*(self._invocation(t) for t in actual)))
        scores = [r.score for r in results if r.score is not None]
        if not scores:
            return EvaluationResult(
                overall_score=None,
                overall_eval_status=EvalStatus.NOT_EVALUATED,
                per_invocation_results=results,
                explanation=next((r.explanation for r in results if r.explanation), None),
                error_type=next((r.error_type for r in results if r.error_type), None),
            )
        overall = statistics.mean(scores)
        return EvaluationResult(
            overall_score=overall, overall_eval_status=self.status_of(overall), per_invocation_results=results
        )

    async def _invocation(self, traced: TracedInvocation) -> PerInvocationResult:
        problem = self.context_problem(traced)
        if problem is not None:
            return problem.result()
        intermediate = (
            isinstance(self.criterion, HallucinationsCriterion) and self.criterion.evaluate_intermediate_nl_responses
        )
        invocation = traced.invocation
        steps = steps_to_evaluate(invocation, intermediate=intermediate)
        if not steps:
            return PerInvocationResult(
                score=None,
                eval_status=EvalStatus.NOT_EVALUATED,
                explanation="no response text to check",
                rubric_scores=[],
            )
        overflow = next(filter(None, (self._step_overflow(step) for step in steps)), None)
        if overflow is not None:  # checked before any call: a step judged while another cannot be is no score
            return overflow.result()
        # The budget admits the whole invocation (every step's segmenter and validator call) or none of it.
        admission = self.admit([traced], [size for step in steps for size in call_sizes(step)])
        if isinstance(admission, ContextProblem):
            return admission.result()
        with spending(admission):
            outcomes = list(await asyncio.gather(*(self._step(step) for step in steps)))
        scores = [o.score for o in outcomes if o.score is not None]
        score = statistics.mean(scores) if scores else None
        flagged = [
            f"{s.get('label')}: {s.get('sentence')}"
            for o in outcomes
            for s in o.sentences
            if (s.get("label") or "").strip().lower() in NEGATIVE_LABELS
        ]
        failed = next((o for o in outcomes if o.score is None), None)
        explanation = "; ".join(flagged) if flagged else (failed.reason if score is None and failed else None)
        return PerInvocationResult(
            score=score,
            eval_status=self.status_of(score),
            explanation=explanation,
            error_type=(failed.error_type if failed else None) if score is None else None,
            rubric_scores=[],
            details={
                "judge_model": self.judge_model,
                "steps": [{"score": o.score, "sentences": o.sentences, "reason": o.reason} for o in outcomes],
            },
        )

    def _step_overflow(self, step: Step) -> ContextProblem | None:
        """Whether the step's larger prompt, the validator's, would overflow the judge's window."""
        model = self.judge_model
        return context_overflow(call_sizes(step)[1], model, self.judge_client.input_token_limit(model))

    async def _step(self, step: Step) -> StepOutcome:
        try:
            return await self._judge_step(step)
        except JudgeError as exc:
            return StepOutcome(None, [], reason=str(exc), error_type=exc.error_type)

    async def _judge_step(self, step: Step) -> StepOutcome:
        data = DataBlocks(step.nl_response)
        segmenter = JudgePrompt(SEGMENTER_PROMPT.format(response=data.block("Response", step.nl_response)), data)
        reply = await self.ask(segmenter)
        problem = self.reply_problem(reply, segmenter)
        if problem is not None or reply.text is None:
            return StepOutcome(
                None,
                [],
                reason=f"segmenter: {problem.explanation if problem else 'no text'}",
                error_type=(problem.error_type if problem else None) or JUDGE_UNPARSEABLE,
            )
        sentences = parse_sentences(reply.text)
        if not sentences:
            return StepOutcome(None, [], reason="No sentences produced by segmenter.", error_type=JUDGE_UNPARSEABLE)
        if _coverage(sentences, step.nl_response) < MIN_SEGMENT_COVERAGE:
            return StepOutcome(
                None, [], reason="segmenter output does not cover the response", error_type=JUDGE_INJECTION_SUSPECTED
            )
        sentences_text = "\n".join(f"<sentence>{s}</sentence>" for s in sentences)
        data = DataBlocks(step.context, sentences_text)
        validator = JudgePrompt(
            VALIDATOR_PROMPT.format(
                context=data.block("Context", step.context), sentences=data.block("Sentences", sentences_text)
            ),
            data,
        )
        reply = await self.ask(validator)
        problem = self.reply_problem(reply, validator)
        if problem is not None or reply.text is None:
            return StepOutcome(
                None,
                [],
                reason=f"validator: {problem.explanation if problem else 'no text'}",
                error_type=(problem.error_type if problem else None) or JUDGE_UNPARSEABLE,
            )
        results = parse_validation_results(reply.text)
        score = accuracy(results)
        if score is None:
            return StepOutcome(None, results, reason="validator labelled no sentence", error_type=JUDGE_UNPARSEABLE)
        positive = any((r.get("label") or "").strip().lower() in POSITIVE_LABELS for r in results)
        if positive and data.verdict_from_data("label:"):
            return StepOutcome(
                None,
                results,
                reason="the evaluated data contains label lines; labels are not trusted",
                error_type=JUDGE_INJECTION_SUSPECTED,
            )
        logger.debug("hallucinations step: %s", json.dumps(results)[:200])
        return StepOutcome(score, results)
