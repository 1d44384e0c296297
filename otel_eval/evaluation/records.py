"""The records of one request or session window: one :class:`~otel_eval.model.messages.EvaluationRecord` per
invocation and metric, with its deterministic result id, the evaluator's provenance and the window it covers (what
:class:`~otel_eval.evaluation.core.EvaluationCore` emits and returns)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from otel_eval import semconv
from otel_eval._runtime.identity_cache import IdentityCache
from otel_eval.emit.attributes import score_label, score_verdict
from otel_eval.evaluation.plan import PlannedMetric
from otel_eval.evaluation.sessions import SessionWindow
from otel_eval.metrics import Evaluator
from otel_eval.metrics.provenance import EvaluatorProvenance
from otel_eval.model import EvalStatus, EvaluationResult, PerInvocationResult, TracedInvocation
from otel_eval.model.messages import (
    RESULT_SCHEMA_VERSION,
    EvaluationRecord,
    record_of_values,
    result_id,
    result_id_invocation_key,
    result_id_metric_key,
    result_id_of,
    session_result_id,
)

logger = logging.getLogger(__name__)

_MAX_EXPLANATION_CHARS = 4000
_NOT_EVALUATED = EvalStatus.NOT_EVALUATED
"""Read once: an enum member read off its class, and an enum member's hash, are each a call in Python (3.11's
``EnumType.__getattr__``, ``Enum.__hash__``); a member is a singleton, so per result it is compared and looked up
by identity."""


class RecordedInvocation(Protocol):
    """What a record reads of an invocation: a :class:`~otel_eval.model.TracedInvocation`, or the plain view of one
    (:class:`~otel_eval.reconstruct.plain.PlainInvocation`), whose records are the same."""

    @property
    def trace_id(self) -> str:
        """The trace id."""
        ...

    @property
    def span_id(self) -> str:
        """The invocation's root span id."""
        ...

    @property
    def invocation_id(self) -> str:
        """The ADK invocation id."""
        ...

    @property
    def agent_name(self) -> str | None:
        """The agent's name."""
        ...

    @property
    def session_id(self) -> str | None:
        """The session id."""
        ...

    @property
    def end_time_ns(self) -> int:
        """When the invocation ended."""
        ...

    @property
    def priority_reason(self) -> str | None:
        """Why priority sampling evaluated it although the sample rate left it out; None when in the sample."""
        ...


