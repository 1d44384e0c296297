"""The rubric-based judge engine shared by the rubric metrics, as ADK 2.13's ``rubric_based_evaluator``.

Effective rubrics = criterion rubrics + invocation rubrics of the metric's type (duplicate ids and an empty list are
errors). The judge answers ``ID:`` / ``Property:`` / ``Rationale:`` / ``Verdict:`` blocks in plain text, parsed
exactly as ADK's ``DefaultAutoRaterResponseParser`` but in linear time (its ``(?m)^\\s*ID: (.*)$`` rescans a whitespace
run from every line start in it, and it pairs every id line with every property line); a block is matched to a rubric
by id, else by normalised text.
Samples are combined per rubric by majority vote; the overall score is the mean of all voted rubric scores pooled
over invocations.
"""

from __future__ import annotations

import bisect
import re
import statistics
import unicodedata
from dataclasses import dataclass
from typing import ClassVar

from otel_eval.judge import JUDGE_INJECTION_SUSPECTED, JUDGE_UNPARSEABLE
from otel_eval.metrics._llm_judge import JudgePrompt, Sample, SampledJudgeEvaluator
from otel_eval.metrics._reply_scan import line_fields
from otel_eval.model import (
    EvalStatus,
    EvaluationResult,
    PerInvocationResult,
    Rubric,
    RubricsBasedCriterion,
    RubricScore,
)

_RATIONALE_PATTERN = re.compile(r"(?<=Rationale: )(.*)")
_VERDICT_PATTERN = re.compile(r"(?<=Verdict: )(.*)")
_SMART_CHARS = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})
_DECORATION_CHARS = " *_`#>-\u2022\"'"
_WHITESPACE = re.compile(r"\s+")
_AGGREGATED_RATIONALE = (
    "This is an aggregated score derived from individual entries. Please refer to individual entries in each"
    " invocation for actual rationale from the model."
)


@dataclass(frozen=True, slots=True)
class RubricResponse:
    """One parsed judge block."""

    rubric_id: str | None
    property_text: str
    rationale: str
    score: float | None


def parse_rubric_responses(text: str) -> list[RubricResponse]:
    """ADK's parser: all three of Property/Rationale/Verdict must have equal counts, else nothing is parsed.

    ``ID:`` and ``Property:`` lines are ADK's ``(?m)^\\s*ID: (.*)$`` and ``(?m)^\\s*Property: (.*)$`` matches (by
    :func:`line_fields`); ``Rationale:`` and ``Verdict:`` are ADK's own regexes (linear: a lookbehind, then the line).
    A property takes the last id line between the previous property's start and its own, found by bisection where ADK
    compares every id with every property.
    """
    properties = line_fields(text, "Property: ")
    ids = line_fields(text, "ID: ")
    rationales = _RATIONALE_PATTERN.findall(text)
    scores: list[float | None] = []
    for verdict in _VERDICT_PATTERN.findall(text):
        lowered = verdict.lower()
        scores.append(1.0 if "yes" in lowered else 0.0 if "no" in lowered else None)
    if not len(properties) == len(rationales) == len(scores):
        return []
    id_starts = [start for start, _ in ids]
    responses = []
    for index, ((start, property_text), rationale, score) in enumerate(
        zip(properties, rationales, scores, strict=True)
    ):
        previous_start = properties[index - 1][0] if index > 0 else -1
        last_id = bisect.bisect_left(id_starts, start) - 1
        rubric_id = None
        if last_id >= 0 and id_starts[last_id] > previous_start:
            rubric_id = ids[last_id][1].strip() or None
        responses.append(RubricResponse(rubric_id, property_text.strip(), rationale.strip(), score))
    return responses


def normalize_rubric_text(text: object) -> str:
    """ADK's normalisation for matching echoed rubric text: NFKC, ASCII quotes/dashes, whitespace, decoration."""
    if not isinstance(text, str):
        return ""
    text = unicodedata.normalize("NFKC", text).translate(_SMART_CHARS)
    return _WHITESPACE.sub(" ", text).strip(_DECORATION_CHARS).lower()


def effective_rubrics(
    criterion_rubrics: list[Rubric], invocation_rubrics: list[Rubric] | None, rubric_type: str
) -> list[Rubric]:
    """Criterion rubrics plus the invocation's rubrics of ``rubric_type``. Raises ValueError like ADK."""
    by_id: dict[str, Rubric] = {}
    typed = [r for r in invocation_rubrics or [] if r.type == rubric_type]
    for scope, rubrics in (("criterion", criterion_rubrics), ("invocation", typed)):
        for rubric in rubrics:
            if rubric.rubric_id in by_id:
                raise ValueError(
                    f"Rubric with rubric_id '{rubric.rubric_id}' already exists. Rubric defined in {scope} "
                    "conflicts with an existing rubric."
                )
            by_id[rubric.rubric_id] = rubric
    if not by_id:
        raise ValueError("Rubrics are required.")
    return list(by_id.values())


def rubrics_text(rubrics: list[Rubric]) -> str:
    """The ``<properties>`` lines: ``*  [id: ID] text``."""
    return "\n".join(f"*  [id: {r.rubric_id}] {r.rubric_content.text_property}" for r in rubrics)


