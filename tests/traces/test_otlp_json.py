"""OTLP JSON in every shape (resourceSpans, Tempo batches, ``{"trace": ...}``, a list of ResourceSpans, JSONL)
and every attribute form, built from the recorded Tempo export and from hand-written spans."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from otel_eval.traces import FORMAT_OTLP_JSON, FORMAT_OTLP_JSONL, Span, read_trace_bytes, read_trace_file
from tests.traces.conftest import AGENTEVALS

TEMPO = AGENTEVALS / "tempo_export_with_batches.json"


def tempo_batches() -> list[dict[str, Any]]:
    batches: list[dict[str, Any]] = json.loads(TEMPO.read_text())["batches"]
    return batches


def as_scope_spans(batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Tempo v1 batches rewritten in current OTLP spelling (scopeSpans/scope)."""
    return [
        {
            "resource": batch["resource"],
            "scopeSpans": [
                {"scope": ils["instrumentationLibrary"], "spans": ils["spans"]}
                for ils in batch["instrumentationLibrarySpans"]
            ],
        }
        for batch in batches
    ]


def read_json(value: Any, name: str = "test.json") -> list[Span]:
    result = read_trace_bytes(json.dumps(value).encode(), source=name)
    assert result.warnings == []
    return result.spans


@pytest.fixture(scope="module")
def expected() -> list[Span]:
    return read_trace_file(TEMPO).spans


@pytest.mark.parametrize(
    "shape",
    ["resourceSpans", "trace-wrapper", "trace-wrapper-batches", "list-of-resource-spans", "single-resource-spans"],
)
def test_every_document_shape_reads_the_same_spans(shape: str, expected: list[Span]) -> None:
    resource_spans = as_scope_spans(tempo_batches())
    document: Any = {
        "resourceSpans": {"resourceSpans": resource_spans},
        "trace-wrapper": {"trace": {"resourceSpans": resource_spans}},
        "trace-wrapper-batches": {"trace": {"batches": tempo_batches()}},
        "list-of-resource-spans": resource_spans,  # what rotel writes to Kafka
        "single-resource-spans": resource_spans[0],
    }[shape]
    spans = read_json(document)
    if shape == "single-resource-spans":
        count = sum(len(s["spans"]) for s in resource_spans[0]["scopeSpans"])
        assert spans == expected[:count]
    else:
        assert spans == expected


def write_lines(tmp_path: Path, lines: list[Any]) -> Path:
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def test_jsonl_one_span_per_line(tmp_path: Path, expected: list[Span]) -> None:
    lines = [span for batch in tempo_batches() for ils in batch["instrumentationLibrarySpans"] for span in ils["spans"]]
    result = read_trace_file(write_lines(tmp_path, lines))
    assert result.format == FORMAT_OTLP_JSONL
    assert result.warnings == []
    assert len(result.spans) == 86
    # A bare span line has no resource or scope; the rest is identical.
    for got, want in zip(result.spans, expected, strict=True):
        assert (got.span_id, got.parent_span_id, got.name, got.attributes, got.kind, got.status_code) == (
            want.span_id,
            want.parent_span_id,
            want.name,
            want.attributes,
            want.kind,
            want.status_code,
        )
        assert got.resource == {} and got.scope_name is None


def test_jsonl_one_request_per_line(tmp_path: Path, expected: list[Span]) -> None:
    lines = [{"resourceSpans": [rs]} for rs in as_scope_spans(tempo_batches())]
    assert len(lines) == 3
    result = read_trace_file(write_lines(tmp_path, lines))
    assert result.format == FORMAT_OTLP_JSONL
    assert result.spans == expected


def test_jsonl_bad_line_is_skipped_with_its_line_number(tmp_path: Path, expected: list[Span]) -> None:
    lines = [json.dumps({"resourceSpans": [rs]}) for rs in as_scope_spans(tempo_batches())]
    lines.insert(1, '{"resourceSpans": [')
    lines.insert(3, '{"what": 1}')
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines))
    result = read_trace_file(path)
    assert result.spans == expected
    assert len(result.warnings) == 2
    assert result.warnings[0].startswith(f"{path}: line 2: line skipped: invalid JSON")
    assert result.warnings[1].startswith(f"{path}: line 4: line skipped: unknown shape")


SPAN: dict[str, Any] = {
    "traceId": "5B8EFFF798038103D269B633813FC60C",
    "spanId": "EEE19B7EC3C1B174",
    "parentSpanId": "",
    "name": "chat gemini",
    "kind": 3,
    "startTimeUnixNano": "1700000000000000000",
    "endTimeUnixNano": "1700000001000000000",
    "status": {"code": "STATUS_CODE_ERROR", "message": "rate limited"},
}


def one_span(**changes: Any) -> Span:
    spans = read_json({"resourceSpans": [{"scopeSpans": [{"spans": [{**SPAN, **changes}]}]}]})
    assert len(spans) == 1
    return spans[0]


