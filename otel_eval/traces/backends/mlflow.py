"""The traces of an MLflow experiment, through MLflow's REST API: ``POST /api/3.0/mlflow/traces/search`` for the
trace ids (the experiment, the window as ``trace.timestamp_ms`` conditions and MLflow's own filter string, newest
first, paged by ``page_token``), then ``GET /api/3.0/mlflow/traces/get`` for each trace's spans (OTLP, proto-JSON).

Configured as MLflow's clients are: ``MLFLOW_TRACKING_URI`` (an ``http(s)://`` server; default
``http://localhost:5000``), ``MLFLOW_TRACKING_TOKEN`` or ``MLFLOW_TRACKING_USERNAME``/``MLFLOW_TRACKING_PASSWORD``,
and ``MLFLOW_EXPERIMENT_ID`` or ``MLFLOW_EXPERIMENT_NAME`` (else the ``Default`` experiment, id 0).

MLflow keeps a span's attributes, events and status, not its resource, scope or kind, and no log records: see
docs/backfill.md for what that costs the metrics.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any, Final

import httpx2

from otel_eval import environment_variables as env
from otel_eval._runtime.urls import basic_auth, split_url
from otel_eval.traces._normalize import Problems
from otel_eval.traces.backends import BackendUnavailable, TracePage, Window
from otel_eval.traces.backends._convert import Cursors, get, post, reply_object, reply_objects, spans_of
from otel_eval.traces.backends.connection import DEFAULT_TIMEOUT_S, backend_url, first

DEFAULT_TRACKING_URI: Final = "http://localhost:5000"
DEFAULT_EXPERIMENT_ID: Final = "0"
"""The experiment every MLflow server has (``Default``)."""
MAX_PAGE: Final = 500
"""MLflow's largest page of a trace search."""


def tracking_from_env(environ: Mapping[str, str], *, needed_by: str = "otel-eval") -> tuple[str, dict[str, str]]:
    """MLflow's tracking server URL and the credentials' headers, from its variables (the backend reader's and the
    score sink's); ``needed_by`` names who needs the server in the error.

    Raises:
        ConfigurationError: a tracking URI that is not an HTTP server (``file:``, ``sqlite:``, ``databricks``), or
            malformed (:func:`~otel_eval.traces.backends.connection.backend_url`).
    """
    uri = backend_url(
        environ,
        env.MLFLOW_TRACKING_URI,
        default=DEFAULT_TRACKING_URI,
        needed_by=needed_by,
        server="an MLflow tracking server",
    )
    headers: dict[str, str] = {}
    token = first(environ, env.MLFLOW_TRACKING_TOKEN)
    user = first(environ, env.MLFLOW_TRACKING_USERNAME)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    elif user:
        headers["Authorization"] = basic_auth(user, environ.get(env.MLFLOW_TRACKING_PASSWORD, ""))
    return uri, headers


def running(info: Mapping[str, Any], settled_ns: int | None) -> bool:
    """Whether the trace of search result ``info`` is still running: ``IN_PROGRESS`` (MLflow has no parentless span
    of it yet) and its last span ended at or after ``settled_ns``. A trace whose root has a remote parent stays
    ``IN_PROGRESS`` for good: it is read once settled. One whose times MLflow does not say is read."""
    if settled_ns is None or info.get("state") != "IN_PROGRESS":
        return False
    try:
        started = datetime.fromisoformat(str(info["request_time"]))
        duration = str(info.get("execution_duration") or "0s")
        last_ns = int(started.timestamp() * 1e9) + int(float(duration.removesuffix("s")) * 1e9)
    except (KeyError, ValueError, OverflowError, OSError):
        return False
    return last_ns >= settled_ns


