"""Scores as Arize Phoenix span annotations on the invocation's root span, through Phoenix's REST API.

One annotation per result: name = metric, label = the metric's verdict word, score, explanation, annotator kind
``LLM`` for judged metrics and ``CODE`` for the others, and the identifier ``otel-eval:<metric>``: annotations are
keyed by (trace, span, metric), so re-evaluating an invocation replaces its annotation (Phoenix upserts on span, name
and identifier) instead of adding one, with the same evaluator or a changed one (the earlier evaluator version and
id then in ``otel_eval.replaced.evaluator.*``), and each invocation of a trace keeps its own. The sink reads the
batch's spans' annotations first (one request): a result already there (same result id) is not sent again, so a
re-run changes nothing. Phoenix takes a request whole or refuses it whole: a refused batch is sent again one
annotation at a time, so a bad one costs only itself; a metric named as Phoenix reserves (``note``) is not sent.
The metadata carries the provenance (evaluator id, type and version, judge model,
threshold, result id). Annotations then show on the span, in the evals filter
(``evals['hallucinations_v1'].score < 0.8``) and in the project's annotation summary.

Phoenix colours a score green or red only by an annotation config of the same name assigned to the span's project
(its optimization direction and threshold); without one, a failing score looks like any other. Once per metric the
sink creates such a config (``FREEFORM``, ``MAXIMIZE``, the criterion's threshold: a score at or above it passes) and
assigns it to the project, leaving alone a config of that name someone already made (Phoenix answers 409).

Configured as Phoenix's own clients are: ``PHOENIX_COLLECTOR_ENDPOINT`` (default ``http://localhost:6006``; a
trailing ``/v1/traces`` is ignored), ``PHOENIX_API_KEY`` (a bearer token), ``PHOENIX_CLIENT_HEADERS`` and
``PHOENIX_PROJECT_NAME`` (else ``openinference.project.name`` in ``OTEL_RESOURCE_ATTRIBUTES``, else ``default``).
"""

from __future__ import annotations

import logging
import re
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
from otel_eval.traces.backends.phoenix import DEFAULT_PROJECT, connection_from_env

logger = logging.getLogger(__name__)

CONFIG_ATTEMPTS: Final = 5
"""Batches in which the sink tries to set up a metric's annotation config before giving up on it."""
IDENTIFIER_PREFIX: Final = "otel-eval:"
"""Annotation identifiers are this and the metric name (earlier releases used the evaluator id, which has a criterion
digest in it; such earlier annotations are left alone)."""
RESERVED_NAMES: Final = frozenset({"note"})
"""Annotation names Phoenix refuses on ``POST /v1/span_annotations`` (HTTP 400: ``note`` is its span notes' name): a
metric of such a name is not sent to Phoenix."""
_NOT_THERE_LIMIT: Final = 100_000
"""Span ids remembered as not in Phoenix yet, at most (then forgotten at once: only an extra read each)."""
_READ_LIMIT: Final = 10_000
"""Annotations read back per request (Phoenix's largest page)."""
_MISSING_SPANS = re.compile(r"Spans with IDs ([0-9a-fA-F, ]+) do not exist")


def identifier(record: EvaluationRecord) -> str:
    """The annotation identifier of ``record``'s (span, metric)."""
    return IDENTIFIER_PREFIX + record.metric_name