def test_ids_upper_case_hex_and_empty_parent_and_string_times_and_status_names() -> None:
    span = one_span()
    assert (span.trace_id, span.span_id, span.parent_span_id) == (
        "5b8efff798038103d269b633813fc60c",
        "eee19b7ec3c1b174",
        None,
    )
    assert (span.start_time_ns, span.end_time_ns) == (1_700_000_000_000_000_000, 1_700_000_001_000_000_000)
    assert (span.kind, span.status_code, span.status_message) == ("CLIENT", "ERROR", "rate limited")


def test_base64_ids() -> None:
    trace = bytes.fromhex("5b8efff798038103d269b633813fc60c")
    span = one_span(
        traceId=base64.b64encode(trace).decode(),
        spanId=base64.b64encode(bytes.fromhex("eee19b7ec3c1b174")).decode(),
        parentSpanId=base64.urlsafe_b64encode(bytes.fromhex("fffffffffffffffe")).decode().rstrip("="),
    )
    assert (span.trace_id, span.span_id, span.parent_span_id) == (
        "5b8efff798038103d269b633813fc60c",
        "eee19b7ec3c1b174",
        "fffffffffffffffe",
    )


@pytest.mark.parametrize(
    ("kind", "status", "want"),
    [
        ("SPAN_KIND_SERVER", {"code": 1}, ("SERVER", "OK")),
        ("SPAN_KIND_INTERNAL", {"code": 0}, ("INTERNAL", "UNSET")),
        (4, {"code": 2}, ("PRODUCER", "ERROR")),
        (5, {"code": "OK"}, ("CONSUMER", "OK")),
        (0, {}, (None, "UNSET")),
        ("SPAN_KIND_UNSPECIFIED", {"code": "STATUS_CODE_UNSET"}, (None, "UNSET")),
    ],
)
def test_kinds_and_status_codes(kind: Any, status: dict[str, Any], want: tuple[str | None, str]) -> None:
    span = one_span(kind=kind, status=status)
    assert (span.kind, span.status_code) == want


def test_typed_attribute_array_every_value_form() -> None:
    attributes = [
        {"key": "s", "value": {"stringValue": "hello"}},
        {"key": "i_str", "value": {"intValue": "9007199254740993"}},
        {"key": "i_int", "value": {"intValue": 7}},
        {"key": "d", "value": {"doubleValue": 1.5}},
        {"key": "d_int", "value": {"doubleValue": 2}},
        {"key": "b", "value": {"boolValue": False}},
        {"key": "arr", "value": {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "2"}]}}},
        {"key": "kv", "value": {"kvlistValue": {"values": [{"key": "x", "value": {"boolValue": True}}]}}},
        {"key": "bytes", "value": {"bytesValue": "AAE="}},
        {"key": "empty", "value": {}},
    ]
    events = [{"timeUnixNano": "1700000000500000000", "name": "log", "attributes": [attributes[0]]}]
    span = one_span(attributes=attributes, events=events)
    assert span.attributes == {
        "s": "hello",
        "i_str": 9007199254740993,
        "i_int": 7,
        "d": 1.5,
        "d_int": 2.0,
        "b": False,
        "arr": ["a", 2],
        "kv": {"x": True},
        "bytes": "AAE=",
    }
    assert [(e.name, e.timestamp_ns, dict(e.attributes)) for e in span.events] == [
        ("log", 1_700_000_000_500_000_000, {"s": "hello"})
    ]


def test_flat_and_nested_dict_attributes() -> None:
    flat = one_span(attributes={"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 3})
    assert flat.attributes == {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 3}
    nested = one_span(attributes={"gen_ai": {"operation": {"name": "chat"}, "usage": {"input_tokens": 3}}})
    assert nested.attributes == flat.attributes


def test_resource_and_scope_on_a_jsonl_span_line(tmp_path: Path) -> None:
    line = {**SPAN, "resource": {"attributes": {"service.name": "a"}}, "scope": {"name": "s", "version": "1"}}
    result = read_trace_file(write_lines(tmp_path, [line, {**line, "spanId": "eee19b7ec3c1b175"}]))
    assert result.format == FORMAT_OTLP_JSONL
    assert [(s.resource, s.scope_name, s.scope_version) for s in result.spans] == [
        ({"service.name": "a"}, "s", "1")
    ] * 2


def test_single_otlp_span_object_and_remote_parent_flags() -> None:
    spans = read_json({**SPAN, "parentSpanId": "00f067aa0ba902b7", "flags": 0x301})
    assert spans[0].parent_span_id == "00f067aa0ba902b7" and spans[0].parent_is_remote is True
    assert read_json({**SPAN, "parentSpanId": "00f067aa0ba902b7", "flags": 0x101})[0].parent_is_remote is False


def test_format_is_otlp_json() -> None:
    result = read_trace_bytes(json.dumps({"resourceSpans": []}).encode(), source="empty-request.json")
    assert result.format == FORMAT_OTLP_JSON
    assert result.spans == []
    assert result.warnings == ["empty-request.json: (file): no spans"]


def test_utf8_byte_order_mark_is_accepted() -> None:
    result = read_trace_bytes(
        b"\xef\xbb\xbf" + json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [SPAN]}]}]}).encode(),
        source="bom.json",
    )
    assert [s.span_id for s in result.spans] == ["eee19b7ec3c1b174"]
