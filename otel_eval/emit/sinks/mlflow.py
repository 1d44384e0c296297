"""Scores as MLflow assessments (feedback) on the trace, as ``mlflow.log_feedback`` records them, over MLflow's REST
API.

One feedback per result on the invocation's trace (``tr-`` and the OTLP trace id in hex: how MLflow's OTLP endpoint
names a trace it receives) and root span: name = metric, value = score (the verdict word when there is no score),
rationale = explanation, source ``LLM_JUDGE`` or ``CODE`` with the evaluator id as its source id, and the
provenance as metadata. Assessments are keyed by (trace, span, metric): a re-evaluation updates the assessment
otel-eval made for that span and metric instead of adding one (a changed evaluator too, its earlier version and id
then in ``otel_eval.replaced.evaluator.*``), while another invocation of the same trace keeps its own; the very same
result (same result id) is left as it is. An assessment the sink creates has an id derived from (trace, span,
metric), so two writers creating it at once (two workers after a rebalance) leave one: MLflow refuses the second,
which then updates the first's. A trace MLflow does not have yet is retried.

Configured as MLflow's clients are: ``MLFLOW_TRACKING_URI`` (an ``http(s)://`` server; default
``http://localhost:5000``), ``MLFLOW_TRACKING_TOKEN`` or ``MLFLOW_TRACKING_USERNAME``/``MLFLOW_TRACKING_PASSWORD``.
The experiment (``MLFLOW_EXPERIMENT_ID`` or ``MLFLOW_EXPERIMENT_NAME`` for MLflow's clients, the
``x-mlflow-experiment-id`` header for an OTLP exporter) is where the trace goes; assessments follow their trace, so
the sink needs no experiment.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import quote

import httpx2

from otel_eval import semconv
from otel_eval._runtime.urls import split_url
from otel_eval.emit.sinks import _fields
from otel_eval.emit.sinks._delivery import MISSING, OK, Outcome, Rejected, status_outcome
from otel_eval.model.messages import EvaluationRecord
from otel_eval.traces.backends.connection import DEFAULT_TIMEOUT_S
from otel_eval.traces.backends.mlflow import tracking_from_env

TRACE_ID_PREFIX: Final = "tr-"
"""MLflow's trace id of an OTLP trace: this prefix and the 32 hex digits (``generate_mlflow_trace_id_from_otel_trace_id``)."""
ASSESSMENT_ID_PREFIX: Final = "a-"
"""How MLflow's own assessment ids start."""
_TRACES: Final = "/api/3.0/mlflow/traces"


def mlflow_trace_id(otel_trace_id: str) -> str:
    """The MLflow trace id of an OTLP trace id (hex)."""
    return TRACE_ID_PREFIX + otel_trace_id.lower()


def assessment_id(record: EvaluationRecord) -> str:
    """The id otel-eval gives the assessment it creates for ``record``'s (trace, span, metric): MLflow keeps one
    assessment of an id, so two writers creating it at once leave one, not two."""
    return ASSESSMENT_ID_PREFIX + _fields.score_id(record)


def assessment(record: EvaluationRecord) -> dict[str, Any]:
    """The ``assessment`` of ``POST /api/3.0/mlflow/traces/{trace_id}/assessments`` for ``record``."""
    body: dict[str, Any] = {
        "assessment_name": record.metric_name,
        "trace_id": mlflow_trace_id(record.trace_id),
        "span_id": record.span_id,
        "source": {
            "source_type": "LLM_JUDGE" if _fields.judged(record) else "CODE",
            "source_id": record.judge_model
            if _fields.judged(record) and record.judge_model
            else _fields.evaluator_key(record),
        },
        "feedback": {"value": record.score if record.score is not None else _fields.verdict(record)},
        "metadata": {key: _string(value) for key, value in _fields.provenance(record).items()},
    }
    explanation = _fields.explanation(record)
    if explanation:
        body["rationale"] = explanation
    return body


