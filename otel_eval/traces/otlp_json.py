"""Reader for OTLP JSON: ResourceSpans lists from ``resourceSpans``, Tempo ``batches`` and bare OTLP span objects.

Accepts both the proto-JSON spelling (camelCase, ids in hex or base64, 64-bit ints as strings) and the
snake_case spelling of ``MessageToDict(preserving_proto_field_name=True)``; ``instrumentationLibrarySpans`` /
``instrumentationLibrary`` (OTLP < 0.15, Tempo v1) as well as ``scopeSpans`` / ``scope``. Attributes may be the
OTLP ``[{key, value: AnyValue}]`` array or a dict; nested dicts (ClickHouse JSON columns) are flattened to dotted
keys. ``arrayValue`` becomes a list, ``kvlistValue`` a dict, ``bytesValue`` stays base64 text.
"""

from __future__ import annotations

from typing import Any

from otel_eval.traces._normalize import (
    SPAN_ID_HEX_DIGITS,
    TRACE_ID_HEX_DIGITS,
    Problems,
    SpanProblem,
    normalize_id,
    normalize_parent_id,
    preview,
    span_kind,
    status_code,
    to_int_ns,
)
from otel_eval.traces.span import Span, SpanEvent

_SCOPE_SPANS_KEYS = ("scopeSpans", "scope_spans", "instrumentationLibrarySpans", "instrumentation_library_spans")
_SCOPE_KEYS = ("scope", "instrumentationLibrary", "instrumentation_library", "instrumentationScope")
_FLAG_HAS_IS_REMOTE = 0x100
_FLAG_IS_REMOTE = 0x200


def looks_like_resource_spans(value: Any) -> bool:
    """Whether ``value`` is one OTLP ResourceSpans object."""
    return isinstance(value, dict) and any(key in value for key in _SCOPE_SPANS_KEYS)


def looks_like_otlp_span(value: Any) -> bool:
    """Whether ``value`` is one OTLP span object (camelCase or snake_case ids)."""
    return isinstance(value, dict) and (("traceId" in value and "spanId" in value) or "start_time_unix_nano" in value)


def spans_from_resource_spans(resource_spans: Any, problems: Problems, *, path: str) -> list[Span]:
    """Spans of a list of OTLP ResourceSpans; malformed spans are skipped with a warning naming their path."""
    if not isinstance(resource_spans, list):
        raise SpanProblem(path, f"expected a list of ResourceSpans, got {type(resource_spans).__name__}")
    spans: list[Span] = []
    for r_index, resource_span in enumerate(resource_spans):
        r_path = f"{path}[{r_index}]"
        if not isinstance(resource_span, dict):
            problems.warn(r_path, f"skipped: expected a ResourceSpans object, got {type(resource_span).__name__}")
            continue
        resource = resource_attributes(resource_span.get("resource"), problems, f"{r_path}.resource")
        scope_spans_key = next((key for key in _SCOPE_SPANS_KEYS if key in resource_span), _SCOPE_SPANS_KEYS[0])
        scope_spans = resource_span.get(scope_spans_key) or []
        if not isinstance(scope_spans, list):
            problems.warn(f"{r_path}.{scope_spans_key}", "skipped: expected a list")
            continue
        for s_index, scope_span in enumerate(scope_spans):
            s_path = f"{r_path}.{scope_spans_key}[{s_index}]"
            if not isinstance(scope_span, dict) or not isinstance(scope_span.get("spans", []), list):
                problems.warn(s_path, "skipped: expected an object with a 'spans' list")
                continue
            scope_name, scope_version = _scope(scope_span)
            for index, raw in enumerate(scope_span.get("spans") or ()):
                where = f"span {s_path}.spans[{index}]"
                try:
                    spans.append(span_from_otlp_json(raw, problems, where, resource, scope_name, scope_version))
                except SpanProblem as problem:
                    problems.skipped(where, problem)
    return spans


