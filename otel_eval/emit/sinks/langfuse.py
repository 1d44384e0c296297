"""Scores as Langfuse scores, through Langfuse's public API: on the trace and its root observation, or on the session.

One score per result (``POST /api/public/scores``): name = metric, a numeric value (a categorical one, the verdict
word, when there is no score), comment = explanation, the provenance (verdict and label among it) as metadata, and
an id derived from what the score is on and the metric, so a re-evaluation replaces the score (Langfuse upserts on
the id) instead of adding one. Langfuse's trace and observation ids of OTLP spans are the hex trace and span ids,
and a score may arrive before its trace.

A conversation-level result of a session window (:func:`session_result`) is a session score (``sessionId``, which
the API takes instead of ``traceId`` and ``observationId``, since Langfuse 3.53): its id is derived from the
session, the turn the result is on (the window's last, or each turn for a metric that scores every turn) and the
metric, and its metadata names that turn's trace and observation. The earlier turns' ``scored_on_last_turn``
placeholders stay trace scores on their turns, as every per-invocation result does.

Configured as Langfuse's SDKs are: ``LANGFUSE_BASE_URL`` (or ``LANGFUSE_HOST``; default
``https://cloud.langfuse.com``), ``LANGFUSE_PUBLIC_KEY`` and ``LANGFUSE_SECRET_KEY`` (basic auth).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final

import httpx2

from otel_eval import environment_variables as env
from otel_eval import semconv
from otel_eval._runtime.urls import basic_auth, split_url
from otel_eval.emit.sinks import _fields
from otel_eval.emit.sinks._delivery import Outcome, status_outcome
from otel_eval.errors import ConfigurationError
from otel_eval.model.messages import EvaluationRecord
from otel_eval.traces.backends.connection import DEFAULT_TIMEOUT_S, backend_url, first

DEFAULT_BASE_URL: Final = "https://cloud.langfuse.com"


def session_result(record: EvaluationRecord) -> bool:
    """Whether ``record`` is a conversation-level result of a session window that carries the conversation's (or its
    turn's) score or verdict: sent as a session score. The earlier turns' ``scored_on_last_turn`` placeholders are
    not (they say nothing of the session)."""
    return (
        record.session_window is not None
        and bool(record.session_id)
        and record.error_type != semconv.ERROR_TYPE_SCORED_ON_LAST_TURN
    )


def score_id(record: EvaluationRecord) -> str:
    """The score's id (a UUID): of (trace, span, metric) for a trace score (:func:`_fields.score_id`), of (session,
    trace, span, metric) for a session score, so the same window's result sent again (a resend, a backfill of the
    same turns) replaces its score, and each window of a resumed session keeps its own."""
    if not session_result(record):
        return str(uuid.UUID(_fields.score_id(record)))
    key = "\x00".join(("otel-eval", "session", str(record.session_id), *_fields.score_key(record)))
    return str(uuid.UUID(hashlib.sha256(key.encode()).hexdigest()[:32]))


def score(record: EvaluationRecord) -> dict[str, Any]:
    """The body of ``POST /api/public/scores`` for ``record``: a session score for a :func:`session_result`, else a
    score on the record's trace and root observation."""
    metadata = _fields.provenance(record)
    body: dict[str, Any] = {"id": score_id(record), "name": record.metric_name}
    if session_result(record):
        body["sessionId"] = record.session_id
        metadata.update(traceId=record.trace_id, observationId=record.span_id)
        metadata.update(
            {
                semconv.OTEL_EVAL_SESSION_WINDOW: record.session_window,
                semconv.OTEL_EVAL_SESSION_FIRST_TURN: record.session_first_turn,
                semconv.OTEL_EVAL_SESSION_LAST_TURN: record.session_last_turn,
            }
        )
    else:
        body.update(traceId=record.trace_id, observationId=record.span_id)
    body["metadata"] = metadata
    if record.score is not None:
        body.update(value=record.score, dataType="NUMERIC")
    else:
        body.update(value=_fields.verdict(record), dataType="CATEGORICAL")
    explanation = _fields.explanation(record)
    if explanation:
        body["comment"] = explanation
    return body


class LangfuseBackend:
    """Posts one score per record (a session score for a conversation-level result of a session window).

    Args:
        base_url: Langfuse's base URL.
        public_key, secret_key: The project's API keys (basic auth).
    """

    name = "langfuse"

    def __init__(self, base_url: str, public_key: str, secret_key: str) -> None:
        self.endpoint, _ = split_url(base_url)
        self._headers = {"Authorization": basic_auth(public_key, secret_key)}

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> LangfuseBackend:
        """Configured from ``LANGFUSE_BASE_URL``/``LANGFUSE_HOST``, ``LANGFUSE_PUBLIC_KEY``, ``LANGFUSE_SECRET_KEY``.

        Raises:
            ConfigurationError: a key is missing, or the URL is malformed.
        """
        public_key = first(environ, env.LANGFUSE_PUBLIC_KEY)
        secret_key = first(environ, env.LANGFUSE_SECRET_KEY)
        if not (public_key and secret_key):
            raise ConfigurationError(
                f"the langfuse sink needs {env.LANGFUSE_PUBLIC_KEY} and {env.LANGFUSE_SECRET_KEY} (the project's API keys)"
            )
        base_url = backend_url(
            environ,
            env.LANGFUSE_BASE_URL,
            env.LANGFUSE_HOST,
            default=DEFAULT_BASE_URL,
            needed_by="the langfuse sink",
            server="a Langfuse server",
        )
        return cls(base_url, public_key, secret_key)

    def client(self) -> httpx2.Client:
        return httpx2.Client(base_url=self.endpoint, headers=self._headers, timeout=DEFAULT_TIMEOUT_S)

    def send(self, client: httpx2.Client, records: Sequence[EvaluationRecord]) -> list[Outcome]:
        return [status_outcome(client.post("/api/public/scores", json=score(record))) for record in records]
