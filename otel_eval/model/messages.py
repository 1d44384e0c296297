"""The versioned messages between the processor, the workers and result consumers.

:class:`EvaluationRequest` travels from the agent process to a worker (in-process queue or the
``otel_eval.requests`` topic); :class:`EvaluationRecord` is one metric's result on one invocation, what the
emitters turn into telemetry and what goes to the ``otel_eval.results`` topic. Both serialise as JSON with a
``schema_version``; a reader rejects versions it does not know with a clear error.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from otel_eval.model import EvalCase, EvalStatus, TracedInvocation
from otel_eval.model.traced import PRIORITY_REASON_PATTERN
from otel_eval.model.utf8_json import json_bytes

REQUEST_SCHEMA_VERSION: Literal[1] = 1
RESULT_SCHEMA_VERSION: Literal[1] = 1


class EvaluationRequest(BaseModel):
    """One conversation turn (or several, for multi-turn metrics) to evaluate."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = REQUEST_SCHEMA_VERSION
    invocations: list[TracedInvocation] = Field(description="The invocations to score, in order (usually one).")
    criteria: dict[str, Any] | None = Field(
        default=None, description="ADK criteria (``{metric: threshold | criterion}``); None = the worker's own."
    )
    eval_case: EvalCase | None = Field(default=None, description="The golden case matched to this invocation.")
    eval_set_id: str | None = None
    created_at: float = Field(default_factory=time.time, description="Unix seconds when the request was made.")

    @property
    def trace_id(self) -> str:
        """Trace id of the (first) invocation."""
        return self.invocations[0].trace_id if self.invocations else ""

    def rescued(self, reason: str) -> None:
        """Marks its invocations evaluated by priority sampling for ``reason`` (``otel_eval.priority.reason``)."""
        for invocation in self.invocations:
            invocation.priority_reason = reason

    @property
    def record_key(self) -> str:
        """The Kafka record key: the session id of its (first) invocation when it has one, else its trace id. Every
        turn of a session then lands on the same partition, so one worker holds the whole session."""
        session_id = self.invocations[0].session_id if self.invocations else None
        return session_id or self.trace_id

    def to_wire(self) -> bytes:
        """The request's JSON as it travels on Kafka (the requests and sessions topics): without its None fields.

        A reader gives them back from the fields' defaults, so the request reads back equal to the one with them
        written (which every worker reads too): every field that may be None defaults to None, except
        ``EvalCase.final_session_state`` (default ``{}``); and models that keep unknown keys (``EvalCase``,
        ``SessionInput``) would lose their None ones. A request whose eval case has either is written whole.
        About 55% of the bytes of the whole JSON for a rebuilt invocation, read in ~60% of the time.
        """
        return json_bytes(self, exclude_none=_none_fields_read_back(self.eval_case))


def _none_fields_read_back(case: EvalCase | None) -> bool:
    """Whether ``case``'s None values are what a reader's defaults give back when they are left out."""
    if case is None:
        return True
    session = case.session_input
    return (
        case.final_session_state is not None
        and not case.__pydantic_extra__
        and (session is None or not session.__pydantic_extra__)
    )


def _is_none(value: object) -> bool:
    return value is None


