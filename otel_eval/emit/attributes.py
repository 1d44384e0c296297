"""The attributes one evaluation result carries on its event and its evaluation span."""

from __future__ import annotations

import threading

from opentelemetry.util.types import AttributeValue

from otel_eval import semconv
from otel_eval._runtime.identity_cache import IdentityCache
from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord
from otel_eval.model.utf8_json import utf8_text


def record_attributes(record: EvaluationRecord) -> dict[str, AttributeValue]:
    """``gen_ai.evaluation.*`` values plus provenance; absent values are left out (OTel attributes cannot be None).

    A lone surrogate in a value (``json.loads`` makes one of a ``\\ud83d`` escape: an answer cut mid-emoji by a
    UTF-16 agent, a judge's error quoting it, a request's agent name) is given as U+FFFD: the OTLP exporters' protobuf
    encoder drops such an attribute (an ERROR traceback each time), and fails the span's whole batch on such a status
    (:mod:`otel_eval.emit.spans` takes the ERROR status's text from these attributes).

    Not to be changed by the caller: asked again for the record it was last asked for, it returns the same dict (a
    result scored inline is asked for its evaluation span, then for its event; a record is not changed once made).
    """
    last = _LAST.last
    if last is not None and last[0] is record:
        return last[1]
    fields = record.__dict__  # a model's fields live there: read without an attribute look-up each
    if not (metric := fields["metric_name"]).isascii():
        metric = utf8_text(metric)
    attributes: dict[str, AttributeValue] = {
        semconv.GEN_AI_EVALUATION_NAME: metric,
        semconv.GEN_AI_EVALUATION_SCORE_LABEL: fields["label"],  # the label, status, version and id are ours: ASCII
        semconv.OTEL_EVAL_STATUS: _STATUS_NAMES[id(fields["eval_status"])],
        semconv.OTEL_EVAL_METRIC_VERSION: fields["metric_version"],
        semconv.OTEL_EVAL_RESULT_ID: fields["result_id"],
    }
    # Each optional value read once and set when present, in this order (no dict of them all made, then filtered); a
    # string is looked at again only when not ASCII (``str.isascii`` reads a flag).
    for key, name in _OPTIONAL_BEFORE_INVOCATION_ID:
        if (value := fields[name]) is not None:
            attributes[key] = value if value.__class__ is not str or value.isascii() else utf8_text(value)
    if value := fields["invocation_id"]:  # an empty invocation id is absent
        attributes[semconv.OTEL_EVAL_INVOCATION_ID] = value if value.isascii() else utf8_text(value)
    for key, name in _OPTIONAL_AFTER_INVOCATION_ID:
        if (value := fields[name]) is not None:
            attributes[key] = value if value.__class__ is not str or value.isascii() else utf8_text(value)
    return _LAST.put(record, attributes)


def utf8_values(attributes: dict[str, AttributeValue]) -> dict[str, AttributeValue]:
    """``attributes``, each string value holding a lone surrogate replaced (in place) by :func:`utf8_text`'s: an ASCII
    string, nearly every one, is passed over at the cost of ``str.isascii`` (which reads a flag)."""
    for key, value in attributes.items():
        if value.__class__ is str and not value.isascii():
            attributes[key] = utf8_text(value)
    return attributes


def utf8_record(record: EvaluationRecord) -> EvaluationRecord:
    """``record``, or a copy of it with each lone surrogate in its text fields as U+FFFD (a backend's JSON body cannot
    carry one: the request would fail to encode)."""
    fields = record.__dict__
    changed = {
        name: cleaned
        for name, value in fields.items()
        if value.__class__ is str and not value.isascii() and (cleaned := utf8_text(value)) is not value
    }
    return record.model_copy(update=changed) if changed else record


_LAST: IdentityCache[dict[str, AttributeValue]] = IdentityCache(1)
"""The attributes of the record last asked for (any thread may ask: a miss only makes them again)."""

_STATUS_NAMES = {id(status): status.name for status in EvalStatus}
"""Each status's name, by the member's identity (a member is a singleton; its ``name`` and its hash are each a call in
Python)."""