def resource_attributes(resource: Any, problems: Problems, where: str) -> dict[str, Any]:
    """The attributes of an OTLP Resource object (``{"attributes": [...]}``), or ``{}``."""
    if not isinstance(resource, dict):
        return {}
    return attributes_from_json(resource.get("attributes"), problems, f"{where}.attributes")


def _scope(container: dict[str, Any]) -> tuple[str | None, str | None]:
    for key in _SCOPE_KEYS:
        scope = container.get(key)
        if isinstance(scope, dict):
            name, version = scope.get("name"), scope.get("version")
            return (name or None) if isinstance(name, str) else None, (version or None) if isinstance(
                version, str
            ) else None
    return None, None


def span_from_otlp_json(
    raw: Any,
    problems: Problems,
    where: str,
    resource: dict[str, Any] | None = None,
    scope_name: str | None = None,
    scope_version: str | None = None,
) -> Span:
    """One span from an OTLP JSON span object. A span that carries its own ``resource``/``scope`` (JSONL lines
    often do) uses those.

    Raises:
        SpanProblem: a required field is missing or malformed.
    """
    if not isinstance(raw, dict):
        raise SpanProblem("(span)", f"expected an object, got {type(raw).__name__} {preview(raw)}")
    get = raw.get
    trace_id = normalize_id(_pick(raw, "traceId", "trace_id"), "traceId", TRACE_ID_HEX_DIGITS)
    span_id = normalize_id(_pick(raw, "spanId", "span_id"), "spanId", SPAN_ID_HEX_DIGITS)
    parent_id = normalize_parent_id(_pick(raw, "parentSpanId", "parent_span_id"), "parentSpanId")
    name = get("name")
    if not isinstance(name, str):
        raise SpanProblem("name", "missing" if name is None else f"expected a string, got {preview(name)}")
    start = to_int_ns(_pick(raw, "startTimeUnixNano", "start_time_unix_nano"), "startTimeUnixNano")
    end_raw = _pick(raw, "endTimeUnixNano", "end_time_unix_nano")
    end = start if end_raw in (None, 0, "0") else to_int_ns(end_raw, "endTimeUnixNano")
    if "resource" in raw:
        resource = resource_attributes(get("resource"), problems, f"{where}.resource")
    if scope_name is None and any(key in raw for key in _SCOPE_KEYS):
        scope_name, scope_version = _scope(raw)
    status = get("status")
    code: Any = None
    message: Any = None
    if isinstance(status, dict):
        code, message = status.get("code"), status.get("message")
    flags = get("flags")
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent_id,
        name=name,
        start_time_ns=start,
        end_time_ns=end,
        attributes=attributes_from_json(get("attributes"), problems, f"{where}.attributes"),
        events=_events(get("events"), problems, where),
        scope_name=scope_name,
        scope_version=scope_version,
        resource=resource if resource is not None else {},
        kind=span_kind(get("kind")),
        status_code=status_code(code),
        status_message=message if isinstance(message, str) and message else None,
        parent_is_remote=isinstance(flags, int)
        and parent_id is not None
        and flags & (_FLAG_HAS_IS_REMOTE | _FLAG_IS_REMOTE) == (_FLAG_HAS_IS_REMOTE | _FLAG_IS_REMOTE),
    )


def _pick(raw: dict[str, Any], camel: str, snake: str) -> Any:
    value = raw.get(camel)
    return raw.get(snake) if value is None else value


def attributes_from_json(attributes: Any, problems: Problems, where: str) -> dict[str, Any]:
    """Attributes from the OTLP ``[{key, value}]`` array or from a (possibly nested) dict."""
    if attributes is None:
        return {}
    if isinstance(attributes, dict):
        return _flatten(attributes, "", {})
    if not isinstance(attributes, list):
        problems.warn(where, f"skipped: expected a list or an object, got {type(attributes).__name__}")
        return {}
    result: dict[str, Any] = {}
    for index, item in enumerate(attributes):
        key = item.get("key") if isinstance(item, dict) else None
        if not isinstance(key, str):
            problems.warn(f"{where}[{index}]", f"attribute skipped: expected {{key, value}}, got {preview(item)}")
            continue
        try:
            value = any_value(item.get("value"))
        except (TypeError, ValueError) as exc:
            problems.warn(f"{where}[{index}]", f"attribute {key!r} skipped: {exc}")
            continue
        if value is not None:
            result[key] = value
    return result


