"""Jaeger JSON and span-dict edge cases: short ids, reference kinds, synthesised tags, times, wrappers."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, TracesData
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

from otel_eval.traces import (
    FORMAT_JAEGER_JSON,
    FORMAT_OTLP_JSONL,
    FORMAT_SPAN_DICTS,
    Span,
    read_trace_bytes,
    spans_from_otlp_proto,
)

TRACE = "00000000000000004bf92f3577b34da6"


def jaeger_span(span_id: str, **changes: Any) -> dict[str, Any]:
    span = {
        "traceID": "4bf92f3577b34da6",  # a 64-bit Jaeger trace id
        "spanID": span_id,
        "operationName": f"op {span_id}",
        "references": [],
        "startTime": 1_700_000_000_000_000,
        "duration": 250,
        "tags": [],
        "logs": [],
        "processID": "p1",
    }
    span.update(changes)
    return span


def read(value: Any, source: str = "t.json") -> list[Span]:
    result = read_trace_bytes(json.dumps(value).encode(), source=source)
    assert result.warnings == []
    return result.spans


def test_jaeger_short_ids_references_and_synthesised_tags() -> None:
    spans = [
        jaeger_span(
            "a1",
            tags=[
                {"key": "error", "type": "bool", "value": True},
                {"key": "otel.library.name", "type": "string", "value": "old.lib"},
                {"key": "otel.library.version", "type": "string", "value": "0.1"},
                {"key": "span.kind", "type": "string", "value": "producer"},
                {"key": "count", "type": "int64", "value": "12"},
                {"key": "ratio", "type": "float64", "value": 0.5},
                {"key": "flag", "type": "bool", "value": "false"},
            ],
        ),
        jaeger_span(
            "a2",
            references=[
                {"refType": "CHILD_OF", "traceID": "ffffffffffffffffffffffffffffffff", "spanID": "dd"},
                {"refType": "FOLLOWS_FROM", "traceID": "4bf92f3577b34da6", "spanID": "a1"},
            ],
            tags=[
                {"key": "otel.status_code", "type": "string", "value": "ERROR"},
                {"key": "otel.status_description", "type": "string", "value": "bad"},
            ],
            process={"serviceName": "inline", "tags": [{"key": "host", "type": "string", "value": "h"}]},
        ),
        jaeger_span("a3", references=[], parentSpanID="a2"),
    ]
    document = {"data": [{"traceID": "4bf92f3577b34da6", "spans": spans, "processes": {"p1": {"serviceName": "svc"}}}]}
    a1, a2, a3 = read(document)

    assert a1.trace_id == TRACE and a1.span_id == "00000000000000a1"
    assert (a1.kind, a1.status_code, a1.scope_name, a1.scope_version) == ("PRODUCER", "ERROR", "old.lib", "0.1")
    assert a1.attributes == {"count": 12, "ratio": 0.5, "flag": False}
    assert a1.resource == {"service.name": "svc"}
    assert (a1.start_time_ns, a1.end_time_ns) == (1_700_000_000_000_000_000, 1_700_000_000_000_250_000)

    assert a2.parent_span_id == "00000000000000a1"  # the link into another trace is not the parent
    assert (a2.status_code, a2.status_message) == ("ERROR", "bad")
    assert a2.resource == {"service.name": "inline", "host": "h"}
    assert a3.parent_span_id == "00000000000000a2"


def test_jaeger_single_trace_object_and_list_of_traces() -> None:
    trace = {"traceID": "4bf92f3577b34da6", "spans": [jaeger_span("b1")], "processes": {}}
    for value in (trace, [trace, trace]):
        result = read_trace_bytes(json.dumps(value).encode(), source="j.json")
        assert result.format == FORMAT_JAEGER_JSON
        assert {s.span_id for s in result.spans} == {"00000000000000b1"}


SPAN_DICT = {
    "trace_id": "4bf92f3577b34da64bf92f3577b34da6",
    "span_id": "00f067aa0ba902b7",
    "parent_span_id": "",
    "name": "chat",
    "start_time": "2023-11-14T22:13:20.000001Z",
    "end_time": 1_700_000_001_000_000_000,
    "kind": "SpanKind.CLIENT",
    "status": "ERROR",
    "scope": "my.scope",
    "resource": {"attributes": {"service.name": "s"}},
    "attributes": {"a": [1, 2], "nested": {"kept": "as is"}},
}


def test_span_dict_iso_times_kind_status_scope_resource() -> None:
    (span,) = read([SPAN_DICT])
    assert span.start_time_ns == 1_700_000_000_000_001_000
    assert span.end_time_ns == 1_700_000_001_000_000_000
    assert (span.kind, span.status_code, span.scope_name, span.parent_span_id) == ("CLIENT", "ERROR", "my.scope", None)
    assert span.resource == {"service.name": "s"}
    assert span.attributes == {"a": [1, 2], "nested": {"kept": "as is"}}


def test_span_dict_missing_end_time_is_a_warning_not_a_skip() -> None:
    item = {k: v for k, v in SPAN_DICT.items() if k != "end_time"}
    result = read_trace_bytes(json.dumps({"session_id": "s", "span_count": 1, "spans": [item]}).encode(), source="w")
    assert result.format == FORMAT_SPAN_DICTS
    assert result.spans[0].end_time_ns == result.spans[0].start_time_ns
    assert result.warnings == ["w: span spans[0]: field 'end_time': missing; the span is taken to end when it starts"]


def test_span_dict_time_without_timezone_is_rejected() -> None:
    result = read_trace_bytes(json.dumps([{**SPAN_DICT, "start_time": "2023-11-14T22:13:20"}]).encode(), source="tz")
    assert result.spans == []
    assert result.warnings == [
        "tz: span [0]: span skipped: field 'start_time': time without a timezone: '2023-11-14T22:13:20'"
    ]


def test_jsonl_of_span_dicts() -> None:
    lines = [json.dumps({**SPAN_DICT, "span_id": f"00f067aa0ba902b{i}"}) for i in range(3)]
    result = read_trace_bytes("\n".join(lines).encode(), source="d.jsonl")
    assert result.format == FORMAT_OTLP_JSONL
    assert [s.span_id for s in result.spans] == [f"00f067aa0ba902b{i}" for i in range(3)]


def test_spans_from_otlp_proto_logs_warnings_without_a_sink(caplog: pytest.LogCaptureFixture) -> None:
    good = ProtoSpan(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="ok", start_time_unix_nano=5)
    bad = ProtoSpan(trace_id=b"\x00" * 16, span_id=b"\x02" * 8, name="zero trace id", start_time_unix_nano=5)
    message = TracesData(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[good, bad])])])
    with caplog.at_level(logging.WARNING, logger="otel_eval.traces.otlp_proto"):
        spans = spans_from_otlp_proto(message, source="otlp_spans/3@42")
    assert [(s.name, s.trace_id, s.end_time_ns) for s in spans] == [("ok", "01" * 16, 5)]
    assert caplog.messages == [
        "otlp_spans/3@42: span resource_spans[0].scope_spans[0].spans[1]: span skipped: "
        "field 'trace_id': all-zero id is invalid"
    ]
