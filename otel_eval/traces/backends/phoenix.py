"""The spans of a Phoenix project, through Phoenix's REST API (``GET /v1/projects/{project}/spans/otlpv1``).

A page is the root spans (``parent_id=null``) of up to ``page_traces`` traces started in the window, the last stored
first (Phoenix's span search orders by insertion, not start time: a trace exported late counts as new),
matching the ``key:value`` attribute filters (Phoenix's own, ``attribute=``), then every span of those traces, read
by trace id (paged by Phoenix's cursor). Configured as Phoenix's clients are: ``PHOENIX_COLLECTOR_ENDPOINT`` (default
``http://localhost:6006``; a trailing ``/v1/traces`` is ignored), ``PHOENIX_API_KEY`` (a bearer token),
``PHOENIX_CLIENT_HEADERS`` and ``PHOENIX_PROJECT_NAME`` (else ``openinference.project.name`` in
``OTEL_RESOURCE_ATTRIBUTES``, else ``default``).

Phoenix keeps a span's attributes, events and status, not its resource, scope or kind, and no log records: see
docs/backfill.md for what that costs the metrics. It also adds OpenInference attributes it derives from a span's
``gen_ai.*`` ones (``openinference.span.kind``, ``llm.*``, ``input.value``, ...: ``phoenix.trace.gen_ai.conversion``);
on a span with ``gen_ai.*`` attributes the reader takes those out again (:func:`without_derived`), so the trace
rebuilds by the convention its agent wrote, as from the agent's own file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final
from urllib.parse import quote

import httpx2

from otel_eval import environment_variables as env
from otel_eval._runtime.urls import split_url
from otel_eval.traces._normalize import Problems
from otel_eval.traces.backends import TracePage, Window
from otel_eval.traces.backends._convert import Cursors, get, iso, reply_object, reply_objects, spans_of
from otel_eval.traces.backends.connection import DEFAULT_TIMEOUT_S, backend_url, first, parse_headers
from otel_eval.traces.span import Span

DEFAULT_ENDPOINT: Final = "http://localhost:6006"
DEFAULT_PROJECT: Final = "default"
"""Where Phoenix files spans whose resource names no project."""
PROJECT_ATTRIBUTE: Final = "openinference.project.name"
"""The resource attribute Phoenix files spans by."""
SPANS_PER_REQUEST: Final = 1000
"""Phoenix's largest page of spans."""
DERIVED_KEYS: Final = frozenset(
    {"openinference.span.kind", "input.value", "input.mime_type", "output.value", "output.mime_type", "session.id"}
)
"""OpenInference attributes Phoenix derives from ``gen_ai.*`` ones, besides those under :data:`DERIVED_PREFIXES`."""
DERIVED_PREFIXES: Final = ("llm.", "tool.", "retrieval.documents", "embedding.")


def to_microseconds(span: Span) -> Span:
    """``span`` with its times rounded to the microsecond Phoenix stores (its answer carries float rounding, ±256 ns)."""
    span.start_time_ns = (span.start_time_ns + 500) // 1000 * 1000
    span.end_time_ns = (span.end_time_ns + 500) // 1000 * 1000
    return span


def without_derived(span: Span) -> Span:
    """``span`` without the OpenInference attributes Phoenix derives from ``gen_ai.*`` ones, when it has ``gen_ai.*``
    attributes (a span without them is left as it is: its OpenInference attributes are the agent's own)."""
    attributes = span.attributes
    if not any(key.startswith("gen_ai.") for key in attributes):
        return span
    span.attributes = {
        key: value
        for key, value in attributes.items()
        if key not in DERIVED_KEYS and not key.startswith(DERIVED_PREFIXES)
    }
    return span


def project_from_env(environ: Mapping[str, str]) -> str:
    """``PHOENIX_PROJECT_NAME``, else ``openinference.project.name`` in ``OTEL_RESOURCE_ATTRIBUTES``, else
    ``default``: the project Phoenix files the agent's spans under."""
    named = first(environ, env.PHOENIX_PROJECT_NAME)
    if named:
        return named
    attributes = parse_headers(environ.get("OTEL_RESOURCE_ATTRIBUTES", ""))  # the same k=v,k2=v2 format
    return attributes.get(PROJECT_ATTRIBUTE, "").strip() or DEFAULT_PROJECT