def _flatten(value: dict[str, Any], prefix: str, into: dict[str, Any]) -> dict[str, Any]:
    for key, item in value.items():
        full_key = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(item, dict) and item:
            _flatten(item, full_key, into)
        else:
            into[full_key] = item
    return into


def any_value(value: Any) -> Any:
    """A Python value from an OTLP JSON ``AnyValue`` object; None for an empty one.

    Raises:
        ValueError: a value that does not fit its declared type (e.g. ``{"intValue": "x"}``).
    """
    if not isinstance(value, dict):
        if value is None or isinstance(value, (str, bool, int, float, list)):
            return value  # some writers put plain values here
        raise ValueError(f"expected an AnyValue object, got {type(value).__name__}")
    for key, item in value.items():
        if item is None:
            continue  # a writer that spells every member, null but one (Phoenix's REST API)
        if key in ("stringValue", "string_value"):
            if not isinstance(item, str):
                raise ValueError(f"stringValue is {type(item).__name__}, not a string")
            return item
        if key in ("intValue", "int_value"):
            if isinstance(item, int) and not isinstance(item, bool):
                return item
            if not isinstance(item, str) or not item.lstrip("-").isdigit():
                raise ValueError(f"intValue {preview(item)} is not an integer")
            return int(item)
        if key in ("doubleValue", "double_value"):
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                return float(item)
            try:
                return float(item)  # proto-JSON writes "NaN", "Infinity" and numbers as strings
            except (TypeError, ValueError):
                raise ValueError(f"doubleValue {preview(item)} is not a number") from None
        if key in ("boolValue", "bool_value"):
            if not isinstance(item, bool):
                raise ValueError(f"boolValue {preview(item)} is not a boolean")
            return item
        if key in ("arrayValue", "array_value"):
            return [any_value(v) for v in _values(item)]
        if key in ("kvlistValue", "kvlist_value"):
            return {
                kv["key"]: any_value(kv.get("value")) for kv in _values(item) if isinstance(kv, dict) and "key" in kv
            }
        if key in ("bytesValue", "bytes_value"):
            if not isinstance(item, str):
                raise ValueError(f"bytesValue {preview(item)} is not base64 text")
            return item
    return None


def _values(container: Any) -> list[Any]:
    values = container.get("values", []) if isinstance(container, dict) else None
    if not isinstance(values, list):
        raise ValueError("expected {'values': [...]}")
    return values


def _events(events: Any, problems: Problems, where: str) -> tuple[SpanEvent, ...]:
    if not events:
        return ()
    if not isinstance(events, list):
        problems.warn(f"{where}.events", f"events skipped: expected a list, got {type(events).__name__}")
        return ()
    result: list[SpanEvent] = []
    for index, event in enumerate(events):
        e_where = f"{where}.events[{index}]"
        if not isinstance(event, dict):
            problems.warn(e_where, "event skipped: expected an object")
            continue
        name = event.get("name")
        try:
            if not isinstance(name, str):
                raise SpanProblem("name", "missing" if name is None else f"expected a string, got {preview(name)}")
            timestamp = to_int_ns(_pick(event, "timeUnixNano", "time_unix_nano"), "timeUnixNano")
        except SpanProblem as problem:
            problems.warn(e_where, f"event skipped: {problem}")
            continue
        attributes = attributes_from_json(event.get("attributes"), problems, f"{e_where}.attributes")
        result.append(SpanEvent(name=name, timestamp_ns=timestamp, attributes=attributes))
    return tuple(result)
