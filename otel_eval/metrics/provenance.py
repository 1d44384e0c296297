"""Evaluator provenance: which evaluator produced a result, of which kind, and which version of it.

A change of score is either the agent's or the evaluator's (a new prompt, judge model, threshold). The version is a
short digest of everything that changes a metric's score and nothing else: the metric's own ``info.version`` (bumped
when its parser or scoring changes), its validated criterion (threshold, match type, rubrics, judge options), and for
LLM-judged metrics the judge model, the prompt templates, the data-block instruction and the sample count. So two
processes configured alike report the same version, and a dashboard split by it shows an evaluator change as a new
series instead of a regression.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from otel_eval import semconv

if TYPE_CHECKING:
    from otel_eval.metrics.base import Evaluator

VERSION_DIGITS = 12
"""Hex digits of the version digest (48 bits: no collision among the evaluator versions one deployment sees)."""
ID_DIGITS = 8


@dataclass(frozen=True, slots=True)
class EvaluatorProvenance:
    """Who scored a result: ``otel_eval.evaluator.{id,type,version}`` and the judge model (judged metrics)."""

    id: str
    """The metric name, plus ``/`` and a digest of its criterion when it has one (e.g. ``hallucinations_v1/1a2b3c4d``)."""
    type: str
    """``llm_judge`` or ``deterministic``."""
    version: str
    """Digest of what changes the score (see the module docs)."""
    judge_model: str | None = None


def digest(value: Any, digits: int) -> str:
    """The first ``digits`` hex digits of the SHA-256 of ``value`` as canonical JSON (sorted keys)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:digits]


def provenance_of(evaluator: Evaluator) -> EvaluatorProvenance:
    """The provenance of ``evaluator`` as configured (its :meth:`~otel_eval.metrics.base.Evaluator.score_inputs`)."""
    info = evaluator.info
    inputs = evaluator.score_inputs()
    criterion = inputs.get("criterion")
    evaluator_id = info.name if criterion is None else f"{info.name}/{digest(criterion, ID_DIGITS)}"
    judge_model = inputs.get("judge_model")
    return EvaluatorProvenance(
        id=evaluator_id,
        type=semconv.EVALUATOR_TYPE_LLM_JUDGE if info.requires_judge else semconv.EVALUATOR_TYPE_DETERMINISTIC,
        version=digest(inputs, VERSION_DIGITS),
        judge_model=judge_model if isinstance(judge_model, str) else None,
    )