_OPTIONAL_BEFORE_INVOCATION_ID: tuple[tuple[str, str], ...] = (
    (semconv.GEN_AI_EVALUATION_SCORE_VALUE, "score"),
    (semconv.GEN_AI_EVALUATION_EXPLANATION, "explanation"),
    (semconv.OTEL_EVAL_SCORE_VERDICT, "verdict"),
    (semconv.ERROR_TYPE, "error_type"),
    (semconv.OTEL_EVAL_THRESHOLD, "threshold"),
    (semconv.OTEL_EVAL_JUDGE_MODEL, "judge_model"),
    (semconv.OTEL_EVAL_EVALUATOR_ID, "evaluator_id"),
    (semconv.OTEL_EVAL_EVALUATOR_TYPE, "evaluator_type"),
    (semconv.OTEL_EVAL_EVALUATOR_VERSION, "evaluator_version"),
    (semconv.GEN_AI_AGENT_NAME, "agent_name"),
    (semconv.GEN_AI_CONVERSATION_ID, "session_id"),
)

_OPTIONAL_AFTER_INVOCATION_ID: tuple[tuple[str, str], ...] = (
    (semconv.OTEL_EVAL_EVAL_ID, "eval_id"),
    (semconv.OTEL_EVAL_EVAL_SET_ID, "eval_set_id"),
    (semconv.OTEL_EVAL_SESSION_WINDOW, "session_window"),
    (semconv.OTEL_EVAL_SESSION_FIRST_TURN, "session_first_turn"),
    (semconv.OTEL_EVAL_SESSION_LAST_TURN, "session_last_turn"),
    (semconv.OTEL_EVAL_PRIORITY_REASON, "priority_reason"),
)


class BoundedLabel:
    """A metric label whose values come from untrusted spans (the agent name), bounded: the first ``limit`` distinct
    values are kept, every later one is folded to ``other`` (:data:`~otel_eval.semconv.LABEL_VALUE_OTHER`), so spans
    cannot create series without end. Thread-safe.

    Args:
        limit: distinct values kept (``OTEL_EVAL_METRIC_AGENT_NAMES``; 0 folds every value).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str) -> str:
        if value in self._seen:
            return value
        with self._lock:
            if len(self._seen) < self.limit:
                self._seen.add(value)
                return value
        return semconv.LABEL_VALUE_OTHER


def metric_attributes(record: EvaluationRecord, agent_names: BoundedLabel | None = None) -> dict[str, AttributeValue]:
    """The low-cardinality attributes of the score histogram and the results counter (uniform label, no verdict).

    Of the provenance only the evaluator version: one value per evaluator configuration, so a series can be split by
    it (an evaluator change shows as a new series, not as a regression). The agent name, read from spans, goes
    through ``agent_names`` (past its limit: ``other``) when given. A result of an invocation priority sampling
    rescued carries its reason (``otel_eval.priority.reason``): without it, the results are an unbiased sample.
    """
    attributes: dict[str, AttributeValue] = {
        semconv.GEN_AI_EVALUATION_NAME: record.metric_name,
        semconv.GEN_AI_EVALUATION_SCORE_LABEL: record.label,
    }
    if record.agent_name:
        name = record.agent_name
        attributes[semconv.GEN_AI_AGENT_NAME] = agent_names(name) if agent_names is not None else name
    if record.evaluator_version:
        attributes[semconv.OTEL_EVAL_EVALUATOR_VERSION] = record.evaluator_version
    if record.priority_reason:
        attributes[semconv.OTEL_EVAL_PRIORITY_REASON] = record.priority_reason
    return utf8_values(attributes)


_SCORE_LABELS = {
    EvalStatus.PASSED: semconv.LABEL_PASS,
    EvalStatus.FAILED: semconv.LABEL_FAIL,
    EvalStatus.NOT_EVALUATED: semconv.LABEL_NOT_EVALUATED,
    EvalStatus.INFORMATIONAL: semconv.LABEL_INFORMATIONAL,
}


def score_label(status: EvalStatus) -> str:
    """``gen_ai.evaluation.score.label`` of ``status``: the same four words for every metric (the label contract in
    :mod:`otel_eval.semconv`)."""
    return _SCORE_LABELS[status]


def score_verdict(status: EvalStatus, verdicts: tuple[str, str] | None) -> str | None:
    """``otel_eval.score.verdict``: the metric's own word for PASSED or FAILED (``verdicts``), else None."""
    if verdicts is None or status not in (EvalStatus.PASSED, EvalStatus.FAILED):
        return None
    return verdicts[0] if status is EvalStatus.PASSED else verdicts[1]