def connection_from_env(environ: Mapping[str, str], *, needed_by: str = "otel-eval") -> tuple[str, dict[str, str], str]:
    """Phoenix's base URL, headers (the API key's ``Authorization`` among them) and project, from its variables
    (the backend reader's and the score sink's); ``needed_by`` names who needs the server in the error.

    Raises:
        ConfigurationError: a ``PHOENIX_COLLECTOR_ENDPOINT`` that is not an ``http(s)://`` URL with a host.
    """
    endpoint = backend_url(
        environ,
        env.PHOENIX_COLLECTOR_ENDPOINT,
        default=DEFAULT_ENDPOINT,
        needed_by=needed_by,
        server="a Phoenix server",
    )
    endpoint = re.sub(r"/+v1/traces/?$", "", endpoint)
    headers = parse_headers(environ.get(env.PHOENIX_CLIENT_HEADERS, ""))
    api_key = first(environ, env.PHOENIX_API_KEY)
    if api_key:
        headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        headers["Authorization"] = f"Bearer {api_key}"
    return endpoint, headers, project_from_env(environ)


class PhoenixReader:
    """Reads one Phoenix project's traces.

    Args:
        endpoint: Phoenix's base URL.
        headers: Extra headers, the API key's ``Authorization`` among them.
        project: The project's name (or id).
    """

    name = "phoenix"

    def __init__(self, endpoint: str, headers: Mapping[str, str] | None = None, *, project: str) -> None:
        self.endpoint, auth = split_url(endpoint)
        self._headers = {**auth, **(headers or {})}
        self.project = project
        self.where = f"project {project!r}"
        self._spans_url = f"/v1/projects/{quote(project, safe='')}/spans/otlpv1"

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> PhoenixReader:
        """Configured from Phoenix's variables (see the module).

        Raises:
            ConfigurationError: a malformed ``PHOENIX_COLLECTOR_ENDPOINT``.
        """
        endpoint, headers, project = connection_from_env(environ, needed_by="otel-eval run --from phoenix")
        return cls(endpoint, headers, project=project)

    def pages(self, window: Window) -> Iterator[TracePage]:
        """The window's traces, ``window.page_traces`` at a time, the last Phoenix stored first."""
        with httpx2.Client(base_url=self.endpoint, headers=self._headers, timeout=DEFAULT_TIMEOUT_S * 3) as client:
            left = window.limit
            cursor: str | None = None
            what = f"phoenix: reading the root spans of {self.where}"
            cursors = Cursors(what)
            while left is None or left > 0:
                size = window.page_traces if left is None else min(window.page_traces, left)
                params: dict[str, Any] = {"parent_id": "null", "limit": size, "attribute": list(window.filters)}
                if window.since_ns is not None:
                    params["start_time"] = iso(window.since_ns)
                if window.until_ns is not None:
                    params["end_time"] = iso(window.until_ns)
                if cursor:
                    params["cursor"] = cursor
                response = get(client, self._spans_url, what, params=params)
                body = reply_object(response, what)
                trace_ids = list(dict.fromkeys(str(s.get("trace_id", "")) for s in reply_objects(body, "data")))
                if not trace_ids:
                    return
                yield self._traces(client, trace_ids, len(response.content))
                if left is not None:
                    left -= len(trace_ids)
                cursor = cursors.next(body, "next_cursor")
                if not cursor:
                    return

    def _traces(self, client: httpx2.Client, trace_ids: list[str], size: int) -> TracePage:
        problems = Problems(f"phoenix {self.where}")
        raw: list[Any] = []
        cursor: str | None = None
        what = f"phoenix: reading the spans of {self.where}"
        cursors = Cursors(what)
        while True:
            params: dict[str, Any] = {"trace_id": trace_ids, "limit": SPANS_PER_REQUEST}
            if cursor:
                params["cursor"] = cursor
            response = get(client, self._spans_url, what, params=params)
            size += len(response.content)
            body = reply_object(response, what)
            raw.extend(reply_objects(body, "data"))
            cursor = cursors.next(body, "next_cursor")
            if not cursor:
                break
        spans = [to_microseconds(without_derived(span)) for span in spans_of(raw, problems, "spans")]
        return TracePage(spans, size, len(trace_ids), problems.warnings)
