"""What both readers share: OTLP-JSON span objects into :class:`Span`\\ s, times as ISO text, HTTP errors as
:class:`~otel_eval.traces.backends.BackendUnavailable`."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

import httpx

from otel_eval.traces._normalize import Problems, SpanProblem
from otel_eval.traces.backends import BackendUnavailable
from otel_eval.traces.otlp_json import span_from_otlp_json
from otel_eval.traces.span import Span


def spans_of(raw_spans: Iterable[Any], problems: Problems, where: str) -> list[Span]:
    """The spans of OTLP-JSON span objects (camelCase or snake_case, hex or base64 ids); a malformed one is skipped
    with a warning."""
    spans: list[Span] = []
    for index, raw in enumerate(raw_spans):
        try:
            spans.append(span_from_otlp_json(raw, problems, f"{where}[{index}]"))
        except SpanProblem as problem:
            problems.skipped(f"{where}[{index}]", problem)
    return spans


def iso(ns: int) -> str:
    """Unix nanoseconds as ISO 8601 UTC text (microseconds)."""
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat()


def checked(response: httpx.Response, what: str) -> httpx.Response:
    """``response`` when it succeeded.

    Raises:
        BackendUnavailable: any other answer (its status and the start of its body: never a header).
    """
    if response.is_success:
        return response
    body = " ".join(response.text.split())[:200]
    raise BackendUnavailable(f"{what}: HTTP {response.status_code}: {body}")


def get(client: httpx.Client, url: str, what: str, **kwargs: Any) -> httpx.Response:
    """``GET url``, an unreachable backend as :class:`BackendUnavailable`."""
    return _call(client, "GET", url, what, **kwargs)


def post(client: httpx.Client, url: str, what: str, **kwargs: Any) -> httpx.Response:
    """``POST url``, an unreachable backend as :class:`BackendUnavailable`."""
    return _call(client, "POST", url, what, **kwargs)


def _call(client: httpx.Client, method: str, url: str, what: str, **kwargs: Any) -> httpx.Response:
    try:
        return checked(client.request(method, url, **kwargs), what)
    except httpx.TransportError as error:
        text = " ".join(str(error).split())[:200]
        raise BackendUnavailable(f"{what}: {type(error).__name__}: {text}" if text else what) from error
