"""Live SDK spans, OTLP protobuf and proto-JSON of the same spans all read into the same ``Span`` objects."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from google.protobuf.json_format import MessageToDict, MessageToJson
from opentelemetry import trace as trace_api
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList
from opentelemetry.proto.resource.v1.resource_pb2 import Resource as ProtoResource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Status, TracesData
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, StatusCode, TraceFlags

from otel_eval.traces import (
    FORMAT_OTLP_JSON,
    FORMAT_OTLP_PROTO,
    Span,
    SpanEvent,
    read_trace_bytes,
    spans_from_otlp_proto,
    spans_from_readable,
)

REMOTE_TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
REMOTE_PARENT_ID = 0x00F067AA0BA902B7


@pytest.fixture
def recorded() -> Iterator[list[ReadableSpan]]:
    """Real SDK spans: an agent root continuing a remote parent, an LLM child with an event, an erroring tool."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent", "deployment": "test"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("gcp.vertex.agent", "2.13.0")
    remote = SpanContext(REMOTE_TRACE_ID, REMOTE_PARENT_ID, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    parent_ctx = trace_api.set_span_in_context(NonRecordingSpan(remote))
    with tracer.start_as_current_span("invoke_agent weather", context=parent_ctx, kind=SpanKind.SERVER) as root:
        root.set_attribute("gen_ai.agent.name", "weather")
        with tracer.start_as_current_span("call_llm", kind=SpanKind.CLIENT) as llm:
            llm.set_attributes(
                {
                    "gen_ai.request.model": "gemini-2.5-flash",
                    "gen_ai.usage.input_tokens": 42,
                    "temperature": 0.25,
                    "stream": False,
                    "gen_ai.response.finish_reasons": ("stop", "length"),
                }
            )
            llm.add_event("gen_ai.choice", {"index": 0, "message": '{"role": "assistant"}'})
            llm.set_status(StatusCode.OK)
        with tracer.start_as_current_span("execute_tool get_weather") as tool:
            tool.set_attribute("gcp.vertex.agent.tool_call_args", '{"city": "Paris"}')
            tool.set_status(StatusCode.ERROR, "tool failed")
    yield list(exporter.get_finished_spans())
    provider.shutdown()


def test_spans_from_readable_copies_every_field(recorded: list[ReadableSpan]) -> None:
    spans = {s.name: s for s in spans_from_readable(recorded)}
    root, llm, tool = spans["invoke_agent weather"], spans["call_llm"], spans["execute_tool get_weather"]

    assert root.trace_id == format(REMOTE_TRACE_ID, "032x") == "0af7651916cd43dd8448eb211c80319c"
    assert root.parent_span_id == "00f067aa0ba902b7" and root.parent_is_remote is True
    assert root.kind == "SERVER" and root.attributes == {"gen_ai.agent.name": "weather"}
    assert root.resource["service.name"] == "weather-agent" and root.resource["deployment"] == "test"
    assert (root.scope_name, root.scope_version) == ("gcp.vertex.agent", "2.13.0")

    assert llm.parent_span_id == root.span_id and llm.parent_is_remote is False
    assert llm.span_id == format(next(s for s in recorded if s.name == "call_llm").context.span_id, "016x")
    assert llm.kind == "CLIENT" and llm.status_code == "OK"
    assert llm.attributes["gen_ai.response.finish_reasons"] == ["stop", "length"]
    assert llm.attributes["gen_ai.usage.input_tokens"] == 42
    assert [(e.name, dict(e.attributes)) for e in llm.events] == [
        ("gen_ai.choice", {"index": 0, "message": '{"role": "assistant"}'})
    ]
    assert llm.events[0].timestamp_ns >= llm.start_time_ns

    assert tool.kind == "INTERNAL"
    assert (tool.status_code, tool.status_message) == ("ERROR", "tool failed")
    assert tool.end_time_ns >= tool.start_time_ns > 0
    assert tool.resource is root.resource  # converted once per Resource


def test_spans_from_readable_skips_what_it_cannot_convert(recorded: list[ReadableSpan]) -> None:
    broken = ReadableSpan(name="no context", context=None)
    assert [s.name for s in spans_from_readable([broken, *recorded])] == [s.name for s in recorded]


def test_interleaved_traces_keep_their_own_ids() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("interleaved")
    for _ in range(3):
        with tracer.start_as_current_span("a root"), tracer.start_as_current_span("a child"):
            pass
    finished = list(exporter.get_finished_spans())
    shuffled = finished[::2] + finished[1::2]  # trace and parent ids change from one span to the next
    for sdk, span in zip(shuffled, spans_from_readable(shuffled), strict=True):
        assert span.trace_id == format(sdk.context.trace_id, "032x")
        assert span.span_id == format(sdk.context.span_id, "016x")
        assert span.parent_span_id == (format(sdk.parent.span_id, "016x") if sdk.parent is not None else None)
    provider.shutdown()


def by_id(spans: list[Span]) -> dict[str, Span]:
    return {s.span_id: s for s in spans}


def test_protobuf_bytes_read_like_the_live_spans(recorded: list[ReadableSpan]) -> None:
    expected = by_id(spans_from_readable(recorded))
    request: ExportTraceServiceRequest = encode_spans(recorded)

    for payload in (request.SerializeToString(), TracesData(resource_spans=request.resource_spans).SerializeToString()):
        result = read_trace_bytes(payload, source="kafka otlp_spans/0@7")
        assert result.format == FORMAT_OTLP_PROTO
        assert result.warnings == []
        assert by_id(result.spans) == expected

    assert by_id(spans_from_otlp_proto(request)) == expected


@pytest.mark.parametrize("snake_case", [False, True])
def test_proto_json_reads_like_the_live_spans(recorded: list[ReadableSpan], snake_case: bool) -> None:
    """MessageToJson writes ids as base64 and 64-bit ints as strings; both spellings of the field names are read."""
    request = encode_spans(recorded)
    payload = (
        json.dumps(MessageToDict(request, preserving_proto_field_name=True)) if snake_case else MessageToJson(request)
    )
    assert ("==" in payload) and ("resource_spans" in payload) is snake_case
    result = read_trace_bytes(payload.encode(), source="proto.json")
    assert result.format == FORMAT_OTLP_JSON
    assert result.warnings == []
    assert by_id(result.spans) == by_id(spans_from_readable(recorded))


def _kv(key: str, value: AnyValue) -> KeyValue:
    return KeyValue(key=key, value=value)


def test_generated_traces_data_every_value_type_and_bad_span() -> None:
    trace_id = bytes.fromhex("5b8efff798038103d269b633813fc60c")
    good = ProtoSpan(
        trace_id=trace_id,
        span_id=bytes.fromhex("eee19b7ec3c1b174"),
        parent_span_id=bytes.fromhex("eee19b7ec3c1b173"),
        flags=0x100,
        name="generate_content",
        kind=ProtoSpan.SPAN_KIND_PRODUCER,
        start_time_unix_nano=1_700_000_000_000_000_001,
        end_time_unix_nano=1_700_000_000_500_000_000,
        attributes=[
            _kv("s", AnyValue(string_value="text")),
            _kv("i", AnyValue(int_value=-(2**62))),
            _kv("d", AnyValue(double_value=0.5)),
            _kv("b", AnyValue(bool_value=True)),
            _kv("a", AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=1), AnyValue(string_value="x")]))),
            _kv("m", AnyValue(kvlist_value=KeyValueList(values=[_kv("k", AnyValue(string_value="v"))]))),
            _kv("raw", AnyValue(bytes_value=b"\x00\x01")),
            _kv("empty", AnyValue()),
        ],
        events=[ProtoSpan.Event(name="exception", time_unix_nano=1_700_000_000_100_000_000, attributes=[])],
        status=Status(code=Status.STATUS_CODE_ERROR, message="boom"),
    )
    bad = ProtoSpan(trace_id=trace_id, span_id=b"\x01\x02", name="short id", start_time_unix_nano=1)
    data = TracesData(
        resource_spans=[
            ResourceSpans(
                resource=ProtoResource(attributes=[_kv("service.name", AnyValue(string_value="svc"))]),
                scope_spans=[ScopeSpans(scope=InstrumentationScope(name="my.scope"), spans=[bad, good])],
            )
        ]
    )

    result = read_trace_bytes(data.SerializeToString(), source="gen.pb")

    assert result.format == FORMAT_OTLP_PROTO
    assert len(result.warnings) == 1
    assert "gen.pb" in result.warnings[0] and "spans[0]" in result.warnings[0] and "span_id" in result.warnings[0]
    (span,) = result.spans
    assert span == Span(
        trace_id="5b8efff798038103d269b633813fc60c",
        span_id="eee19b7ec3c1b174",
        parent_span_id="eee19b7ec3c1b173",
        name="generate_content",
        start_time_ns=1_700_000_000_000_000_001,
        end_time_ns=1_700_000_000_500_000_000,
        attributes={"s": "text", "i": -(2**62), "d": 0.5, "b": True, "a": [1, "x"], "m": {"k": "v"}, "raw": "AAE="},
        events=(span.events[0],),
        scope_name="my.scope",
        scope_version=None,
        resource={"service.name": "svc"},
        kind="PRODUCER",
        status_code="ERROR",
        status_message="boom",
        parent_is_remote=False,
    )
    assert (span.events[0].name, span.events[0].timestamp_ns) == ("exception", 1_700_000_000_100_000_000)
    # The same message as proto-JSON gives the same span (and the same warning).
    as_json = read_trace_bytes(MessageToJson(data).encode(), source="gen.json")
    assert as_json.spans == result.spans
    assert len(as_json.warnings) == 1 and "spanId" in as_json.warnings[0]


