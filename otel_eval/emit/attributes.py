"""The attributes one evaluation result carries on its event and its evaluation span."""

from __future__ import annotations

from opentelemetry.util.types import AttributeValue

from otel_eval import semconv
from otel_eval.transport.messages import EvaluationRecord


def record_attributes(record: EvaluationRecord) -> dict[str, AttributeValue]:
    """``gen_ai.evaluation.*`` values plus provenance; absent values are left out (OTel attributes cannot be None)."""
    attributes: dict[str, AttributeValue] = {
        semconv.GEN_AI_EVALUATION_NAME: record.metric_name,
        semconv.GEN_AI_EVALUATION_SCORE_LABEL: record.label,
        semconv.OTEL_EVAL_STATUS: record.eval_status.name,
        semconv.OTEL_EVAL_METRIC_VERSION: record.metric_version,
        semconv.OTEL_EVAL_RESULT_ID: record.result_id,
    }
    optional: dict[str, AttributeValue | None] = {
        semconv.GEN_AI_EVALUATION_SCORE_VALUE: record.score,
        semconv.GEN_AI_EVALUATION_EXPLANATION: record.explanation,
        semconv.ERROR_TYPE: record.error_type,
        semconv.OTEL_EVAL_THRESHOLD: record.threshold,
        semconv.OTEL_EVAL_JUDGE_MODEL: record.judge_model,
        semconv.GEN_AI_AGENT_NAME: record.agent_name,
        semconv.GEN_AI_CONVERSATION_ID: record.session_id,
        semconv.OTEL_EVAL_INVOCATION_ID: record.invocation_id or None,
        semconv.OTEL_EVAL_EVAL_ID: record.eval_id,
        semconv.OTEL_EVAL_EVAL_SET_ID: record.eval_set_id,
    }
    attributes.update({key: value for key, value in optional.items() if value is not None})
    return attributes


def metric_attributes(record: EvaluationRecord) -> dict[str, AttributeValue]:
    """The low-cardinality attributes of the score histogram and the results counter."""
    attributes: dict[str, AttributeValue] = {
        semconv.GEN_AI_EVALUATION_NAME: record.metric_name,
        semconv.GEN_AI_EVALUATION_SCORE_LABEL: record.label,
    }
    if record.agent_name:
        attributes[semconv.GEN_AI_AGENT_NAME] = record.agent_name
    return attributes