class MlflowReader:
    """Reads one MLflow experiment's traces.

    Args:
        tracking_uri: The MLflow tracking server's URL.
        headers: The credentials' ``Authorization`` header, if any.
        experiment_id: The experiment's id (None: look ``experiment_name`` up).
        experiment_name: The experiment's name, when no id is given.
    """

    name = "mlflow"

    def __init__(
        self,
        tracking_uri: str,
        headers: Mapping[str, str] | None = None,
        *,
        experiment_id: str | None = None,
        experiment_name: str | None = None,
    ) -> None:
        self.endpoint, auth = split_url(tracking_uri)
        self._headers = {**auth, **(headers or {})}
        self._experiment_id = experiment_id
        self._experiment_name = experiment_name
        self.where = f"experiment {experiment_name!r}" if experiment_name else f"experiment {experiment_id or '0'}"

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> MlflowReader:
        """Configured from MLflow's variables (see the module)."""
        uri, headers = tracking_from_env(environ, needed_by="otel-eval run --from mlflow")
        experiment_id = first(environ, env.MLFLOW_EXPERIMENT_ID) or None
        name = first(environ, env.MLFLOW_EXPERIMENT_NAME) or None
        return cls(uri, headers, experiment_id=experiment_id or (None if name else DEFAULT_EXPERIMENT_ID),
                   experiment_name=name)  # fmt: skip

    def pages(self, window: Window) -> Iterator[TracePage]:
        """The window's traces, ``window.page_traces`` at a time, newest first."""
        with httpx2.Client(base_url=self.endpoint, headers=self._headers, timeout=DEFAULT_TIMEOUT_S * 3) as client:
            experiment = self._experiment(client)
            conditions = list(window.filters)
            if window.since_ns is not None:
                conditions.append(f"trace.timestamp_ms >= {window.since_ns // 1_000_000}")
            if window.until_ns is not None:
                conditions.append(f"trace.timestamp_ms < {window.until_ns // 1_000_000}")
            left = window.limit
            token: str | None = None
            what = f"mlflow: searching {self.where}"
            tokens = Cursors(what)
            while left is None or left > 0:
                body: dict[str, Any] = {
                    "locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment}}],
                    "max_results": min(MAX_PAGE, window.page_traces if left is None else min(window.page_traces, left)),
                    "order_by": ["timestamp_ms DESC"],
                }
                if conditions:
                    body["filter"] = " AND ".join(conditions)
                if token:
                    body["page_token"] = token
                response = post(client, "/api/3.0/mlflow/traces/search", what, json=body)
                found = reply_object(response, what)
                infos = [t for t in reply_objects(found, "traces") if t.get("trace_id")]
                if not infos:
                    return
                trace_ids = [str(t["trace_id"]) for t in infos if not running(t, window.settled_ns)]
                page = self._traces(client, trace_ids, len(response.content))
                page.running = len(infos) - len(trace_ids)
                yield page
                if left is not None:
                    left -= len(trace_ids)
                token = tokens.next(found, "next_page_token")
                if not token:
                    return

    def _experiment(self, client: httpx2.Client) -> str:
        if self._experiment_id is not None:
            # MLflow's trace search answers an experiment that does not exist with no traces: asked first, it is a 404
            get(
                client,
                "/api/2.0/mlflow/experiments/get",
                f"mlflow: looking up {self.where}",
                params={"experiment_id": self._experiment_id},
            )
            return self._experiment_id
        what = f"mlflow: looking up {self.where}"
        response = get(
            client, "/api/2.0/mlflow/experiments/get-by-name", what, params={"experiment_name": self._experiment_name}
        )
        experiment = reply_object(response, what).get("experiment")
        found = experiment.get("experiment_id") if isinstance(experiment, dict) else None
        if not isinstance(found, str | int) or isinstance(found, bool) or not str(found):
            raise BackendUnavailable(f"{what}: the reply names no experiment_id")
        self._experiment_id = str(found)
        return self._experiment_id

    def _traces(self, client: httpx2.Client, trace_ids: list[str], size: int) -> TracePage:
        problems = Problems(f"mlflow {self.where}")
        spans = []
        for trace_id in trace_ids:
            what = f"mlflow: reading trace {trace_id}"
            response = get(client, "/api/3.0/mlflow/traces/get", what, params={"trace_id": trace_id})
            size += len(response.content)
            trace = reply_object(response, what).get("trace")
            raw = reply_objects(trace, "spans") if isinstance(trace, dict) else []
            spans.extend(spans_of(raw, problems, trace_id))
        return TracePage(spans, size, len(trace_ids), problems.warnings)
