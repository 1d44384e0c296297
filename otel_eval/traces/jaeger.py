"""Reader for Jaeger JSON, the query-API shape ``{"data": [{"traceID", "spans", "processes"}]}``.

Times are microseconds. The tags Jaeger synthesises from OTLP fields (``span.kind``, ``otel.status_code``,
``otel.status_description``, ``otel.scope.*``/``otel.library.*``, and ``error`` on error spans) become the span's
kind, status and scope, so a trace reads the same from Jaeger as from OTLP. Process tags become ``resource``.
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

_MICROS = 1000
_CONVERTED_KINDS = frozenset({"int64", "int", "float64", "float", "bool"})
_FIELD_TAGS = frozenset(
    {
        "span.kind",
        "otel.status_code",
        "otel.status_description",
        "otel.scope.name",
        "otel.scope.version",
        "otel.library.name",
        "otel.library.version",
    }
)


def looks_like_jaeger_trace(value: Any) -> bool:
    """Whether ``value`` is one Jaeger trace object (``traceID`` and ``spans``)."""
    return isinstance(value, dict) and "spans" in value and ("traceID" in value or "processes" in value)


def spans_from_jaeger(document: dict[str, Any], problems: Problems) -> list[Span]:
    """Spans of every trace in a Jaeger query-API document (``{"data": [...]}``)."""
    data = document.get("data")
    if not isinstance(data, list):
        raise SpanProblem("data", f"expected a list of traces, got {type(data).__name__}")
    spans: list[Span] = []
    for index, trace in enumerate(data):
        if not isinstance(trace, dict) or not isinstance(trace.get("spans"), list):
            problems.warn(f"data[{index}]", "trace skipped: expected an object with a 'spans' list")
            continue
        spans.extend(spans_from_jaeger_trace(trace, problems, path=f"data[{index}]"))
    return spans


def spans_from_jaeger_trace(trace: dict[str, Any], problems: Problems, *, path: str = "") -> list[Span]:
    """Spans of one Jaeger trace object; a malformed span is skipped with a warning."""
    processes = trace.get("processes")
    resources: dict[str, dict[str, Any]] = {}
    if isinstance(processes, dict):
        for pid, process in processes.items():
            resources[pid] = _resource(process, problems, f"{path}.processes.{pid}")
    spans: list[Span] = []
    for index, raw in enumerate(trace.get("spans") or ()):
        where = f"span {path}.spans[{index}]"
        try:
            spans.append(_span(raw, resources, problems, where))
        except SpanProblem as problem:
            problems.skipped(where, problem)
    return spans


def _span(raw: Any, resources: dict[str, dict[str, Any]], problems: Problems, where: str) -> Span:
    if not isinstance(raw, dict):
        raise SpanProblem("(span)", f"expected an object, got {type(raw).__name__} {preview(raw)}")
    trace_id = normalize_id(raw.get("traceID"), "traceID", TRACE_ID_HEX_DIGITS)
    span_id = normalize_id(raw.get("spanID"), "spanID", SPAN_ID_HEX_DIGITS)
    name = raw.get("operationName")
    if not isinstance(name, str):
        raise SpanProblem("operationName", "missing" if name is None else f"expected a string, got {preview(name)}")
    start = to_int_ns(raw.get("startTime"), "startTime", _MICROS)
    duration_raw = raw.get("duration")
    duration = 0 if duration_raw is None else to_int_ns(duration_raw, "duration", _MICROS)
    tags = raw.get("tags")
    if tags is not None and not isinstance(tags, list):
        raise SpanProblem("tags", f"expected a list, got {type(tags).__name__}")
    attributes = _key_values(tags or (), problems, f"{where} tags")
    fields = {key: attributes.pop(key) for key in _FIELD_TAGS.intersection(attributes)}
    status = status_code(fields.get("otel.status_code"))
    if status == "UNSET" and attributes.get("error") is True:
        status = "ERROR"
    if status == "ERROR" and attributes.get("error") is True:
        del attributes["error"]
    kind_tag = fields.get("span.kind")
    process = raw.get("process")
    resource = (
        _resource(process, problems, f"{where} process")
        if isinstance(process, dict)
        else resources.get(str(raw.get("processID")), {})
    )
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=_parent(raw, trace_id),
        name=name,
        start_time_ns=start,
        end_time_ns=start + duration,
        attributes=attributes,
        events=_events(raw.get("logs"), problems, where),
        scope_name=_str(fields.get("otel.scope.name", fields.get("otel.library.name"))),
        scope_version=_str(fields.get("otel.scope.version", fields.get("otel.library.version"))),
        resource=resource,
        kind=span_kind(kind_tag) if isinstance(kind_tag, str) else None,
        status_code=status,
        status_message=_str(fields.get("otel.status_description")),
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _parent(raw: dict[str, Any], trace_id: str) -> str | None:
    references = raw.get("references")
    if isinstance(references, list):
        chosen: Any = None
        for reference in references:
            if not isinstance(reference, dict):
                continue
            ref_trace = reference.get("traceID")
            if isinstance(ref_trace, str) and ref_trace.lower().lstrip("0") != trace_id.lstrip("0"):
                continue  # a link into another trace, not the parent
            if reference.get("refType", "CHILD_OF") == "CHILD_OF":
                chosen = reference.get("spanID")
                break
            if chosen is None:
                chosen = reference.get("spanID")  # FOLLOWS_FROM, when there is no CHILD_OF
        if chosen is not None:
            return normalize_parent_id(chosen, "references[].spanID")
    return normalize_parent_id(raw.get("parentSpanID"), "parentSpanID")


def _resource(process: Any, problems: Problems, where: str) -> dict[str, Any]:
    if not isinstance(process, dict):
        return {}
    resource = _key_values(process.get("tags") or (), problems, f"{where} tags")
    service = process.get("serviceName")
    if isinstance(service, str):
        resource.setdefault("service.name", service)
    return resource


def _key_values(tags: Any, problems: Problems, where: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if not isinstance(tags, (list, tuple)):
        problems.warn(where, f"tags skipped: expected a list, got {type(tags).__name__}")
        return result
    for index, tag in enumerate(tags):
        try:  # the common case: a well-formed string tag, kept as it is
            key, kind, value = tag["key"], tag["type"], tag["value"]
            if kind == "string" and type(key) is str:
                result[key] = value
                continue
        except (TypeError, KeyError):
            pass
        key = tag.get("key") if isinstance(tag, dict) else None
        if not isinstance(key, str):
            problems.warn(f"{where}[{index}]", f"tag skipped: expected {{key, type, value}}, got {preview(tag)}")
            continue
        kind = tag.get("type")
        value = tag.get("value")
        if isinstance(kind, str) and kind in _CONVERTED_KINDS:  # strings and binary values are kept as they are
            try:
                value = _tag_value(kind, value)
            except (TypeError, ValueError):
                problems.warn(f"{where}[{index}]", f"tag {key!r} skipped: bad {kind} value {preview(value)}")
                continue
        result[key] = value
    return result


def _tag_value(kind: Any, value: Any) -> Any:
    if kind in ("int64", "int") and not isinstance(value, int):
        return int(value)
    if kind in ("float64", "float") and not isinstance(value, (int, float)):
        return float(value)
    if kind == "bool" and isinstance(value, str):
        if value.lower() not in ("true", "false"):
            raise ValueError(value)
        return value.lower() == "true"
    return value


def _events(logs: Any, problems: Problems, where: str) -> tuple[SpanEvent, ...]:
    if not logs or not isinstance(logs, list):
        return ()
    events: list[SpanEvent] = []
    for index, log in enumerate(logs):
        if not isinstance(log, dict):
            problems.warn(f"{where} logs[{index}]", "log skipped: expected an object")
            continue
        try:
            timestamp = to_int_ns(log.get("timestamp"), "timestamp", _MICROS)
        except SpanProblem as problem:
            problems.warn(f"{where} logs[{index}]", f"log skipped: {problem}")
            continue
        attributes = _key_values(log.get("fields") or (), problems, f"{where} logs[{index}].fields")
        name = attributes.pop("event", None)
        events.append(
            SpanEvent(name=name if isinstance(name, str) else "log", timestamp_ns=timestamp, attributes=attributes)
        )
    return tuple(events)