@dataclass(slots=True)
class RecordContext:
    """What every record of one request shares."""

    invocations: Sequence[RecordedInvocation]
    eval_id: str | None
    eval_set_id: str | None
    window: SessionWindow | None = None
    explanations: bool = True
    """False: the records carry no explanation (``OTEL_EVAL_EXPLANATIONS``)."""
    _by_invocation: list[tuple[bytes, dict[str, Any]]] | None = field(default=None, init=False, repr=False)

    def span_parent(self) -> tuple[RecordedInvocation, list[tuple[str, str]]]:
        """Where the evaluation span goes (a request's first invocation; a window's last turn) and what it links to
        (every turn's root span, for a window)."""
        if self.window is None:
            return self.invocations[0], []
        return self.invocations[-1], [(turn.trace_id, turn.span_id) for turn in self.invocations]

    def span_record(self, records: list[EvaluationRecord]) -> EvaluationRecord:
        """The record the evaluation span carries: the first invocation's, a window's last turn's."""
        return records[0] if self.window is None else records[-1]

    def records(self, metric: PlannedMetric, result: EvaluationResult) -> list[EvaluationRecord]:
        """One record per invocation, from its per-invocation result (the overall result when there is none)."""
        fields = _metric_fields(metric)
        per = result.per_invocation_results
        window = self.window
        templates = fields.templates if window is None else None
        shared = self._shared() if templates is not None else []
        records = []
        for index, traced in enumerate(self.invocations):
            entry = per[index] if index < len(per) else None
            if entry is None:
                single = len(self.invocations) == 1
                entry = PerInvocationResult(
                    score=result.overall_score if single else None,
                    eval_status=result.overall_eval_status if single else _NOT_EVALUATED,
                )
            status = entry.eval_status
            explanation = (entry.explanation or result.explanation) if self.explanations else None
            error_type = entry.error_type or (result.error_type if status is _NOT_EVALUATED else None)
            if status is _NOT_EVALUATED and error_type is None:
                before_last = window is not None and index < len(self.invocations) - 1
                error_type = semconv.ERROR_TYPE_SCORED_ON_LAST_TURN if before_last else semconv.ERROR_TYPE_NOT_EVALUATED
            if explanation is not None and len(explanation) > _MAX_EXPLANATION_CHARS:
                explanation = _truncate(explanation)
            score = entry.score
            template = templates.get(id(status)) if templates is not None else None
            if (
                template is not None
                and (score is None or type(score) is float)
                and (explanation is None or type(explanation) is str)
                and (error_type is None or type(error_type) is str)
            ):
                # The values are of their declared types: the record is made from the metric's template and the
                # invocation's fields, as EvaluationRecord.of_trusted would make it, without a call per field.
                prefix, values = shared[index]
                record = template.copy()
                record.update(values)
                record["result_id"] = result_id_of(prefix, fields.id_suffix)
                record["score"] = score
                record["explanation"] = explanation
                record["error_type"] = error_type
                record["evaluated_at"] = time.time()
                records.append(record_of_values(record))
                continue
            if window is None:
                rid = result_id(traced.trace_id, traced.span_id, metric.name, fields.evaluator_version)
            else:
                first, last = self.invocations[0], self.invocations[-1]
                rid = session_result_id(
                    window.session_id, (first.trace_id, first.span_id), (last.trace_id, last.span_id),
                    traced.trace_id, traced.span_id, metric.name, fields.evaluator_version,
                )  # fmt: skip
            records.append(
                EvaluationRecord.of_trusted(
                    result_id=rid,
                    trace_id=traced.trace_id,
                    span_id=traced.span_id,
                    invocation_id=traced.invocation_id or "",
                    metric_name=metric.name,
                    metric_version=fields.version,
                    evaluator_id=fields.evaluator_id,
                    evaluator_type=fields.evaluator_type,
                    evaluator_version=fields.evaluator_version,
                    judge_model=fields.judge_model,
                    score=score,
                    eval_status=status,
                    label=score_label(status),
                    verdict=score_verdict(status, fields.verdicts),
                    threshold=fields.threshold,
                    explanation=explanation,
                    error_type=error_type,
                    agent_name=traced.agent_name,
                    session_id=traced.session_id,
                    eval_id=self.eval_id,
                    eval_set_id=self.eval_set_id,
                    invocation_end_time_ns=traced.end_time_ns,
                    session_window=window.window if window is not None else None,
                    session_first_turn=window.first_turn if window is not None else None,
                    session_last_turn=window.last_turn if window is not None else None,
                    priority_reason=traced.priority_reason,
                )
            )
        return records

    def _shared(self) -> list[tuple[bytes, dict[str, Any]]]:
        """Per invocation (of a request, not a window), what every metric's record of it shares: the start of its
        result id's key and its record fields (from validated models); worked out at the first metric."""
        shared = self._by_invocation
        if shared is None:
            eval_id, eval_set_id = self.eval_id, self.eval_set_id
            shared = self._by_invocation = [
                (
                    result_id_invocation_key(traced.trace_id, traced.span_id),
                    {
                        "trace_id": traced.trace_id,
                        "span_id": traced.span_id,
                        "invocation_id": traced.invocation_id or "",
                        "agent_name": traced.agent_name,
                        "session_id": traced.session_id,
                        "eval_id": eval_id,
                        "eval_set_id": eval_set_id,
                        "invocation_end_time_ns": traced.end_time_ns,
                        "priority_reason": traced.priority_reason,
                    },
                )
                for traced in self.invocations
            ]
        return shared


@dataclass(frozen=True, slots=True)
class _MetricFields:
    """What every record of one planned metric carries whatever it scored: worked out once per metric."""

    version: str
    evaluator_id: str | None
    evaluator_type: str | None
    evaluator_version: str | None
    judge_model: str | None
    threshold: float | None
    verdicts: tuple[str, str] | None
    id_suffix: bytes
    """The end of the key a record's result id digests (:func:`~otel_eval.model.messages.result_id`)."""
    templates: dict[int, dict[str, Any]] | None
    """Per status (by the member's identity, see :data:`_NOT_EVALUATED`), a record's fields (every one, in field
    order) with this metric's values: the rest are the invocation's and the result's. None when a value of the
    metric's is not of its declared type (validated)."""