def test_the_sdk_fields_path_converts_as_the_properties_path(recorded: list[ReadableSpan]) -> None:
    """``spans_from_readable`` reads the SDK's own span classes through the fields behind their properties (cheaper);
    any other span class through the properties. Both give the same ``Span`` for the same real SDK spans."""
    from otel_eval.traces import readable

    assert all(readable._reads_fields(type(span)) for span in recorded)  # the fast path is what these take
    by_fields = [readable._convert_fields(span) for span in recorded]
    by_properties = [readable._convert(span) for span in recorded]
    assert by_fields == by_properties
    assert by_fields == spans_from_readable(recorded)
    assert any(span.events for span in by_fields if span) and any(span.parent_is_remote for span in by_fields if span)


def _general_attributes(key_values: object) -> dict[str, object]:
    """The general rule the lean reader shortcuts: each value read by its oneof member (``WhichOneof``)."""
    from otel_eval.traces.otlp_proto import value_from_proto

    result: dict[str, object] = {}
    for key_value in key_values:  # type: ignore[attr-defined]
        if key_value.value.WhichOneof("value") is not None:
            result[key_value.key] = value_from_proto(key_value.value)
    return result


def test_lean_proto_reading_equals_the_general_rule() -> None:
    """Attributes are read by their string first (a non-empty string is the oneof's member) and repeated fields as
    one list: the same spans and warnings as reading every value by its oneof member, empty strings, string indexes,
    empty values and broken ids included, from the message and from a plain list of its ResourceSpans alike."""
    from otel_eval.traces._normalize import Problems
    from otel_eval.traces.otlp_proto import spans_from_otlp_proto

    trace_id = bytes.fromhex("5b8efff798038103d269b633813fc60c")
    attributes = [
        _kv("empty string", AnyValue(string_value="")),
        _kv("index", AnyValue(string_value_strindex=7)),
        _kv("nothing", AnyValue()),
        _kv("s", AnyValue(string_value="x")),
        _kv("s", AnyValue(int_value=3)),  # a key again: the later value
        _kv("a", AnyValue(array_value=ArrayValue(values=[AnyValue(), AnyValue(string_value="")]))),
        KeyValue(key="no value"),
    ]
    spans = [
        ProtoSpan(trace_id=trace_id, span_id=b"\x01" * 8, name="ok", attributes=attributes, start_time_unix_nano=5),
        ProtoSpan(trace_id=b"\x00" * 16, span_id=b"\x01" * 8, name="zero trace"),
        ProtoSpan(trace_id=trace_id, span_id=b"\x00" * 8, name="zero span"),
        ProtoSpan(trace_id=trace_id[:3], span_id=b"\x01" * 8, name="short trace"),
        ProtoSpan(trace_id=trace_id, span_id=b"\x02" * 8, parent_span_id=b"\x01" * 3, name="short parent"),
        ProtoSpan(
            trace_id=trace_id,
            span_id=b"\x03" * 8,
            parent_span_id=b"\x00" * 8,
            name="zero parent, events",
            flags=0x300,
            events=[ProtoSpan.Event(name="e", time_unix_nano=9, attributes=attributes)],
            status=Status(code=Status.STATUS_CODE_OK),
        ),
    ]
    data = TracesData(
        resource_spans=[
            ResourceSpans(
                resource=ProtoResource(attributes=attributes),
                scope_spans=[ScopeSpans(scope=InstrumentationScope(name="s", version="1"), spans=spans), ScopeSpans()],
            ),
            ResourceSpans(),
        ]
    )
    parsed = TracesData.FromString(data.SerializeToString())
    lean = Problems("x")
    read = spans_from_otlp_proto(parsed, problems=lean)
    expected = [
        Span(
            trace_id=s.trace_id.hex(),
            span_id=s.span_id.hex(),
            parent_span_id=s.parent_span_id.hex() if any(s.parent_span_id) else None,
            name=s.name,
            start_time_ns=s.start_time_unix_nano,
            end_time_ns=s.end_time_unix_nano or s.start_time_unix_nano,
            attributes=_general_attributes(s.attributes),
            events=tuple(
                SpanEvent(name=e.name, timestamp_ns=e.time_unix_nano, attributes=_general_attributes(e.attributes))
                for e in s.events
            ),
            scope_name="s",
            scope_version="1",
            resource=_general_attributes(parsed.resource_spans[0].resource.attributes),
            kind=None,
            status_code="OK" if s.status.code == Status.STATUS_CODE_OK else "UNSET",
            status_message=None,
            parent_is_remote=False,
        )
        for s in (parsed.resource_spans[0].scope_spans[0].spans[0], parsed.resource_spans[0].scope_spans[0].spans[5])
    ]
    assert read == expected
    assert read[0].attributes == {"empty string": "", "index": 7, "s": 3, "a": [None, ""]}
    assert [w.split(": ", 2)[1] for w in lean.warnings] == [
        f"span resource_spans[0].scope_spans[0].spans[{i}]" for i in (1, 2, 3, 4)
    ]
    assert "all-zero id" in lean.warnings[0] and "all-zero id" in lean.warnings[1]
    assert (
        "expected 16 bytes, got 3" in lean.warnings[2]
        and "'parent_span_id': expected 8 bytes, got 3" in lean.warnings[3]
    )
    from_list = Problems("x")
    assert spans_from_otlp_proto(_ResourceSpansList(list(parsed.resource_spans)), problems=from_list) == read
    assert from_list.warnings == lean.warnings