class MlflowBackend:
    """Creates (or updates) one assessment per record, after reading the trace's assessments once per batch.

    Args:
        tracking_uri: The MLflow tracking server's URL.
        headers: The credentials' ``Authorization`` header, if any.
    """

    name = "mlflow"

    def __init__(self, tracking_uri: str, headers: Mapping[str, str] | None = None) -> None:
        self.endpoint, auth = split_url(tracking_uri)
        self._headers = {**auth, **(headers or {})}

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> MlflowBackend:
        """Configured from ``MLFLOW_TRACKING_URI`` and its credentials.

        Raises:
            ConfigurationError: a tracking URI that is not an HTTP server (``file:``, ``sqlite:``, ``databricks``).
        """
        uri, headers = tracking_from_env(environ, needed_by="the mlflow sink")
        return cls(uri, headers)

    def client(self) -> httpx2.Client:
        return httpx2.Client(base_url=self.endpoint, headers=self._headers, timeout=DEFAULT_TIMEOUT_S)

    def send(self, client: httpx2.Client, records: Sequence[EvaluationRecord]) -> list[Outcome]:
        outcomes: list[Outcome] = []
        existing_by_trace: dict[str, _Existing] = {}
        for record in records:
            trace_id = mlflow_trace_id(record.trace_id)
            if trace_id not in existing_by_trace:
                existing_by_trace[trace_id] = self._existing(client, trace_id)
            existing = existing_by_trace[trace_id]
            if existing is None:
                outcomes.append(MISSING)
                continue
            if isinstance(existing, Rejected):
                outcomes.append(existing)
                continue
            key = (record.span_id.lower(), record.metric_name)
            response: httpx2.Response | str | None = None
            if key not in existing:
                body = {**assessment(record), "assessment_id": assessment_id(record)}
                response = client.post(f"{_TRACES}/{_path(trace_id)}/assessments", json={"assessment": body})
                if response.is_success:
                    existing[key] = {**body, **(response.json().get("assessment") or {})}
                elif response.status_code not in (408, 429):
                    # Another writer (a second worker, a concurrent re-run) created it since the read: MLflow refuses
                    # a second assessment of the same id (a constraint violation, HTTP 500); it is updated instead.
                    again = self._existing(client, trace_id)
                    if isinstance(again, dict) and key in again:
                        existing_by_trace[trace_id] = existing = again
                        response = None
            if response is None:
                response = self._update(client, trace_id, record, existing, key)
            outcomes.append(response if isinstance(response, str) else status_outcome(response))
        return outcomes

    def _update(
        self, client: httpx2.Client, trace_id: str, record: EvaluationRecord, existing: _Found, key: tuple[str, str]
    ) -> httpx2.Response | str:
        """Updates otel-eval's assessment of ``key``; :data:`OK` when it is this very result already (a redelivery,
        a re-run)."""
        found = existing[key]
        if (found.get("metadata") or {}).get(semconv.OTEL_EVAL_RESULT_ID) == record.result_id:
            return OK
        body = assessment(record)
        body["metadata"].update(_fields.replaced(found.get("metadata"), record))
        body["assessment_id"] = found["assessment_id"]
        update = {"assessment": body, "update_mask": "feedback,rationale,metadata"}
        path = f"{_TRACES}/{_path(trace_id)}/assessments/{_path(found['assessment_id'])}"
        response = client.patch(path, json=update)
        if response.is_success:
            existing[key] = {**body, **(response.json().get("assessment") or {})}
        return response

    def _existing(self, client: httpx2.Client, trace_id: str) -> _Existing:
        """The trace's assessments from otel-eval by (span id, name); None when MLflow has no such trace."""
        response = client.get(f"{_TRACES}/{_path(trace_id)}")
        if response.status_code == 404 or (response.status_code == 400 and "RESOURCE_DOES_NOT_EXIST" in response.text):
            return None
        outcome = status_outcome(response)
        if isinstance(outcome, Rejected):
            return outcome
        found: dict[tuple[str, str], dict[str, Any]] = {}
        info = response.json().get("trace", {}).get("trace_info", {})
        for item in info.get("assessments", []):
            metadata = item.get("metadata") or {}
            if metadata.get("source") == semconv.INSTRUMENTATION_SCOPE and item.get("valid", True):
                found[(str(item.get("span_id", "")).lower(), item.get("assessment_name", ""))] = item
        return found


_Found = dict[tuple[str, str], dict[str, Any]]
_Existing = _Found | Rejected | None


def _path(value: Any) -> str:
    """``value`` as one URL path segment: ids come from requests and spans, and the backend's answers."""
    return quote(str(value), safe="")


def _string(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)