def annotation(record: EvaluationRecord, previous: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``POST /v1/span_annotations`` item for ``record``, replacing the annotation whose metadata is
    ``previous`` (if any)."""
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
        "metadata": {**_fields.provenance(record), "trace_id": record.trace_id, **_fields.replaced(previous, record)},
        "identifier": identifier(record),
    }


def annotation_config(record: EvaluationRecord) -> dict[str, Any] | None:
    """The ``POST /v1/annotation_configs`` body for ``record``'s metric: scores at or above its threshold are good;
    None for a result without a threshold (informational)."""
    if record.threshold is None:
        return None
    return {
        "name": record.metric_name,
        "type": "FREEFORM",
        "description": f"otel-eval: {record.metric_name}, passing at or above {record.threshold:g}",
        "optimization_direction": "MAXIMIZE",
        "threshold": record.threshold,
    }


class PhoenixBackend:
    """Posts annotations to ``/v1/span_annotations?sync=true``; a span Phoenix does not have yet is retried. Sets up
    each metric's annotation config once, after its first annotation is taken (the project then exists).

    Args:
        endpoint: Phoenix's base URL.
        headers: Extra headers, the API key's ``Authorization`` among them.
        project: The project of the agent's spans, where the annotation configs are assigned.
    """

    name = "phoenix"

    def __init__(
        self, endpoint: str, headers: Mapping[str, str] | None = None, *, project: str = DEFAULT_PROJECT
    ) -> None:
        self.endpoint, auth = split_url(endpoint)
        self._headers = {**auth, **(headers or {})}
        self.project = project
        self._configured: set[str] = set()
        self._not_there: set[str] = set()  # spans Phoenix said it does not have: no annotation to read on them yet
        self._config_attempts: dict[str, int] = {}

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> PhoenixBackend:
        """Configured from ``PHOENIX_COLLECTOR_ENDPOINT``, ``PHOENIX_API_KEY`` and ``PHOENIX_CLIENT_HEADERS``.

        Raises:
            ConfigurationError: a malformed ``PHOENIX_COLLECTOR_ENDPOINT``.
        """
        endpoint, headers, project = connection_from_env(environ, needed_by="the phoenix sink")
        return cls(endpoint, headers, project=project)

    def client(self) -> httpx2.Client:
        return httpx2.Client(base_url=self.endpoint, headers=self._headers, timeout=DEFAULT_TIMEOUT_S)

    def send(self, client: httpx2.Client, records: Sequence[EvaluationRecord]) -> list[Outcome]:
        """One request for the batch (after reading its spans' annotations); when Phoenix names spans it does not
        have, those wait and the rest are sent again without them (Phoenix stores nothing of a request it answers
        404). A metric named as Phoenix reserves (:data:`RESERVED_NAMES`) is refused without asking; when Phoenix
        refuses a request of several annotations (400, 422: it takes all or none), each is sent alone, so a bad one
        costs only itself."""
        outcomes: list[Outcome] = [OK] * len(records)
        for i, record in enumerate(records):
            if record.metric_name in RESERVED_NAMES:
                outcomes[i] = Rejected(
                    f"Phoenix reserves the annotation name {record.metric_name!r} for notes: rename the metric to "
                    "send its scores to Phoenix"
                )
        allowed = [i for i in range(len(records)) if outcomes[i] == OK]
        existing = self._existing(client, [records[i] for i in allowed])
        waiting = [i for i in allowed if not _unchanged(existing.get(_key(records[i])), records[i])]
        self._post(client, records, waiting, existing, outcomes)
        return outcomes

    def _post(
        self,
        client: httpx2.Client,
        records: Sequence[EvaluationRecord],
        waiting: list[int],
        existing: Mapping[tuple[str, str], Any],
        outcomes: list[Outcome],
    ) -> None:
        """Sends the annotations of ``records[i]`` for ``i`` in ``waiting``, setting their ``outcomes``."""
        while waiting:
            data = [annotation(records[i], (existing.get(_key(records[i])) or {}).get("metadata")) for i in waiting]
            response = client.post("/v1/span_annotations", params={"sync": "true"}, json={"data": data})
            missing = _missing_spans(response)
            if missing is None:
                if response.status_code in (400, 422) and len(waiting) > 1:
                    for i in waiting:
                        self._post(client, records, [i], existing, outcomes)
                    return
                outcome = status_outcome(response)
                for i in waiting:
                    outcomes[i] = outcome
                if outcome == OK:
                    self._not_there.difference_update(records[i].span_id for i in waiting)
                    self._configure(client, [records[i] for i in waiting])
                return
            named = [i for i in waiting if records[i].span_id in missing] or waiting  # none named: all wait
            if len(self._not_there) >= _NOT_THERE_LIMIT:
                self._not_there.clear()
            self._not_there.update(records[i].span_id for i in named)
            for i in named:
                outcomes[i] = MISSING
            waiting = [i for i in waiting if i not in named]

    def _existing(self, client: httpx2.Client, records: Sequence[EvaluationRecord]) -> dict[tuple[str, str], Any]:
        """otel-eval's annotations of the records' spans and metrics, by (span id, metric). Best effort: nothing
        when Phoenix cannot say (a project or spans it does not have yet, an older server): the upsert still
        replaces, only without the replaced-version note. Spans Phoenix said it did not have are not asked about (a
        score waiting for its span costs no extra request per retry)."""
        span_ids = sorted({r.span_id for r in records} - self._not_there)
        if not span_ids:
            return {}
        params: dict[str, Any] = {
            "span_ids": span_ids,
            "include_annotation_names": sorted({r.metric_name for r in records}),
            "limit": _READ_LIMIT,
        }
        response = client.get(f"/v1/projects/{quote(self.project, safe='')}/span_annotations", params=params)
        if response.status_code >= 500 or response.status_code in (408, 429):
            status_outcome(response)  # raises Unreachable: the batch is retried
        if not response.is_success:
            return {}
        found: dict[tuple[str, str], Any] = {}
        for item in response.json().get("data") or []:
            name, ident = item.get("name", ""), item.get("identifier", "")
            if ident == IDENTIFIER_PREFIX + name:
                found[(str(item.get("span_id", "")).lower(), name)] = item
        return found

    def _configure(self, client: httpx2.Client, records: Sequence[EvaluationRecord]) -> None:
        """Creates (unless one exists) and assigns to the project the annotation config of each metric not set up
        yet. Best effort: the annotations are delivered either way; a failure is tried again with a later batch, at
        most :data:`CONFIG_ATTEMPTS` times a metric."""
        tried: set[str] = set()
        for record in records:
            config = annotation_config(record)
            name = record.metric_name
            if config is None or name in self._configured or name in tried:
                continue
            tried.add(name)
            attempts = self._config_attempts[name] = self._config_attempts.get(name, 0) + 1
            try:
                created = client.post("/v1/annotation_configs", json=config)
                assigned = None
                if created.is_success or created.status_code == 409:  # 409: the name is taken, left as it is
                    assigned = client.put(
                        f"/v1/projects/{quote(self.project, safe='')}/annotation_configs/{quote(name, safe='')}"
                    )
                done = assigned is not None and assigned.is_success
                detail = f"HTTP {(created if assigned is None else assigned).status_code}"
            except httpx2.HTTPError as error:
                done, detail = False, type(error).__name__
            if done or attempts >= CONFIG_ATTEMPTS:
                self._configured.add(name)
            if not done and attempts >= CONFIG_ATTEMPTS:
                logger.info(
                    "phoenix sink: no annotation config for %s in project %r (%s); its scores are not coloured",
                    name,
                    self.project,
                    detail,
                )


def _key(record: EvaluationRecord) -> tuple[str, str]:
    return (record.span_id.lower(), record.metric_name)


def _unchanged(found: Mapping[str, Any] | None, record: EvaluationRecord) -> bool:
    """Whether ``found`` is this very result already (same result id): nothing to send."""
    return found is not None and (found.get("metadata") or {}).get(semconv.OTEL_EVAL_RESULT_ID) == record.result_id


def _missing_spans(response: httpx2.Response) -> set[str] | None:
    """The span ids of Phoenix's "Spans with IDs ... do not exist" 404; None for any other answer."""
    if response.status_code != 404:
        return None
    match = _MISSING_SPANS.search(response.text)  # plain text or JSON {"detail": ...}, by version
    return {span.strip() for span in match.group(1).split(",")} if match else None
