"""Readers for OTLP log records: JSON ``{"resourceLogs": [...]}`` (the Collector's file exporter, ``MessageToDict``)
and protobuf ``LogsData`` / ``ExportLogsServiceRequest`` (the SDK's OTLP log exporter, the Collector's Kafka exporter;
protobuf is imported on first use, as for traces: it is slow to import).

Only GenAI content records are returned (:func:`otel_eval.traces.log_records.is_content_event`), as
:class:`~otel_eval.traces.log_records.SpanLogRecord`; other records (the application's logs) are skipped silently. A
content record without a valid trace id and span id is skipped with a warning naming its path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from otel_eval.traces._normalize import SPAN_ID_HEX_DIGITS, TRACE_ID_HEX_DIGITS, Problems, SpanProblem, normalize_id
from otel_eval.traces.log_records import SpanLogRecord, event_name_of, is_content_event
from otel_eval.traces.otlp_json import any_value, attributes_from_json
from otel_eval.traces.span import SpanEvent

if TYPE_CHECKING:
    from opentelemetry.proto.logs.v1.logs_pb2 import LogsData

_SCOPE_LOGS_KEYS = ("scopeLogs", "scope_logs", "instrumentationLibraryLogs", "instrumentation_library_logs")
_RECORD_KEYS = ("logRecords", "log_records")
logger = logging.getLogger(__name__)
_TRACE_ID_BYTES = 16
_SPAN_ID_BYTES = 8


class HasResourceLogs(Protocol):
    """``LogsData``, ``ExportLogsServiceRequest``, or anything else with a ``resource_logs`` field."""

    @property
    def resource_logs(self) -> Any:
        """The ResourceLogs of the message."""
        ...


def log_records_from_resource_logs(resource_logs: Any, problems: Problems, *, path: str) -> list[SpanLogRecord]:
    """The content log records of a JSON list of OTLP ResourceLogs.

    Raises:
        SpanProblem: ``resource_logs`` is not a list.
    """
    if not isinstance(resource_logs, list):
        raise SpanProblem(path, f"expected a list of ResourceLogs, got {type(resource_logs).__name__}")
    records: list[SpanLogRecord] = []
    for r_index, resource_log in enumerate(resource_logs):
        r_path = f"{path}[{r_index}]"
        if not isinstance(resource_log, dict):
            problems.warn(r_path, f"skipped: expected a ResourceLogs object, got {type(resource_log).__name__}")
            continue
        key = next((k for k in _SCOPE_LOGS_KEYS if k in resource_log), _SCOPE_LOGS_KEYS[0])
        scope_logs = resource_log.get(key) or []
        if not isinstance(scope_logs, list):
            problems.warn(f"{r_path}.{key}", "skipped: expected a list")
            continue
        for s_index, scope_log in enumerate(scope_logs):
            s_path = f"{r_path}.{key}[{s_index}]"
            raw_records = _pick(scope_log, _RECORD_KEYS) if isinstance(scope_log, dict) else None
            if not isinstance(raw_records, list):
                problems.warn(s_path, "skipped: expected an object with a 'logRecords' list")
                continue
            for index, raw in enumerate(raw_records):
                where = f"log record {s_path}.logRecords[{index}]"
                try:
                    record = _record_from_json(raw, problems, where)
                except SpanProblem as problem:
                    problems.skipped(where, problem)
                    continue
                if record is not None:
                    records.append(record)
    return records


def _pick(raw: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((raw[key] for key in keys if raw.get(key) is not None), None)


def _record_from_json(raw: Any, problems: Problems, where: str) -> SpanLogRecord | None:
    if not isinstance(raw, dict):
        raise SpanProblem("(log record)", f"expected an object, got {type(raw).__name__}")
    attributes = attributes_from_json(raw.get("attributes"), problems, f"{where}.attributes")
    name = event_name_of(_pick(raw, ("eventName", "event_name")), attributes)
    if not is_content_event(name):
        return None
    trace_id = normalize_id(_pick(raw, ("traceId", "trace_id")), "traceId", TRACE_ID_HEX_DIGITS)
    span_id = normalize_id(_pick(raw, ("spanId", "span_id")), "spanId", SPAN_ID_HEX_DIGITS)
    try:
        body = any_value(raw.get("body"))
    except ValueError as exc:
        problems.warn(where, f"body skipped: {exc}")
        body = None
    time = _pick(raw, ("timeUnixNano", "time_unix_nano")) or _pick(
        raw, ("observedTimeUnixNano", "observed_time_unix_nano")
    )
    try:
        timestamp = int(time) if time is not None else 0
    except (TypeError, ValueError):
        raise SpanProblem("timeUnixNano", f"expected an integer, got {time!r}") from None
    assert name is not None  # is_content_event(None) is False
    return SpanLogRecord(
        trace_id=trace_id,
        span_id=span_id,
        event=SpanEvent(name=name, timestamp_ns=timestamp, attributes=attributes, body=body),
    )


def parse_logs_data(data: bytes) -> LogsData:
    """Parses protobuf bytes as ``LogsData`` (an ``ExportLogsServiceRequest`` parses the same way).

    Raises:
        google.protobuf.message.DecodeError: the bytes are not a valid message.
    """
    from opentelemetry.proto.logs.v1.logs_pb2 import LogsData

    message: LogsData = LogsData.FromString(data)
    return message


def log_records_from_otlp_proto(
    message: HasResourceLogs, problems: Problems | None = None, *, source: str = "otlp-proto"
) -> list[SpanLogRecord]:
    """The content log records of an OTLP protobuf ``LogsData`` / ``ExportLogsServiceRequest``; a malformed one is
    skipped with a warning (into ``problems``, else logged naming ``source``)."""
    from otel_eval.traces.otlp_proto import attributes_from_proto, value_from_proto

    sink = problems if problems is not None else Problems(source)
    records = _records_from_proto(message, sink, attributes_from_proto, value_from_proto)
    if problems is None:
        for warning in sink.warnings:
            logger.warning("%s", warning)
    return records


def _records_from_proto(
    message: HasResourceLogs,
    problems: Problems,
    attributes_from_proto: Callable[[Any], dict[str, Any]],
    value_from_proto: Callable[[Any], Any],
) -> list[SpanLogRecord]:
    records: list[SpanLogRecord] = []
    for r_index, resource_logs in enumerate(message.resource_logs):
        for s_index, scope_logs in enumerate(resource_logs.scope_logs):
            for index, record in enumerate(scope_logs.log_records):
                attributes = attributes_from_proto(record.attributes)
                name = event_name_of(record.event_name, attributes)
                if name is None or not is_content_event(name):
                    continue
                where = f"log record resource_logs[{r_index}].scope_logs[{s_index}].log_records[{index}]"
                if len(record.trace_id) != _TRACE_ID_BYTES or not any(record.trace_id):
                    problems.skipped(where, f"field 'trace_id': expected {_TRACE_ID_BYTES} non-zero bytes")
                    continue
                if len(record.span_id) != _SPAN_ID_BYTES or not any(record.span_id):
                    problems.skipped(where, f"field 'span_id': expected {_SPAN_ID_BYTES} non-zero bytes")
                    continue
                body = value_from_proto(record.body) if record.HasField("body") else None
                records.append(
                    SpanLogRecord(
                        trace_id=record.trace_id.hex(),
                        span_id=record.span_id.hex(),
                        event=SpanEvent(
                            name=name,
                            timestamp_ns=record.time_unix_nano or record.observed_time_unix_nano,
                            attributes=attributes,
                            body=body,
                        ),
                    )
                )
    return records