class EvaluationRecord(BaseModel):
    """One metric's result on one invocation."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = RESULT_SCHEMA_VERSION
    result_id: str = Field(description="Deterministic id: the same evaluation always gets the same id.")
    trace_id: str
    span_id: str
    invocation_id: str = ""
    metric_name: str
    metric_version: str = "1"
    evaluator_id: str | None = Field(
        default=None, description="``otel_eval.evaluator.id``: the metric name and a digest of its criterion."
    )
    evaluator_type: str | None = Field(
        default=None, description="``otel_eval.evaluator.type``: llm_judge or deterministic."
    )
    evaluator_version: str | None = Field(
        default=None, description="``otel_eval.evaluator.version``: digest of everything that changes the score."
    )
    judge_model: str | None = None
    score: float | None = None
    eval_status: EvalStatus
    label: str = Field(description="``gen_ai.evaluation.score.label``: pass, fail, not_evaluated or informational.")
    verdict: str | None = Field(
        default=None, description="``otel_eval.score.verdict``: the metric's own word for pass/fail, if it has one."
    )
    threshold: float | None = None
    explanation: str | None = None
    error_type: str | None = None
    agent_name: str | None = None
    session_id: str | None = None
    eval_id: str | None = None
    eval_set_id: str | None = None
    invocation_end_time_ns: int = Field(default=0, description="When the evaluated invocation ended.")
    # The session fields are serialised only when set: a record of one invocation serialises as before them, so
    # readers that forbid unknown fields (an older worker reading the results topic) still read it.
    session_window: int | None = Field(
        default=None,
        exclude_if=_is_none,
        description="A session result's window (``otel_eval.session.window``); None otherwise.",
    )
    session_first_turn: int | None = Field(
        default=None,
        exclude_if=_is_none,
        description="``otel_eval.session.first_turn``: the first turn of the session it covers (counted from the "
        "first turn the judging process saw: after a Kafka takeover, from the first turn it re-read).",
    )
    session_last_turn: int | None = Field(
        default=None,
        exclude_if=_is_none,
        description="``otel_eval.session.last_turn``: the last turn of the session it covers.",
    )
    priority_reason: str | None = Field(
        default=None,
        pattern=PRIORITY_REASON_PATTERN,
        exclude_if=_is_none,
        description="``otel_eval.priority.reason``: why priority sampling evaluated the invocation although the "
        "sample rate left it out (error, negative_feedback); None for an invocation in the sample (results without "
        "it are an unbiased sample of the traffic).",
    )
    evaluated_at: float = Field(default_factory=time.time, description="Unix seconds when the result was produced.")

    @classmethod
    def of_trusted(
        cls,
        *,
        result_id: str,
        trace_id: str,
        span_id: str,
        invocation_id: str,
        metric_name: str,
        metric_version: str,
        evaluator_id: str | None,
        evaluator_type: str | None,
        evaluator_version: str | None,
        judge_model: str | None,
        score: float | None,
        eval_status: EvalStatus,
        label: str,
        verdict: str | None,
        threshold: float | None,
        explanation: str | None,
        error_type: str | None,
        agent_name: str | None,
        session_id: str | None,
        eval_id: str | None,
        eval_set_id: str | None,
        invocation_end_time_ns: int,
        session_window: int | None,
        session_first_turn: int | None,
        session_last_turn: int | None,
        priority_reason: str | None = None,
    ) -> EvaluationRecord:
        """The record of these values, every field given, as the evaluation core builds it: not validated when the
        values a metric's code supplies (score, status, texts, threshold, version) have their declared types (the
        others come from validated models), else validated. Equal to the validated record, built in about 60% of the
        time validating takes (``model_construct`` takes longer than validating)."""
        if not (
            (score is None or type(score) is float)
            and (threshold is None or type(threshold) is float)
            and type(eval_status) is EvalStatus
            and (explanation is None or type(explanation) is str)
            and (error_type is None or type(error_type) is str)
            and type(metric_version) is str
        ):
            arguments = locals()
            return cls(**{name: arguments[name] for name in _TRUSTED_FIELDS})
        return record_of_values(
            {
                "schema_version": RESULT_SCHEMA_VERSION,
                "result_id": result_id,
                "trace_id": trace_id,
                "span_id": span_id,
                "invocation_id": invocation_id,
                "metric_name": metric_name,
                "metric_version": metric_version,
                "evaluator_id": evaluator_id,
                "evaluator_type": evaluator_type,
                "evaluator_version": evaluator_version,
                "judge_model": judge_model,
                "score": score,
                "eval_status": eval_status,
                "label": label,
                "verdict": verdict,
                "threshold": threshold,
                "explanation": explanation,
                "error_type": error_type,
                "agent_name": agent_name,
                "session_id": session_id,
                "eval_id": eval_id,
                "eval_set_id": eval_set_id,
                "invocation_end_time_ns": invocation_end_time_ns,
                "session_window": session_window,
                "session_first_turn": session_first_turn,
                "session_last_turn": session_last_turn,
                "priority_reason": priority_reason,
                "evaluated_at": time.time(),
            },
            cls,
        )


def record_of_values(values: dict[str, Any], cls: type[EvaluationRecord] = EvaluationRecord) -> EvaluationRecord:
    """The record whose fields are ``values``, not validated: every field, in field order (the order ``model_dump``
    and the JSON follow), each of its declared type, as validation stores them (what
    :meth:`EvaluationRecord.of_trusted` checks); ``values`` becomes the record's own ``__dict__``."""
    record = _new_record(cls)
    _set_attribute(record, "__dict__", values)
    _set_attribute(record, "__pydantic_fields_set__", set(_TRUSTED_FIELDS))
    _set_attribute(record, "__pydantic_extra__", None)
    _set_attribute(record, "__pydantic_private__", None)
    return record


_set_attribute = object.__setattr__
_new_record = object.__new__
_TRUSTED_FIELDS = frozenset(EvaluationRecord.model_fields) - {"schema_version", "evaluated_at"}
"""The fields :meth:`EvaluationRecord.of_trusted` is given: those set explicitly, as validation counts them."""


def result_id(trace_id: str, span_id: str, metric_name: str, evaluator_version: str | None) -> str:
    """The deterministic id of an evaluation, so consumers can de-duplicate redelivered results.

    The evaluator version is part of it (it covers the metric's version, criterion and judge model): re-evaluating
    an invocation with a changed evaluator is a different result, not a duplicate of the old one.
    """
    return result_id_of(
        result_id_invocation_key(trace_id, span_id), result_id_metric_key(metric_name, evaluator_version)
    )


def result_id_invocation_key(trace_id: str, span_id: str) -> bytes:
    """The start of :func:`result_id`'s key: the invocation's (shared by every metric's result on it)."""
    return f"{trace_id}\x00{span_id}\x00".encode()


def result_id_metric_key(metric_name: str, evaluator_version: str | None) -> bytes:
    """The end of :func:`result_id`'s key: the metric's (shared by its results on every invocation)."""
    return f"{metric_name}\x00{evaluator_version or ''}".encode()


def result_id_of(invocation_key: bytes, metric_key: bytes) -> str:
    """:func:`result_id` from its two keys (:func:`result_id_invocation_key`, :func:`result_id_metric_key`)."""
    return hashlib.sha256(invocation_key + metric_key).hexdigest()[:32]


def session_result_id(
    session_id: str,
    first_turn: tuple[str, str],
    last_turn: tuple[str, str],
    trace_id: str,
    span_id: str,
    metric_name: str,
    evaluator_version: str | None,
) -> str:
    """The deterministic id of a conversation-level result on one turn (``trace_id``, ``span_id``) of a session window
    whose first and last turns are ``first_turn`` and ``last_turn`` (each a (trace id, span id)): the same window
    judged again is a duplicate; a window of other turns (a resumed session) is a new result.

    The window is named by its turns, not by their indexes in the session: a Kafka worker that rebuilds a window from
    a later record than the session's first (after a rebalance) counts the session's turns from there, and still
    gives the window the ids another worker would have given it.
    """
    key = "\x00".join(
        ("session", session_id, *first_turn, *last_turn, trace_id, span_id, metric_name, evaluator_version or "")
    )
    return hashlib.sha256(key.encode()).hexdigest()[:32]