def _mean(scores: list[RubricScore]) -> float | None:
    values = [s.score for s in scores if s.score is not None]
    return statistics.mean(values) if values else None


@dataclass(frozen=True, slots=True)
class RubricPrompt(JudgePrompt):
    """A rubric prompt remembers the rubrics it asked about."""

    rubrics: tuple[Rubric, ...] = ()


class RubricBasedJudgeEvaluator(SampledJudgeEvaluator):
    """Base of ``rubric_based_*_v1``: subclasses set ``rubric_type`` and build the prompt."""

    rubric_type: ClassVar[str]
    judges_tool_results = True  # both rubric prompts show the tool calls with their responses

    @property
    def criterion_rubrics(self) -> list[Rubric]:
        """Rubrics from the criterion."""
        criterion = self.criterion
        return list(criterion.rubrics) if isinstance(criterion, RubricsBasedCriterion) else []

    def parse(self, text: str, prompt: JudgePrompt) -> Sample:
        """ADK's parse and rubric matching; a 'yes' is not trusted when the data itself carries verdict lines."""
        responses = parse_rubric_responses(text)
        if not responses:
            return Sample(
                score=None,
                rubric_scores=[],
                explanation="judge answer is not in the Property/Rationale/Verdict format",
                error_type=JUDGE_UNPARSEABLE,
            )
        if any(r.score == 1.0 for r in responses) and prompt.data.verdict_from_data("verdict:"):
            return Sample(
                score=None,
                rubric_scores=[],
                explanation="the evaluated data contains verdict lines; 'yes' verdicts are not trusted",
                error_type=JUDGE_INJECTION_SUSPECTED,
            )
        rubrics = prompt.rubrics if isinstance(prompt, RubricPrompt) else ()
        by_id = {r.rubric_id: r for r in rubrics}
        by_text = {normalize_rubric_text(r.rubric_content.text_property): r for r in rubrics}
        scores: list[RubricScore] = []
        for response in responses:
            rubric = by_id.get(response.rubric_id) if response.rubric_id else None
            if rubric is None:
                rubric = by_text.get(normalize_rubric_text(response.property_text))
            if rubric is not None:
                scores.append(
                    RubricScore(rubric_id=rubric.rubric_id, rationale=response.rationale, score=response.score)
                )
        mean = _mean(scores)
        return Sample(
            score=mean,
            rubric_scores=scores,
            error_type=None if mean is not None else JUDGE_UNPARSEABLE,
            explanation=None if mean is not None else "no judged block matched a rubric",
        )

    def aggregate_samples(self, samples: list[Sample]) -> PerInvocationResult:
        """Per rubric id: more yes than no -> first yes, else first no; only unscored -> first unscored."""
        buckets: dict[str, tuple[list[RubricScore], list[RubricScore], list[RubricScore]]] = {}
        for sample in samples:
            for rubric_score in sample.rubric_scores or []:
                none, positive, negative = buckets.setdefault(rubric_score.rubric_id, ([], [], []))
                if rubric_score.score is None:
                    none.append(rubric_score)
                elif rubric_score.score == 1.0:
                    positive.append(rubric_score)
                else:
                    negative.append(rubric_score)
        voted: list[RubricScore] = []
        for none, positive, negative in buckets.values():
            if not positive and not negative:
                voted.append(none[0])
            elif len(positive) > len(negative):
                voted.append(positive[0])
            else:
                voted.append(negative[0])
        score = _mean(voted)
        failed = [f"{s.rubric_id}: {s.rationale}" for s in voted if s.score is not None and s.score < 1.0]
        explanation = "; ".join(failed) if failed else None
        error = next((s for s in samples if s.error_type), None) if score is None else None
        return PerInvocationResult(
            score=score,
            eval_status=self.status_of(score),
            rubric_scores=voted,
            explanation=explanation or (error.explanation if error else None),
            error_type=error.error_type if error else None,
        )

    def aggregate_invocations(self, results: list[PerInvocationResult]) -> EvaluationResult:
        """Overall = mean of every voted rubric score pooled over invocations; per-rubric means alongside."""
        pooled: list[RubricScore] = []
        by_id: dict[str, list[RubricScore]] = {}
        for result in results:
            for rubric_score in result.rubric_scores or []:
                by_id.setdefault(rubric_score.rubric_id, []).append(rubric_score)
                pooled.append(rubric_score)
        overall = _mean(pooled)
        overall_rubrics = [
            RubricScore(rubric_id=rubric_id, score=_mean(scores), rationale=_AGGREGATED_RATIONALE)
            for rubric_id, scores in by_id.items()
        ]
        return EvaluationResult(
            overall_score=overall,
            overall_eval_status=self.status_of(overall) if overall is not None else EvalStatus.NOT_EVALUATED,
            per_invocation_results=results,
            overall_rubric_scores=overall_rubrics,
            explanation=None if overall is not None else next((r.explanation for r in results if r.explanation), None),
            error_type=None if overall is not None else next((r.error_type for r in results if r.error_type), None),
        )
