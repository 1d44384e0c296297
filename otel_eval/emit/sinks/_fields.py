"""What every backend sink says about a record beyond its score: the verdict word, who scored it, provenance."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

from otel_eval import semconv
from otel_eval.model.messages import EvaluationRecord

LLM_JUDGE: Final = "llm_judge"
"""``otel_eval.evaluator.type`` of a judged metric (the other is ``deterministic``)."""
EXPLANATION_LIMIT: Final = 4000
"""Characters of an explanation sent to a backend."""


def verdict(record: EvaluationRecord) -> str:
    """The metric's own word for its result when it has one (``grounded``, ``unsafe``), else the label
    (``pass``, ``fail``, ``not_evaluated``, ``informational``)."""
    return record.verdict or record.label


def judged(record: EvaluationRecord) -> bool:
    """Whether an LLM judge produced the score (else code did)."""
    return record.evaluator_type == LLM_JUDGE


def explanation(record: EvaluationRecord) -> str | None:
    """The explanation (or, for a result that could not be evaluated, its error type), cut to a bounded length."""
    text = record.explanation or record.error_type
    return text[:EXPLANATION_LIMIT] if text else None


def evaluator_key(record: EvaluationRecord) -> str:
    """The evaluator id, or the metric name without one (provenance; no longer part of a score's key)."""
    return record.evaluator_id or record.metric_name


def score_key(record: EvaluationRecord) -> tuple[str, str, str]:
    """What a backend score is keyed by: (trace, span, metric). Each invocation (its root span) keeps its own score of
    each metric; re-evaluating it, with the same or a changed evaluator, replaces that score instead of adding one."""
    return (record.trace_id.lower(), record.span_id.lower(), record.metric_name)


def score_id(record: EvaluationRecord) -> str:
    """A stable id of :func:`score_key`, for a backend that upserts on an id of the caller's (Langfuse)."""
    key = "\x00".join(("otel-eval", *score_key(record)))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def replaced(previous: Mapping[str, Any] | None, record: EvaluationRecord) -> dict[str, str]:
    """The ``otel_eval.replaced.evaluator.*`` metadata for ``record`` replacing a score whose metadata is
    ``previous``: the earlier evaluator version and id when they differ from ``record``'s, else nothing."""
    if not previous:
        return {}
    version = previous.get(semconv.OTEL_EVAL_EVALUATOR_VERSION)
    evaluator = previous.get(semconv.OTEL_EVAL_EVALUATOR_ID)
    if version == record.evaluator_version and evaluator == record.evaluator_id:
        return {}
    fields = {
        semconv.OTEL_EVAL_REPLACED_EVALUATOR_VERSION: version,
        semconv.OTEL_EVAL_REPLACED_EVALUATOR_ID: evaluator,
    }
    return {key: str(value) for key, value in fields.items() if value is not None}


def provenance(record: EvaluationRecord) -> dict[str, Any]:
    """The record's provenance under its telemetry names (only what is set), for a backend's metadata."""
    fields: dict[str, Any] = {
        "source": semconv.INSTRUMENTATION_SCOPE,  # "otel_eval"
        semconv.OTEL_EVAL_RESULT_ID: record.result_id,
        semconv.OTEL_EVAL_EVALUATOR_ID: record.evaluator_id,
        semconv.OTEL_EVAL_EVALUATOR_TYPE: record.evaluator_type,
        semconv.OTEL_EVAL_EVALUATOR_VERSION: record.evaluator_version,
        semconv.OTEL_EVAL_METRIC_VERSION: record.metric_version,
        semconv.OTEL_EVAL_JUDGE_MODEL: record.judge_model,
        semconv.OTEL_EVAL_STATUS: record.eval_status.name,
        semconv.OTEL_EVAL_THRESHOLD: record.threshold,
        semconv.GEN_AI_EVALUATION_SCORE_LABEL: record.label,
        semconv.OTEL_EVAL_SCORE_VERDICT: record.verdict,
        semconv.ERROR_TYPE: record.error_type,
        semconv.GEN_AI_AGENT_NAME: record.agent_name,
        semconv.OTEL_EVAL_INVOCATION_ID: record.invocation_id or None,
        semconv.OTEL_EVAL_EVAL_ID: record.eval_id,
        semconv.OTEL_EVAL_EVAL_SET_ID: record.eval_set_id,
    }
    return {key: value for key, value in fields.items() if value is not None}