class _ResourceSpansList:
    def __init__(self, resource_spans: list[ResourceSpans]) -> None:
        self.resource_spans = resource_spans


def test_a_resource_read_again_by_its_bytes_equals_reading_it() -> None:
    """The resource attributes are kept by the resource's bytes: the same resource in another message gives the same
    attributes, another resource (other values, or the same in another order) its own."""
    from otel_eval.traces.otlp_proto import spans_from_otlp_proto

    def message(*attributes: KeyValue) -> TracesData:
        span = ProtoSpan(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="s")
        scope_spans = [ScopeSpans(spans=[span])]
        return TracesData(
            resource_spans=[ResourceSpans(resource=ProtoResource(attributes=attributes), scope_spans=scope_spans)]
        )

    a, b = _kv("service.name", AnyValue(string_value="a")), _kv("n", AnyValue(int_value=1))
    first = spans_from_otlp_proto(TracesData.FromString(message(a, b).SerializeToString()))[0].resource
    again = spans_from_otlp_proto(TracesData.FromString(message(a, b).SerializeToString()))[0].resource
    other = spans_from_otlp_proto(message(a, _kv("n", AnyValue(int_value=2))))[0].resource
    reordered = spans_from_otlp_proto(message(b, a))[0].resource
    assert first == again == {"service.name": "a", "n": 1}
    assert other == {"service.name": "a", "n": 2}
    assert list(reordered) == ["n", "service.name"]
    assert spans_from_otlp_proto(message())[0].resource == {}


def test_kinds_and_status_codes_read_by_their_ints_equal_the_general_rule() -> None:
    """Protobuf gives the span kind and the status code as ints: the tables looked up directly give what
    ``span_kind``/``status_code`` give for every value, unknown ones (from a newer sender) included."""
    from otel_eval.traces._normalize import span_kind, status_code
    from otel_eval.traces.otlp_proto import spans_from_otlp_proto

    trace_id = bytes.fromhex("5b8efff798038103d269b633813fc60c")
    values = range(-1, 9)
    spans = [
        ProtoSpan(trace_id=trace_id, span_id=bytes([1, 0, 0, 0, 0, 0, 0, index + 2]), name="s")
        for index in range(len(values))
    ]
    for span, value in zip(spans, values, strict=True):
        span.kind = value  # type: ignore[assignment]
        span.status.code = value  # type: ignore[assignment]
    message = TracesData.FromString(
        TracesData(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])]).SerializeToString()
    )
    read = spans_from_otlp_proto(message)
    assert [(s.kind, s.status_code) for s in read] == [(span_kind(v), status_code(v)) for v in values]
    assert {s.kind for s in read} == {None, "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"}
    assert {s.status_code for s in read} == {"UNSET", "OK", "ERROR"}
