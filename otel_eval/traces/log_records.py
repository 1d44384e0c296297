"""GenAI content carried in log records, joined back onto the spans they belong to.

GenAI instrumentations configured for events (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY``, the
ADK 2.13 experimental semconv) put the messages, system instructions and tool definitions on a
``gen_ai.client.inference.operation.details`` *log record* emitted with the span's context, and nothing on the span.
The reconstruction reads that content from span events (:mod:`otel_eval.reconstruct._genai_events`), so every path
(in-process, Collector, offline files) turns each such log record into a :class:`SpanEvent` and appends it to the span
with the same trace id and span id (:func:`attach_log_records`) before rebuilding.

Only content events are kept (:func:`is_content_event`: the operation-details event and the deprecated per-message
events); any other log record (the application's own logs, evaluation results) is not the reconstruction's business.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from otel_eval import semconv
from otel_eval.traces.span import Span, SpanEvent

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import ReadableLogRecord, ReadWriteLogRecord

CONTENT_EVENTS = frozenset((semconv.GEN_AI_OPERATION_DETAILS_EVENT, *semconv.GEN_AI_DEPRECATED_MESSAGE_EVENTS))
"""Event names whose log records carry content the reconstruction reads."""
EVENT_NAME_ATTRIBUTE = "event.name"
"""Where emitters before the OTLP ``event_name`` field (and the Collector's older exporters) put the event name."""


@dataclass(frozen=True, slots=True)
class SpanLogRecord:
    """A content log record: the span it belongs to (lowercase hex ids) and its content as a span event."""

    trace_id: str
    span_id: str
    event: SpanEvent


def is_content_event(name: object) -> bool:
    """Whether a log record of event name ``name`` carries GenAI content."""
    return name in CONTENT_EVENTS


def event_name_of(event_name: object, attributes: Mapping[str, Any] | None) -> str | None:
    """The record's event name: the ``event_name`` field, else the ``event.name`` attribute."""
    if isinstance(event_name, str) and event_name:
        return event_name
    value = attributes.get(EVENT_NAME_ATTRIBUTE) if attributes else None
    return value if isinstance(value, str) and value else None


def log_record_from_sdk(record: ReadWriteLogRecord | ReadableLogRecord) -> SpanLogRecord | None:
    """The content log record of a live SDK log record, or None when it is not one (no span context, another
    event). Attribute values are copied (sequences as lists, as from the file readers)."""
    log = record.log_record
    trace_id, span_id = log.trace_id, log.span_id
    if not trace_id or not span_id:
        return None
    name = event_name_of(log.event_name, log.attributes)
    if name is None or not is_content_event(name):
        return None
    return SpanLogRecord(
        trace_id=format(trace_id, "032x"),
        span_id=format(span_id, "016x"),
        event=SpanEvent(
            name=name,
            timestamp_ns=log.timestamp or log.observed_timestamp or 0,
            attributes=_plain(log.attributes) if log.attributes else {},
            body=_plain_value(log.body),
        ),
    )


def _plain(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {str(key): _plain_value(value) for key, value in attributes.items()}


def _plain_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(key): _plain_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_value(item) for item in value]
    return value


def attach_log_records(spans: Sequence[Span], records: Iterable[SpanLogRecord]) -> list[SpanLogRecord]:
    """Appends each record's event to the span of its trace id and span id; returns the records whose span is not
    among ``spans``. A span's events stay in timestamp order (span events first on equal times)."""
    by_id = {(span.trace_id, span.span_id): span for span in spans}
    unmatched: list[SpanLogRecord] = []
    touched: dict[tuple[str, str], list[SpanEvent]] = {}
    for record in records:
        key = (record.trace_id, record.span_id)
        if key not in by_id:
            unmatched.append(record)
            continue
        touched.setdefault(key, []).append(record.event)
    for key, events in touched.items():
        span = by_id[key]
        span.events = tuple(sorted((*span.events, *events), key=lambda event: event.timestamp_ns))
    return unmatched
