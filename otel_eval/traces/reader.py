"""Reading trace files: the format is detected from the content, then the matching reader runs.

JSON is recognised by its shape (top-level keys, or the keys of the first list element), several JSON values one
per line are JSONL, and bytes that are not JSON are tried as OTLP protobuf; a gzip-compressed file (``.json.gz``) is
read as what it holds. A source that is none of these raises
:class:`~otel_eval.errors.TraceFormatError` naming the source and the formats expected; within a readable source,
a malformed span is skipped and reported in ``TraceReadResult.warnings``.
"""

from __future__ import annotations

import codecs
import gzip
import io
import json
import logging
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from otel_eval.errors import TraceFormatError
from otel_eval.traces import _json as fast_json
from otel_eval.traces._normalize import Problems, SpanProblem, preview
from otel_eval.traces.formats import (
    EXPECTED_FORMATS,
    FORMAT_JAEGER_JSON,
    FORMAT_OTLP_JSON,
    FORMAT_OTLP_JSONL,
    FORMAT_OTLP_LOGS_JSON,
    FORMAT_OTLP_LOGS_PROTO,
    FORMAT_OTLP_PROTO,
    FORMAT_SPAN_DICTS,
)
from otel_eval.traces.jaeger import looks_like_jaeger_trace, spans_from_jaeger, spans_from_jaeger_trace
from otel_eval.traces.log_records import SpanLogRecord
from otel_eval.traces.otlp_json import (
    looks_like_otlp_span,
    looks_like_resource_spans,
    span_from_otlp_json,
    spans_from_resource_spans,
)
from otel_eval.traces.otlp_logs import log_records_from_resource_logs
from otel_eval.traces.result import TraceReadResult
from otel_eval.traces.span import Span
from otel_eval.traces.span_dicts import looks_like_span_dict, spans_from_span_dicts

logger = logging.getLogger(__name__)

_JSON_STARTS = (b"{", b"[")
_GZIP_MAGIC = b"\x1f\x8b"
MAX_GUNZIPPED_BYTES: Final = 1 << 30
"""A gzip-compressed trace file is read when it decompresses to at most this (1 GiB): a larger one (or a
decompression bomb) is refused, naming the file, before it takes the memory."""