_EMPTY_RECORD: dict[str, Any] = {
    **dict.fromkeys(EvaluationRecord.model_fields),
    "schema_version": RESULT_SCHEMA_VERSION,
    "session_window": None,
    "session_first_turn": None,
    "session_last_turn": None,
    "priority_reason": None,
}
"""A record's fields in field order (the order validation stores them in), those of a request's record that no
metric, invocation or result sets at their values."""
_METRIC_FIELDS: IdentityCache[_MetricFields] = IdentityCache(1024)
"""By planned metric."""


def _metric_fields(metric: PlannedMetric) -> _MetricFields:
    """The record fields of ``metric`` that do not depend on the result: the metric's version, provenance, threshold
    and verdict words. A planned metric's evaluator does not change (its provenance is computed once), so they are
    kept per planned metric; a provenance that could not be computed is not kept (asked again next time)."""
    kept = _METRIC_FIELDS.get(metric)
    if kept is not None:
        return kept
    evaluator = metric.evaluator
    info = evaluator.info if evaluator is not None else None
    provenance = _provenance(evaluator)
    version = info.version if info is not None else "1"
    evaluator_id = provenance.id if provenance is not None else None
    evaluator_type = provenance.type if provenance is not None else None
    evaluator_version = provenance.version if provenance is not None else None
    judge_model = provenance.judge_model if provenance is not None else None
    threshold = evaluator.threshold if evaluator is not None else None
    verdicts = info.verdicts if info is not None else None
    common: dict[str, Any] = {
        "metric_name": metric.name,
        "metric_version": version,
        "evaluator_id": evaluator_id,
        "evaluator_type": evaluator_type,
        "evaluator_version": evaluator_version,
        "judge_model": judge_model,
        "threshold": threshold,
    }
    # The types of_trusted checks (the version, the threshold), and the provenance's (from the metric's code).
    trusted = (
        type(version) is str
        and (threshold is None or type(threshold) is float)
        and all(value is None or type(value) is str for name, value in common.items() if name != "threshold")
    )
    templates = None
    if trusted:
        templates = {
            id(status): {
                **_EMPTY_RECORD,
                **common,
                "eval_status": status,
                "label": score_label(status),
                "verdict": score_verdict(status, verdicts),
            }
            for status in EvalStatus
        }
    fields = _MetricFields(
        version=version,
        evaluator_id=evaluator_id,
        evaluator_type=evaluator_type,
        evaluator_version=evaluator_version,
        judge_model=judge_model,
        threshold=threshold,
        verdicts=verdicts,
        id_suffix=result_id_metric_key(metric.name, evaluator_version),
        templates=templates,
    )
    if provenance is not None or evaluator is None:
        _METRIC_FIELDS.put(metric, fields)
    return fields


def records_of(
    invocations: list[TracedInvocation],
    metric: PlannedMetric,
    result: EvaluationResult,
    *,
    eval_id: str | None = None,
    eval_set_id: str | None = None,
    explanations: bool = True,
) -> list[EvaluationRecord]:
    """The records online evaluation would emit for ``result`` of ``metric`` on ``invocations`` (one per
    invocation, same result ids): what ``otel-eval run`` hands its sinks. A conversation-level metric's result on
    the turns of one session is a session window's, as the processor and the workers emit it: the session's first
    window, from its first turn (window ids, ``scored_on_last_turn`` on the turns before the last)."""
    window = None
    session_id = invocations[0].session_id if invocations else None
    conversation_level = metric.info is not None and metric.info.conversation_level
    if session_id and conversation_level and all(turn.session_id == session_id for turn in invocations):
        window = SessionWindow(session_id, 0, 0, turns=list(invocations))
    return RecordContext(list(invocations), eval_id, eval_set_id, window, explanations).records(metric, result)


def _provenance(evaluator: Evaluator | None) -> EvaluatorProvenance | None:
    """The evaluator's provenance; None when the metric could not be built, or its provenance cannot be computed
    (a judge that fails to say its model must not lose the result)."""
    if evaluator is None:
        return None
    try:
        return evaluator.provenance
    except Exception:
        logger.exception("cannot compute the provenance of metric %s", evaluator.info.name)
        return None


def _truncate(text: str | None) -> str | None:
    if text is None or len(text) <= _MAX_EXPLANATION_CHARS:
        return text
    return text[: _MAX_EXPLANATION_CHARS - 1] + "…"
