"""Reader for JSON lists of flat span dicts, the form the strands-evals fixtures (and many ad-hoc dumps) use.

A span dict carries ``trace_id``, ``span_id``, ``parent_span_id``, ``name``, ``start_time``/``end_time`` (Unix ns,
or ISO-8601), flat ``attributes``, ``scope {name, version}``, ``status {code, message}``, optional ``kind`` and
``resource``, and ``span_events [{event_name, timestamp, attributes, body?}]``. ADOT exports wrap the list as
``{"session_id", "span_count", "spans": [...]}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from otel_eval.traces._normalize import (
    SPAN_ID_HEX_DIGITS,
    TRACE_ID_HEX_DIGITS,
    Problems,
    SpanProblem,
    opaque_id,
    preview,
    span_kind,
    status_code,
    to_int_ns,
)
from otel_eval.traces.span import Span, SpanEvent

SPAN_DICT_KEYS = frozenset({"trace_id", "span_id"})
"""Keys that mark a dict as a flat span dict."""


def looks_like_span_dict(value: Any) -> bool:
    """Whether ``value`` is a dict with the flat span-dict id keys."""
    return isinstance(value, dict) and "span_id" in value and "trace_id" in value


def spans_from_span_dicts(items: Sequence[Any], problems: Problems, *, path: str = "") -> list[Span]:
    """Spans from a list of flat span dicts; a malformed one is skipped with a warning naming its index and field."""
    spans: list[Span] = []
    hashed = 0
    for index, item in enumerate(items):
        where = f"span {path}[{index}]"
        try:
            span, was_hashed = _span(item, problems, where)
        except SpanProblem as problem:
            problems.skipped(where, problem)
            continue
        hashed += was_hashed
        spans.append(span)
    if hashed:
        problems.warn(path or "spans", f"{hashed} span(s) had ids that are not hex; they were mapped to stable hashes")
    return spans


def _span(item: Any, problems: Problems, where: str) -> tuple[Span, bool]:
    if not isinstance(item, dict):
        raise SpanProblem("(span)", f"expected an object, got {type(item).__name__} {preview(item)}")
    trace_id, trace_hashed = opaque_id(item.get("trace_id"), "trace_id", TRACE_ID_HEX_DIGITS)
    span_id, span_hashed = opaque_id(item.get("span_id"), "span_id", SPAN_ID_HEX_DIGITS)
    parent_raw = item.get("parent_span_id")
    parent_id: str | None = None
    if parent_raw not in (None, ""):
        parent_id, _ = opaque_id(parent_raw, "parent_span_id", SPAN_ID_HEX_DIGITS)
    name = item.get("name")
    if not isinstance(name, str):
        raise SpanProblem("name", "missing" if name is None else f"expected a string, got {preview(name)}")
    start = to_int_ns(_first(item, "start_time", "start_time_ns", "start_time_unix_nano"), "start_time")
    end_raw = _first(item, "end_time", "end_time_ns", "end_time_unix_nano")
    if end_raw is None:
        problems.warn(where, "field 'end_time': missing; the span is taken to end when it starts")
        end = start
    else:
        end = to_int_ns(end_raw, "end_time")
    attributes = item.get("attributes")
    if attributes is None:
        attributes = {}
    elif not isinstance(attributes, dict):
        raise SpanProblem("attributes", f"expected an object, got {type(attributes).__name__}")
    scope_name, scope_version = _scope(item.get("scope"))
    code, message = _status(item.get("status"))
    span = Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent_id,
        name=name,
        start_time_ns=start,
        end_time_ns=end,
        attributes=attributes,
        events=_events(_first(item, "span_events", "events"), problems, where),
        scope_name=scope_name,
        scope_version=scope_version,
        resource=_resource(item.get("resource")),
        kind=span_kind(item.get("kind")),
        status_code=code,
        status_message=message,
        parent_is_remote=item.get("parent_is_remote") is True,
    )
    return span, trace_hashed or span_hashed


def _first(item: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        value = item.get(key)
        if value is not None:
            return value
    return None


def _scope(value: Any) -> tuple[str | None, str | None]:
    if isinstance(value, dict):
        name, version = value.get("name"), value.get("version")
        return (name if isinstance(name, str) else None, version if isinstance(version, str) else None)
    if isinstance(value, str):
        return value, None
    return None, None


def _status(value: Any) -> tuple[str, str | None]:
    if isinstance(value, dict):
        message = value.get("message") or value.get("description")
        return status_code(value.get("code", value.get("status_code"))), message if isinstance(message, str) else None
    return status_code(value), None


def _resource(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {}
    inner = value.get("attributes")
    return inner if isinstance(inner, dict) else value


def _events(value: Any, problems: Problems, where: str) -> tuple[SpanEvent, ...]:
    if not value:
        return ()
    if not isinstance(value, list):
        problems.warn(where, f"field 'span_events': expected a list, got {type(value).__name__}; events dropped")
        return ()
    events: list[SpanEvent] = []
    for index, event in enumerate(value):
        try:
            if not isinstance(event, dict):
                raise SpanProblem("(event)", f"expected an object, got {type(event).__name__}")
            name = _first(event, "event_name", "name")
            if not isinstance(name, str):
                raise SpanProblem(
                    "event_name", "missing" if name is None else f"expected a string, got {preview(name)}"
                )
            attributes = event.get("attributes") or {}
            if not isinstance(attributes, dict):
                raise SpanProblem("attributes", f"expected an object, got {type(attributes).__name__}")
            timestamp = to_int_ns(_first(event, "timestamp", "time_unix_nano", "timestamp_ns"), "timestamp")
        except SpanProblem as problem:
            problems.warn(f"{where} event [{index}]", f"event skipped: {problem}")
            continue
        events.append(SpanEvent(name=name, timestamp_ns=timestamp, attributes=attributes, body=event.get("body")))
    return tuple(events)
