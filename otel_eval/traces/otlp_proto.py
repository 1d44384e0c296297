"""Reader for OTLP protobuf: ``TracesData`` and ``ExportTraceServiceRequest`` (the same wire layout for field 1).

This is what the OpenTelemetry Collector's Kafka exporter writes with ``encoding: otlp_proto``. The message fields
are read directly (no ``MessageToDict`` round trip). ``bytesValue`` attributes become base64 text, as in OTLP JSON.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from google.protobuf.message import DecodeError
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, TracesData
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

from otel_eval.traces._normalize import KIND_BY_INT, STATUS_BY_INT, Problems
from otel_eval.traces.span import Span, SpanEvent

logger = logging.getLogger(__name__)

ProtoDecodeError = DecodeError
"""Raised by :func:`parse_traces_data` for bytes that are not a valid protobuf message."""

_TRACE_ID_BYTES = 16
_SPAN_ID_BYTES = 8
_FLAGS_REMOTE_PARENT = 0x100 | 0x200  # SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK | SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK


class HasResourceSpans(Protocol):
    """``TracesData``, ``ExportTraceServiceRequest``, or anything else with a ``resource_spans`` field."""

    @property
    def resource_spans(self) -> Iterable[ResourceSpans]:
        """The ResourceSpans of the message."""
        ...


def parse_traces_data(data: bytes) -> TracesData:
    """Parses protobuf bytes as ``TracesData`` (an ``ExportTraceServiceRequest`` parses the same way).

    Raises:
        ProtoDecodeError: the bytes are not a valid message.
    """
    message: TracesData = TracesData.FromString(data)
    return message


def spans_from_otlp_proto(
    message: HasResourceSpans, *, problems: Problems | None = None, source: str = "otlp-proto"
) -> list[Span]:
    """Spans of an OTLP protobuf message. A malformed span (bad id size) is skipped with a warning.

    Args:
        message: a ``TracesData`` or ``ExportTraceServiceRequest``.
        problems: collects the warnings; without it they are logged.
        source: names the message in warnings (e.g. ``"topic/partition@offset"``).
    """
    sink = problems if problems is not None else Problems(source)
    spans: list[Span] = []
    # Repeated fields are read as one list each (``[:]``): iterating a protobuf container goes by index until an
    # IndexError, whose formatted message costs more than reading a span's ids.
    for r_index, resource_spans in enumerate(_items(message.resource_spans)):
        resource = _resource_attributes(resource_spans.resource)
        for s_index, scope_spans in enumerate(resource_spans.scope_spans[:]):
            scope = scope_spans.scope
            scope_name = scope.name or None
            scope_version = scope.version or None
            for index, span in enumerate(scope_spans.spans[:]):
                converted = _span(span, resource, scope_name, scope_version)
                if isinstance(converted, str):
                    sink.skipped(f"span resource_spans[{r_index}].scope_spans[{s_index}].spans[{index}]", converted)
                else:
                    spans.append(converted)
    if problems is None:
        for warning in sink.warnings:
            logger.warning("%s", warning)
    return spans


_RESOURCES_KEPT = 64
_RESOURCES: dict[bytes, dict[str, Any]] = {}
"""Resource attributes by the resource's bytes: a process sends the same resource in every message (its service,
SDK and host), read once; emptied when full (a sender of ever-new resources gains nothing and keeps a few)."""


def _resource_attributes(resource: Any) -> dict[str, Any]:
    """The resource's attributes (shared between the messages that carry the same resource bytes: not mutated)."""
    if not resource.attributes:
        return {}
    key = resource.SerializeToString(deterministic=True)
    found = _RESOURCES.get(key)
    if found is None:
        if len(_RESOURCES) >= _RESOURCES_KEPT:
            _RESOURCES.clear()
        found = _RESOURCES[key] = _attributes(resource.attributes)
    return found


def _span(span: ProtoSpan, resource: dict[str, Any], scope_name: str | None, scope_version: str | None) -> Span | str:
    trace_id = span.trace_id
    span_id = span.span_id
    parent = span.parent_span_id
    if not (len(trace_id) == _TRACE_ID_BYTES and len(span_id) == _SPAN_ID_BYTES and any(trace_id) and any(span_id)):
        problem = _id_problem(trace_id, _TRACE_ID_BYTES, "trace_id") or _id_problem(span_id, _SPAN_ID_BYTES, "span_id")
        if problem:
            return problem
    if parent and len(parent) != _SPAN_ID_BYTES:
        return f"field 'parent_span_id': expected {_SPAN_ID_BYTES} bytes, got {len(parent)}"
    start = span.start_time_unix_nano
    status = span.status
    has_parent = bool(parent) and any(parent)
    events = span.events
    return Span(
        trace_id.hex(),
        span_id.hex(),
        parent.hex() if has_parent else None,
        span.name,
        start,
        span.end_time_unix_nano or start,
        _attributes(span.attributes),
        tuple(
            SpanEvent(name=event.name, timestamp_ns=event.time_unix_nano, attributes=_attributes(event.attributes))
            for event in events[:]
        )
        if events
        else (),
        scope_name,
        scope_version,
        resource,
        KIND_BY_INT.get(span.kind),  # what span_kind() and status_code() give for protobuf's enum ints
        STATUS_BY_INT.get(status.code, "UNSET"),
        status.message or None,
        has_parent and span.flags & _FLAGS_REMOTE_PARENT == _FLAGS_REMOTE_PARENT,
    )


def _id_problem(value: bytes, size: int, field_name: str) -> str | None:
    if len(value) != size:
        return f"field {field_name!r}: expected {size} bytes, got {len(value)}"
    if not any(value):
        return f"field {field_name!r}: all-zero id is invalid"
    return None


def _attributes(key_values: Iterable[KeyValue]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key_value in _items(key_values):
        value = key_value.value
        text = value.string_value
        if text:  # most attributes: a string that is not empty is the oneof's member, read without asking which
            result[key_value.key] = text
            continue
        which = value.WhichOneof("value")
        if which is not None:
            result[key_value.key] = _READERS[which](value)
    return result


def _items(repeated: Iterable[Any]) -> Iterable[Any]:
    """A repeated field's items as a list (one call: see :func:`spans_from_otlp_proto`), or ``repeated`` itself when
    it is not protobuf's container (a plain list passed in)."""
    try:
        return repeated[:]  # type: ignore[index,no-any-return]
    except TypeError:
        return repeated


def _any_value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    return None if which is None else _READERS[which](value)


_READERS: dict[str, Callable[[AnyValue], Any]] = {
    "string_value": lambda v: v.string_value,
    "bool_value": lambda v: v.bool_value,
    "int_value": lambda v: v.int_value,
    "double_value": lambda v: v.double_value,
    "array_value": lambda v: [_any_value(item) for item in v.array_value.values],
    "kvlist_value": lambda v: {kv.key: _any_value(kv.value) for kv in v.kvlist_value.values},
    "bytes_value": lambda v: base64.b64encode(v.bytes_value).decode("ascii"),
    "string_value_strindex": lambda v: v.string_value_strindex,
}


attributes_from_proto = _attributes
"""Attributes of an OTLP protobuf ``KeyValue`` list as a dict (shared with the log-record reader)."""
value_from_proto = _any_value
"""A Python value from an OTLP protobuf ``AnyValue``; None for an empty one."""