def read_trace_file(path: str | Path) -> TraceReadResult:
    """Reads the spans of one trace file, whatever its supported format.

    Raises:
        TraceFormatError: the file cannot be read, is empty, or is none of the supported formats.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot read trace file: {exc.strerror or exc}") from exc
    result = read_trace_bytes(data, source=str(path))
    result.size = len(data)
    return result


def _gunzipped(data: bytes, source: str) -> bytes:
    """The content of a gzip-compressed trace file (every member), at most :data:`MAX_GUNZIPPED_BYTES`.

    Raises:
        TraceFormatError: not valid gzip, or larger than that once decompressed.
    """
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as compressed:
            content = compressed.read(MAX_GUNZIPPED_BYTES + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceFormatError(f"{source}: gzip-compressed, but cannot be decompressed: {exc}") from None
    if len(content) > MAX_GUNZIPPED_BYTES:
        raise TraceFormatError(
            f"{source}: gzip-compressed, and larger than {MAX_GUNZIPPED_BYTES >> 20} MiB decompressed"
        )
    return content


def read_trace_files(paths: Iterable[str | Path]) -> list[tuple[str | Path, TraceReadResult | TraceFormatError]]:
    """Reads several files; a file that cannot be read yields its error in place of a result, the rest still load."""
    results: list[tuple[str | Path, TraceReadResult | TraceFormatError]] = []
    for path in paths:
        try:
            results.append((path, read_trace_file(path)))
        except TraceFormatError as exc:
            results.append((path, exc))
    return results


def read_trace_bytes(data: bytes, *, source: str) -> TraceReadResult:
    """Reads the spans of one trace payload (file content or message value); ``source`` names it in messages.

    Raises:
        TraceFormatError: the payload is empty or none of the supported formats.
    """
    if data.startswith(_GZIP_MAGIC):
        data = _gunzipped(data, source)
    stripped = data.strip()
    if stripped.startswith(codecs.BOM_UTF8):  # editors on Windows write one; json.loads copes with it
        stripped = stripped[len(codecs.BOM_UTF8) :].lstrip()
        data = stripped
    if not stripped:
        raise TraceFormatError(f"{source}: empty trace file; expected {EXPECTED_FORMATS}")
    problems = Problems(source)
    if not stripped.startswith(_JSON_STARTS):
        return _read_proto(data, source, problems, reason="neither JSON nor OTLP protobuf")
    try:
        document = fast_json.loads(stripped)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        jsonl = _read_jsonl(stripped, problems)
        if jsonl is not None:
            return jsonl
        reason = (
            f"invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg})"
            if isinstance(exc, json.JSONDecodeError)
            else "JSON that is not UTF-8 text"
        )
        return _read_proto(data, source, problems, reason=reason)
    except RecursionError:
        raise TraceFormatError(f"{source}: JSON nested too deeply; expected {EXPECTED_FORMATS}") from None
    logs: list[SpanLogRecord] = []
    spans, format_name = _read_document(document, problems, source, logs)
    if not spans and not logs and not problems.warnings:
        problems.warn("(file)", "no spans" if format_name != FORMAT_OTLP_LOGS_JSON else "no GenAI content log records")
    return TraceReadResult(spans=spans, warnings=problems.warnings, format=format_name, log_records=logs)


def _read_document(document: Any, problems: Problems, source: str, logs: list[SpanLogRecord]) -> tuple[list[Span], str]:
    try:
        spans, format_name = _dispatch(document, problems, "", logs)
    except SpanProblem as problem:
        raise TraceFormatError(f"{source}: {problem}; expected {EXPECTED_FORMATS}") from None
    except RecursionError:  # json.loads stops near the limit; converting nested values may need a few frames more
        raise TraceFormatError(f"{source}: JSON nested too deeply; expected {EXPECTED_FORMATS}") from None
    if format_name is None:
        raise TraceFormatError(f"{source}: unknown trace shape ({_describe(document)}); expected {EXPECTED_FORMATS}")
    return spans, format_name


def _dispatch(value: Any, problems: Problems, path: str, logs: list[SpanLogRecord]) -> tuple[list[Span], str | None]:
    """Spans and the format name of one parsed JSON value, or ``([], None)`` when the shape is unknown; the GenAI
    content log records of an OTLP logs document go to ``logs``."""
    if isinstance(value, dict):
        for key in ("resourceLogs", "resource_logs"):
            if key in value:
                logs.extend(log_records_from_resource_logs(value[key], problems, path=f"{path}{key}"))
                return [], FORMAT_OTLP_LOGS_JSON
        return _dispatch_object(value, problems, path)
    if isinstance(value, list):
        return _dispatch_list(value, problems, path)
    return [], None


def _dispatch_object(value: dict[str, Any], problems: Problems, path: str) -> tuple[list[Span], str | None]:
    for key in ("resourceSpans", "resource_spans", "batches"):
        if key in value:
            return spans_from_resource_spans(value[key], problems, path=f"{path}{key}"), FORMAT_OTLP_JSON
    inner = value.get("trace")
    if isinstance(inner, dict):
        return _dispatch_object(inner, problems, f"{path}trace.")
    if isinstance(value.get("data"), list):
        return spans_from_jaeger(value, problems), FORMAT_JAEGER_JSON
    if looks_like_jaeger_trace(value) and "traceID" in value:
        return spans_from_jaeger_trace(value, problems, path=path.rstrip(".")), FORMAT_JAEGER_JSON
    if looks_like_resource_spans(value):
        return spans_from_resource_spans([value], problems, path=f"{path}(resourceSpans)"), FORMAT_OTLP_JSON
    if looks_like_otlp_span(value):
        return _otlp_spans([value], problems, path), FORMAT_OTLP_JSON
    if looks_like_span_dict(value):
        return spans_from_span_dicts([value], problems, path=path.rstrip(".")), FORMAT_SPAN_DICTS
    if isinstance(value.get("spans"), list):
        return _dispatch_list(value["spans"], problems, f"{path}spans", default=FORMAT_SPAN_DICTS)
    return [], None


def _dispatch_list(
    value: list[Any], problems: Problems, path: str, default: str | None = None
) -> tuple[list[Span], str | None]:
    first = next((item for item in value if isinstance(item, dict)), None)
    if first is None:
        return ([], default or FORMAT_SPAN_DICTS) if not value else ([], None)
    if looks_like_resource_spans(first):
        return spans_from_resource_spans(value, problems, path=path), FORMAT_OTLP_JSON
    if looks_like_jaeger_trace(first):
        spans: list[Span] = []
        for index, trace in enumerate(value):
            if isinstance(trace, dict):
                spans.extend(spans_from_jaeger_trace(trace, problems, path=f"{path}[{index}]"))
            else:
                problems.warn(f"{path}[{index}]", "trace skipped: expected an object")
        return spans, FORMAT_JAEGER_JSON
    if looks_like_otlp_span(first):
        return _otlp_spans(value, problems, path), FORMAT_OTLP_JSON
    if looks_like_span_dict(first) or default == FORMAT_SPAN_DICTS:
        return spans_from_span_dicts(value, problems, path=path), FORMAT_SPAN_DICTS
    return [], None


def _otlp_spans(items: list[Any], problems: Problems, path: str) -> list[Span]:
    spans: list[Span] = []
    for index, raw in enumerate(items):
        where = f"span {path}[{index}]"
        try:
            spans.append(span_from_otlp_json(raw, problems, where))
        except SpanProblem as problem:
            problems.skipped(where, problem)
    return spans


def _read_jsonl(data: bytes, problems: Problems) -> TraceReadResult | None:
    """Spans of a JSONL payload, or None when its first line is not a JSON value (so it is not JSONL)."""
    lines = data.splitlines()
    spans: list[Span] = []
    logs: list[SpanLogRecord] = []
    parsed_any = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = fast_json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            if not parsed_any:
                return None
            problems.warn(f"line {number}", f"line skipped: invalid JSON ({getattr(exc, 'msg', exc)})")
            continue
        parsed_any = True
        try:
            line_spans, format_name = _dispatch(value, problems, f"line {number}: ", logs)
        except SpanProblem as problem:
            problems.warn(f"line {number}", f"line skipped: {problem}")
            continue
        except RecursionError:
            problems.warn(f"line {number}", "line skipped: JSON nested too deeply")
            continue
        if format_name is None:
            problems.warn(f"line {number}", f"line skipped: unknown shape ({_describe(value)})")
            continue
        spans.extend(line_spans)
    if not parsed_any:
        return None
    return TraceReadResult(spans=spans, warnings=problems.warnings, format=FORMAT_OTLP_JSONL, log_records=logs)


def _read_proto(data: bytes, source: str, problems: Problems, *, reason: str) -> TraceReadResult:
    from otel_eval.traces.otlp_proto import ProtoDecodeError, parse_traces_data, spans_from_otlp_proto

    try:
        message = parse_traces_data(data)
    except ProtoDecodeError:
        message = None
    spans = [] if message is None else spans_from_otlp_proto(message, problems=problems)
    if not spans:
        logs = _read_proto_logs(data, source)
        if logs is not None:
            return logs
    if not spans:  # random bytes can parse as protobuf; without one valid span it is not a trace
        raise TraceFormatError(f"{source}: {_not_proto_reason(data, reason)}; expected {EXPECTED_FORMATS}")
    return TraceReadResult(spans=spans, warnings=problems.warnings, format=FORMAT_OTLP_PROTO)


def _read_proto_logs(data: bytes, source: str) -> TraceReadResult | None:
    """The content log records of protobuf ``LogsData`` bytes, or None when they hold no OTLP log record."""
    from otel_eval.traces.otlp_logs import log_records_from_otlp_proto, parse_logs_data
    from otel_eval.traces.otlp_proto import ProtoDecodeError

    try:
        message = parse_logs_data(data)
    except ProtoDecodeError:
        return None
    if not any(scope.log_records for resource in message.resource_logs for scope in resource.scope_logs):
        return None
    problems = Problems(source)  # the trace attempt's warnings are about a misreading
    logs = log_records_from_otlp_proto(message, problems)
    if not logs and not problems.warnings:
        problems.warn("(file)", "no GenAI content log records")
    return TraceReadResult(warnings=problems.warnings, format=FORMAT_OTLP_LOGS_PROTO, log_records=logs)


def _not_proto_reason(data: bytes, reason: str) -> str:
    """Why a payload that is not protobuf failed, refined for JSON scalars such as ``42`` or ``"text"``."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return reason
    return f"unknown trace shape ({_describe(value)})"


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(preview(key) for key in list(value)[:8])
        hint = "; this looks like an ADK eval set, not a trace" if "eval_cases" in value or "evalCases" in value else ""
        return (f"an object with keys {keys}" if keys else "an empty object") + hint
    if isinstance(value, list):
        first = next(iter(value), None)
        return f"a list of {type(first).__name__}" + (
            f" with keys {', '.join(preview(key) for key in list(first)[:8])}" if isinstance(first, dict) else ""
        )
    return f"a JSON {type(value).__name__} {preview(value)}"
