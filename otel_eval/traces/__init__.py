"""Reading spans from anywhere into the one internal :class:`Span` form.

Files and payloads: OTLP JSON (``resourceSpans``, Tempo ``batches``, ``{"trace": ...}``, a list of ResourceSpans),
OTLP JSONL, Jaeger JSON, OTLP protobuf and flat span-dict lists, detected by content
(:func:`read_trace_file`, :func:`read_trace_bytes`). Messages: :func:`spans_from_otlp_proto`. Live SDK spans:
:func:`spans_from_readable`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_eval.traces._json import loads as json_loads
from otel_eval.traces.formats import (
    FORMAT_JAEGER_JSON,
    FORMAT_OTLP_JSON,
    FORMAT_OTLP_JSONL,
    FORMAT_OTLP_PROTO,
    FORMAT_SDK,
    FORMAT_SPAN_DICTS,
)
from otel_eval.traces.readable import spans_from_readable
from otel_eval.traces.reader import read_trace_bytes, read_trace_file, read_trace_files
from otel_eval.traces.result import TraceReadResult
from otel_eval.traces.span import Span, SpanEvent

if TYPE_CHECKING:
    from otel_eval.traces._normalize import Problems
    from otel_eval.traces.otlp_proto import HasResourceSpans

__all__ = [
    "FORMAT_JAEGER_JSON",
    "FORMAT_OTLP_JSON",
    "FORMAT_OTLP_JSONL",
    "FORMAT_OTLP_PROTO",
    "FORMAT_SDK",
    "FORMAT_SPAN_DICTS",
    "Span",
    "SpanEvent",
    "TraceReadResult",
    "json_loads",
    "read_trace_bytes",
    "read_trace_file",
    "read_trace_files",
    "spans_from_otlp_proto",
    "spans_from_readable",
]


def spans_from_otlp_proto(
    message: HasResourceSpans, *, problems: Problems | None = None, source: str = "otlp-proto"
) -> list[Span]:
    """Spans of an OTLP protobuf ``TracesData`` or ``ExportTraceServiceRequest``; see
    :func:`otel_eval.traces.otlp_proto.spans_from_otlp_proto` (imported on first use: protobuf is slow to import).
    """
    from otel_eval.traces.otlp_proto import spans_from_otlp_proto as convert

    return convert(message, problems=problems, source=source)
