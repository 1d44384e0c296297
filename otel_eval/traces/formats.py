"""Names of the trace formats the readers understand, as reported in ``TraceReadResult.format``."""

from __future__ import annotations

from typing import Final

FORMAT_OTLP_JSON: Final = "otlp-json"
"""``{"resourceSpans": [...]}``, Tempo ``{"batches": [...]}``, ``{"trace": {...}}`` or a list of ResourceSpans."""
FORMAT_OTLP_JSONL: Final = "otlp-jsonl"
"""One OTLP span, ResourceSpans or export request per line."""
FORMAT_OTLP_PROTO: Final = "otlp-proto"
"""Protobuf ``TracesData`` / ``ExportTraceServiceRequest`` bytes."""
FORMAT_JAEGER_JSON: Final = "jaeger-json"
"""Jaeger query-API JSON: ``{"data": [{"traceID", "spans", "processes"}]}``."""
FORMAT_SPAN_DICTS: Final = "span-dicts"
"""A JSON list of flat span dicts (strands-evals fixtures), or ``{"session_id", "span_count", "spans": [...]}``."""
FORMAT_OTLP_LOGS_JSON: Final = "otlp-logs-json"
"""``{"resourceLogs": [...]}``: GenAI content log records (``EVENT_ONLY``), joined onto the spans of the trace files."""
FORMAT_OTLP_LOGS_PROTO: Final = "otlp-logs-proto"
"""Protobuf ``LogsData`` / ``ExportLogsServiceRequest`` bytes."""
FORMAT_SDK: Final = "sdk"
"""Live OpenTelemetry SDK ``ReadableSpan`` objects."""

EXPECTED_FORMATS: Final = (
    'OTLP JSON ({"resourceSpans": [...]}, Tempo {"batches": [...]}, {"trace": {...}} or a list of ResourceSpans), '
    "OTLP JSONL (one span or request per line), "
    'Jaeger JSON ({"data": [{"traceID", "spans", "processes"}]}), '
    "a JSON list of span dicts (trace_id, span_id, name, start_time, ...), "
    "OTLP protobuf (TracesData / ExportTraceServiceRequest), "
    'or OTLP logs beside them (JSON {"resourceLogs": [...]}, protobuf LogsData / ExportLogsServiceRequest); '
    "any of them gzip-compressed"
)
"""How error messages describe what a trace file may be."""
