"""What both readers share: OTLP-JSON span objects into :class:`Span`\\ s, times as ISO text, HTTP errors as
:class:`~otel_eval.traces.backends.BackendUnavailable`."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import httpx2

from otel_eval import semconv
from otel_eval.traces._normalize import Problems, SpanProblem
from otel_eval.traces.backends import BackendUnavailable
from otel_eval.traces.otlp_json import span_from_otlp_json
from otel_eval.traces.span import Span


def spans_of(raw_spans: Iterable[Any], problems: Problems, where: str) -> list[Span]:
    """The spans of OTLP-JSON span objects (camelCase or snake_case, hex or base64 ids); a malformed one is skipped
    with a warning.

    The backends keep no instrumentation scope, by which otel-eval knows its own spans and leaves them (and the judge's
    under them) out of the agent's invocations: an evaluation span, told by its ``gen_ai.operation.name``, and a judge
    trace's root, told by the evaluated span's ids it carries, get their scope back here, so a trace scored online and
    backfilled later rebuilds as the agent's alone, and a judge trace as no agent's.
    """
    spans: list[Span] = []
    for index, raw in enumerate(raw_spans):
        try:
            span = span_from_otlp_json(raw, problems, f"{where}[{index}]")
        except SpanProblem as problem:
            problems.skipped(f"{where}[{index}]", problem)
            continue
        if span.scope_name is None and _own(span.attributes):
            span.scope_name = semconv.INSTRUMENTATION_SCOPE
        spans.append(span)
    return spans


EVALUATION = semconv.GEN_AI_OPERATION_EVALUATION


def _own(attributes: Mapping[str, Any]) -> bool:
    """Whether a span whose scope the backend did not keep is otel-eval's own: an ``evaluate {metric}`` span, or the
    ``judge {metric}`` root of a judge trace (it carries the evaluated span's ids); the judge's ``generate_content``
    spans are left out under it (:func:`~otel_eval.reconstruct.without_evaluator_spans`)."""
    return (
        attributes.get(semconv.GEN_AI_OPERATION_NAME) == EVALUATION
        or semconv.OTEL_EVAL_EVALUATION_TRACE_ID in attributes
    )


def iso(ns: int) -> str:
    """Unix nanoseconds as ISO 8601 UTC text (microseconds)."""
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat()


def checked(response: httpx2.Response, what: str) -> httpx2.Response:
    """``response`` when it succeeded.

    Raises:
        BackendUnavailable: any other answer (its status and the start of its body: never a header).
    """
    if response.is_success:
        return response
    body = " ".join(response.text.split())[:200]
    raise BackendUnavailable(f"{what}: HTTP {response.status_code}: {body}", response.status_code)


def reply_object(response: httpx2.Response, what: str) -> dict[str, Any]:
    """The JSON object a successful ``response`` holds.

    Raises:
        BackendUnavailable: the reply is not JSON, or not an object (naming ``what`` and the reply's start).
    """
    try:
        body = response.json()
    except (ValueError, RecursionError):
        body = None
    if not isinstance(body, dict):
        start = " ".join(response.text.split())[:80]
        raise BackendUnavailable(f"{what}: the reply is not a JSON object: {start!r}")
    return body


def reply_objects(body: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    """The objects of ``body[key]``, a list in a well-formed reply (anything else in it, or in the list, is skipped)."""
    items = body.get(key)
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


class Cursors:
    """The page cursors one paged read was given: a backend that hands one out again would be read forever.

    Args:
        what: What is read, for the message.
    """

    def __init__(self, what: str) -> None:
        self._what = what
        self._seen: set[str] = set()

    def next(self, body: Mapping[str, Any], key: str) -> str | None:
        """``body[key]``, the cursor of the next page (None: the last page was read).

        Raises:
            BackendUnavailable: a cursor that is not text, or one given before.
        """
        cursor = body.get(key)
        if cursor is None or cursor == "":
            return None
        if not isinstance(cursor, str):
            raise BackendUnavailable(f"{self._what}: the reply's {key} is not text")
        if cursor in self._seen:
            raise BackendUnavailable(f"{self._what}: the backend gave the same {key} twice (it would be read forever)")
        self._seen.add(cursor)
        return cursor


def get(client: httpx2.Client, url: str, what: str, **kwargs: Any) -> httpx2.Response:
    """``GET url``, tried :data:`ATTEMPTS` times; an unreachable backend as :class:`BackendUnavailable`."""
    return _call(client, "GET", url, what, **kwargs)


def post(client: httpx2.Client, url: str, what: str, **kwargs: Any) -> httpx2.Response:
    """``POST url``, tried :data:`ATTEMPTS` times; an unreachable backend as :class:`BackendUnavailable`."""
    return _call(client, "POST", url, what, **kwargs)


ATTEMPTS = 3
"""Tries of one request before the backend counts as unavailable (transport errors, 5xx, 408, 429)."""
BACKOFF_S = 1.0
"""Seconds before the second try, doubled before each next one."""


def _call(client: httpx2.Client, method: str, url: str, what: str, **kwargs: Any) -> httpx2.Response:
    for attempt in range(ATTEMPTS):
        last = attempt == ATTEMPTS - 1
        try:
            response = client.request(method, url, **kwargs)
        except httpx2.TransportError as error:
            if last:
                text = " ".join(str(error).split())[:200]
                raise BackendUnavailable(f"{what}: {type(error).__name__}: {text}" if text else what) from error
        else:
            if last or not (response.status_code >= 500 or response.status_code in (408, 429)):
                return checked(response, what)
        time.sleep(BACKOFF_S * 2**attempt)
    raise AssertionError("unreachable")  # the last attempt returns or raises
