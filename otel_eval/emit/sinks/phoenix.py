"""Scores as Arize Phoenix span annotations on the invocation's root span, through Phoenix's REST API.

One annotation per result: name = metric, label = the metric's verdict word, score, explanation, annotator kind
``LLM`` for judged metrics and ``CODE`` for the others, and an identifier derived from the evaluator id, so that
re-evaluating an invocation with the same evaluator replaces its annotation (Phoenix upserts on span, name and
identifier) instead of adding one. The metadata carries the provenance (evaluator id, type and version, judge
model, threshold, result id). Annotations then show on the span, in the evals filter
(``evals['hallucinations_v1'].score < 0.8``) and in the project's annotation summary.

Configured as Phoenix's own clients are: ``PHOENIX_COLLECTOR_ENDPOINT`` (default ``http://localhost:6006``; a
trailing ``/v1/traces`` is ignored), ``PHOENIX_API_KEY`` (a bearer token) and ``PHOENIX_CLIENT_HEADERS``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import httpx

from otel_eval import environment_variables as env
from otel_eval.emit.sinks import _fields
from otel_eval.emit.sinks._delivery import MISSING, OK, Outcome, status_outcome
from otel_eval.emit.sinks._http import DEFAULT_TIMEOUT_S, first, parse_headers, split_url
from otel_eval.model.messages import EvaluationRecord

DEFAULT_ENDPOINT: Final = "http://localhost:6006"
IDENTIFIER_PREFIX: Final = "otel-eval:"
"""Annotation identifiers start with this, then the evaluator id."""
_MISSING_SPANS = re.compile(r"Spans with IDs ([0-9a-fA-F, ]+) do not exist")


def annotation(record: EvaluationRecord) -> dict[str, Any]:
    """The ``POST /v1/span_annotations`` item for ``record``."""
    result: dict[str, Any] = {"label": _fields.verdict(record)}
    if record.score is not None:
        result["score"] = record.score
    explanation = _fields.explanation(record)
    if explanation:
        result["explanation"] = explanation
    return {
        "span_id": record.span_id,
        "name": record.metric_name,
        "annotator_kind": "LLM" if _fields.judged(record) else "CODE",
        "result": result,
        "metadata": {**_fields.provenance(record), "trace_id": record.trace_id},
        "identifier": IDENTIFIER_PREFIX + _fields.evaluator_key(record),
    }


class PhoenixBackend:
    """Posts annotations to ``/v1/span_annotations?sync=true``; a span Phoenix does not have yet is retried.

    Args:
        endpoint: Phoenix's base URL.
        headers: Extra headers, the API key's ``Authorization`` among them.
    """

    name = "phoenix"

    def __init__(self, endpoint: str, headers: Mapping[str, str] | None = None) -> None:
        self.endpoint, auth = split_url(endpoint)
        self._headers = {**auth, **(headers or {})}

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> PhoenixBackend:
        """Configured from ``PHOENIX_COLLECTOR_ENDPOINT``, ``PHOENIX_API_KEY`` and ``PHOENIX_CLIENT_HEADERS``."""
        endpoint = first(environ, env.PHOENIX_COLLECTOR_ENDPOINT) or DEFAULT_ENDPOINT
        endpoint = re.sub(r"/+v1/traces/?$", "", endpoint)
        headers = parse_headers(environ.get(env.PHOENIX_CLIENT_HEADERS, ""))
        api_key = first(environ, env.PHOENIX_API_KEY)
        if api_key:
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            headers["Authorization"] = f"Bearer {api_key}"
        return cls(endpoint, headers)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.endpoint, headers=self._headers, timeout=DEFAULT_TIMEOUT_S)

    def send(self, client: httpx.Client, records: Sequence[EvaluationRecord]) -> list[Outcome]:
        """One request for the batch; when Phoenix names spans it does not have, those wait and the rest are sent
        again without them (Phoenix stores nothing of a request it answers 404)."""
        outcomes: list[Outcome] = [OK] * len(records)
        waiting = list(range(len(records)))
        while waiting:
            data = [annotation(records[i]) for i in waiting]
            response = client.post("/v1/span_annotations", params={"sync": "true"}, json={"data": data})
            missing = _missing_spans(response)
            if missing is None:
                outcome = status_outcome(response)
                for i in waiting:
                    outcomes[i] = outcome
                return outcomes
            named = [i for i in waiting if records[i].span_id in missing] or waiting  # none named: all wait
            for i in named:
                outcomes[i] = MISSING
            waiting = [i for i in waiting if i not in named]
        return outcomes


def _missing_spans(response: httpx.Response) -> set[str] | None:
    """The span ids of Phoenix's "Spans with IDs ... do not exist" 404; None for any other answer."""
    if response.status_code != 404:
        return None
    match = _MISSING_SPANS.search(response.text)  # plain text or JSON {"detail": ...}, by version
    return {span.strip() for span in match.group(1).split(",")} if match else None
