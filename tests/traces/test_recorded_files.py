"""Every recorded trace file reads into the expected spans: counts, ids, names, parents, attributes, scope."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from otel_eval.traces import (
    FORMAT_JAEGER_JSON,
    FORMAT_OTLP_JSON,
    FORMAT_SPAN_DICTS,
    Span,
    read_trace_file,
)
from tests.traces.conftest import AGENTEVALS, EXAMPLES, STRANDS


def by_name(spans: list[Span], name: str) -> Span:
    matches = [s for s in spans if s.name == name]
    assert len(matches) == 1, f"{name}: {len(matches)} spans"
    return matches[0]


@pytest.mark.parametrize(
    ("file_name", "count", "fmt", "orphans"),
    [
        ("helm.json", 96, FORMAT_JAEGER_JSON, 0),
        ("helm_2.json", 72, FORMAT_JAEGER_JSON, 0),
        ("helm_3.json", 125, FORMAT_JAEGER_JSON, 0),
        ("k8s.json", 73, FORMAT_JAEGER_JSON, 0),
        # The Tempo export lacks the parents of 9 spans; a missing parent is not an error when reading.
        ("tempo_export_with_batches.json", 86, FORMAT_OTLP_JSON, 9),
    ],
)
def test_agentevals_files_read_every_span(file_name: str, count: int, fmt: str, orphans: int) -> None:
    result = read_trace_file(AGENTEVALS / file_name)

    assert result.format == fmt
    assert len(result.spans) == count
    assert result.warnings == []
    assert len({s.trace_id for s in result.spans}) == 1
    ids = {s.span_id for s in result.spans}
    assert len(ids) == count
    roots = [s for s in result.spans if s.parent_span_id is None]
    assert len(roots) == 1
    assert sum(1 for s in result.spans if s is not roots[0] and s.parent_span_id not in ids) == orphans
    for span in result.spans:
        assert len(span.trace_id) == 32 and int(span.trace_id, 16)
        assert len(span.span_id) == 16 and span.span_id == span.span_id.lower()
        assert span.end_time_ns >= span.start_time_ns > 1_700_000_000 * 10**9
        assert span.kind in {"INTERNAL", "SERVER", "CLIENT"}


def test_jaeger_helm_tags_become_attributes_kind_status_scope_and_resource() -> None:
    spans = read_trace_file(AGENTEVALS / "helm.json").spans
    root = next(s for s in spans if s.parent_span_id is None)
    assert (root.trace_id, root.span_id, root.name, root.kind) == (
        "3e289017fe03ffd7c4145316d2eb3d0d",
        "e3daa973379bbe3b",
        "POST /",
        "SERVER",
    )

    tool = by_name(spans, "execute_tool helm_list_releases")
    assert tool.span_id == "75cdce51ad52a7c8"
    assert tool.attributes["gen_ai.tool.name"] == "helm_list_releases"
    assert tool.attributes["gcp.vertex.agent.tool_call_args"] == "{}"
    assert tool.json_attr("gcp.vertex.agent.tool_response")["isError"] is False
    assert (tool.scope_name, tool.scope_version) == ("gcp.vertex.agent", "1.22.1")
    assert tool.resource == {"service.name": "helm_agent", "service.namespace": "kagent"}
    assert (tool.kind, tool.status_code) == ("INTERNAL", "UNSET")
    # The Jaeger-synthesised tags are fields now, as in OTLP.
    assert not {"span.kind", "otel.scope.name", "otel.scope.version", "otel.status_code"} & set(tool.attributes)

    agent = by_name(spans, "invoke_agent helm_agent")
    assert agent.span_id == "581f1448d659341f"
    assert {s.name for s in spans if s.parent_span_id == agent.span_id} >= {"call_llm"}
    assert by_name(spans, "invocation").span_id == agent.parent_span_id
    assert agent.start_time_ns == 1771237534578946000
    assert agent.end_time_ns == 1771237538742795000
    assert Counter(s.status_code for s in spans) == {"UNSET": 51, "OK": 44, "ERROR": 1}
    first_post = next(s for s in spans if s.span_id == "1f9762ca1e03e2d2")
    assert first_post.attributes["http.status_code"] == 201 and first_post.kind == "CLIENT"


def test_jaeger_logs_become_events_named_by_their_event_field() -> None:
    spans = read_trace_file(AGENTEVALS / "helm.json").spans
    with_events = [s for s in spans if s.events]
    assert len(with_events) == 7
    event = with_events[0].events[0]
    assert event.name == "exception"
    assert event.timestamp_ns == 1771237536588288000
    assert set(event.attributes) == {"exception.escaped", "exception.message", "exception.stacktrace", "exception.type"}
    assert "event" not in event.attributes


def test_jaeger_helm_3_tool_arguments() -> None:
    spans = read_trace_file(AGENTEVALS / "helm_3.json").spans
    tool = by_name(spans, "execute_tool helm_list_releases")
    assert tool.json_attr("gcp.vertex.agent.tool_call_args") == {"all_namespaces": "true", "output": "json"}


def test_tempo_batches_resource_scope_kind_and_status() -> None:
    spans = read_trace_file(AGENTEVALS / "tempo_export_with_batches.json").spans
    assert {s.trace_id for s in spans} == {"dd547580319ab0312cee07f1def50dad"}
    first = next(s for s in spans if s.span_id == "21beb323d66610f7")
    assert first.parent_span_id == "cbd1b46f7435c01a"
    assert first.name == "GET /api/tasks/60494115-84c3-4c3c-a5a4-6cdd1e033e8d"
    assert first.kind == "SERVER"
    assert first.start_time_ns == 1777555053780274700
    assert first.attributes["server.port"] == 8083
    assert first.attributes["http.response.status_code"] == 404
    assert first.scope_name == "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
    assert first.scope_version == "0.68.0"
    assert first.resource["service.namespace"] == "kagent"
    assert first.resource["telemetry.sdk.language"] == "go"
    assert Counter(s.status_code for s in spans) == {"UNSET": 56, "OK": 30}
    assert Counter(s.kind for s in spans) == {"SERVER": 54, "CLIENT": 17, "INTERNAL": 15}
    tool = by_name(spans, "execute_tool helm_list_releases")
    assert tool.attributes["gcp.vertex.agent.tool_call_args"] == "{}"
    assert sum(len(s.events) for s in spans) == 5


STRANDS_COUNTS = {
    "adk_live_spans.json": 7,
    "autogen_live_spans.json": 3,
    "claude_adot_spans.json": 8,
    "claude_live_spans.json": 10,
    "openai_agents_genai_adot_spans.json": 17,
    "openai_agents_genai_live_spans.json": 17,
    "openai_agents_openinference_adot_spans.json": 16,
    "openai_agents_openinference_live_spans.json": 19,
    "openinference_adot_spans.json": 8,
    "openinference_live_spans.json": 6,
    "otel_genai_convention_spans.json": 5,
    "pydantic_ai_live_spans.json": 4,
    "smolagents_live_spans.json": 7,
}


def test_every_strands_file_is_listed() -> None:
    assert {p.name for p in STRANDS.glob("*.json")} == set(STRANDS_COUNTS)


@pytest.mark.parametrize(("file_name", "count"), sorted(STRANDS_COUNTS.items()))
def test_strands_span_dict_files(file_name: str, count: int) -> None:
    result = read_trace_file(STRANDS / file_name)
    assert result.format == FORMAT_SPAN_DICTS
    assert len(result.spans) == count
    ids = {s.span_id for s in result.spans}
    assert len(ids) == count
    assert all(s.parent_span_id is None or len(s.parent_span_id) == 16 for s in result.spans)
    assert all(s.status_code in {"UNSET", "OK", "ERROR"} for s in result.spans)


def test_adk_live_spans_tree_and_attributes() -> None:
    spans = read_trace_file(STRANDS / "adk_live_spans.json").spans
    invocation = by_name(spans, "invocation")
    assert (invocation.span_id, invocation.parent_span_id) == ("6fd93d29bfd4a522", None)
    agent = by_name(spans, "invoke_agent math_agent")
    assert agent.parent_span_id == invocation.span_id
    tool = by_name(spans, "execute_tool calculator")
    assert tool.trace_id == "97847cb33dff13e46483685930f4e236"
    assert tool.json_attr("gcp.vertex.agent.tool_call_args") == {"expression": "15 * 37"}
    assert tool.json_attr("gcp.vertex.agent.tool_response") == {"result": "555"}
    assert (tool.scope_name, tool.scope_version) == ("gcp.vertex.agent", "2.5.0")
    assert tool.start_time_ns == 1784995767655639000
    assert [s.name for s in spans if s.parent_span_id == agent.span_id] == ["call_llm", "call_llm"]


def test_adot_wrapper_statuses_and_events() -> None:
    spans = read_trace_file(STRANDS / "openai_agents_genai_adot_spans.json").spans
    assert Counter(s.status_code for s in spans)["ERROR"] >= 1
    genai = read_trace_file(STRANDS / "otel_genai_convention_spans.json").spans
    details = [e for s in genai for e in s.events if e.name == "gen_ai.client.inference.operation.details"]
    assert details
    messages = details[0].attributes["gen_ai.input.messages"]
    assert messages[0]["parts"][0]["content"] == "What's the weather in Paris and London?"
    assert details[0].timestamp_ns == 1700000001500000000


def test_readable_non_hex_fixture_ids_keep_their_tree() -> None:
    result = read_trace_file(STRANDS / "openinference_live_spans.json")
    assert any("not hex" in w and "openinference_live_spans.json" in w for w in result.warnings)
    spans = result.spans
    root = next(s for s in spans if s.parent_span_id is None)
    assert root.name == "LangGraph"
    assert sum(1 for s in spans if s.parent_span_id == root.span_id) == 5
    adot = read_trace_file(STRANDS / "openinference_adot_spans.json").spans
    assert len({s.trace_id for s in adot}) == 2
    body = adot[0].events[0].body
    assert body["input"]["messages"][0]["content"] == "What is the weather in Alaska?"


@pytest.mark.parametrize(
    "file_name", ["helm.json", "k8s.json", "adk_live_spans.json", "otel_genai_convention_spans.json"]
)
def test_examples_read(file_name: str) -> None:
    assert read_trace_file(EXAMPLES / file_name).spans


def test_examples_and_test_data_carry_license_and_notice() -> None:
    for folder in (AGENTEVALS, STRANDS, EXAMPLES):
        assert "Apache License" in (folder / "LICENSE").read_text()
        assert "commit" in (folder / "NOTICE").read_text()


def test_path_may_be_str(tmp_path: Path) -> None:
    assert len(read_trace_file(str(AGENTEVALS / "k8s.json")).spans) == 73
