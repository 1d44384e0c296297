"""Bad input: each case yields a clear ``TraceFormatError`` or a partial result with warnings, never another
exception; one bad file or span never stops the others."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_eval.errors import InputError, TraceFormatError
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import TraceReadResult, read_trace_bytes, read_trace_file, read_trace_files
from otel_eval.traces.formats import EXPECTED_FORMATS
from tests.traces.conftest import AGENTEVALS, DATA, STRANDS

BAD = DATA / "bad"
TRACE_ID = "5b8efff798038103d269b633813fc60c"


@pytest.mark.parametrize(
    ("file_name", "problem"),
    [
        ("invalid_json.json", "invalid JSON at line 2 column 22"),
        ("truncated_jsonl.jsonl", "invalid JSON at line 2"),
        ("empty.json", "empty trace file"),
        ("whitespace_only.json", "empty trace file"),
        ("binary_garbage.bin", "neither JSON nor OTLP protobuf"),
        ("plain_text.txt", "neither JSON nor OTLP protobuf"),
        ("unknown_shape.json", "unknown trace shape (an object with keys 'spans_please', 'version')"),
        ("scalar.json", "unknown trace shape (a JSON int 42)"),
        ("list_of_numbers.json", "unknown trace shape (a list of int)"),
        ("resource_spans_not_a_list.json", "'resourceSpans': expected a list of ResourceSpans, got dict"),
    ],
)
def test_unreadable_files_name_the_file_the_problem_and_the_expected_formats(file_name: str, problem: str) -> None:
    path = BAD / file_name
    with pytest.raises(TraceFormatError) as caught:
        read_trace_file(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert problem in message
    assert message.endswith(f"expected {EXPECTED_FORMATS}")
    assert isinstance(caught.value, InputError)


def test_an_eval_set_given_as_a_trace_is_named_as_such() -> None:
    with pytest.raises(TraceFormatError, match="looks like an ADK eval set, not a trace"):
        read_trace_file(AGENTEVALS / "eval_set_helm.json")


def test_missing_file_is_a_trace_format_error(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match=r"missing\.json: cannot read trace file"):
        read_trace_file(tmp_path / "missing.json")


def test_otlp_malformed_spans_are_skipped_each_with_its_path_and_field() -> None:
    path = BAD / "otlp_malformed_spans.json"
    result = read_trace_file(path)
    assert [s.name for s in result.spans] == ["span 1", "span 7", "span 8"]
    prefix = f"{path}: span resourceSpans[0].scopeSpans[0].spans"
    assert result.warnings == [
        f"{prefix}[1]: span skipped: field 'spanId': missing",
        f"{prefix}[2]: span skipped: field 'traceId': not a 32-digit hex (or base64) id: "
        "'not-a-hex-trace-id-at-all-zzzzzzz'",
        f"{prefix}[3]: span skipped: field 'startTimeUnixNano': not a time: 'yesterday'",
        f"{prefix}[4]: span skipped: field 'name': expected a string, got 123",
        f"{prefix}[5]: span skipped: field 'spanId': expected a hex id string, got int 12345",
        f"{prefix}[7].attributes[0]: attribute 'bad_int' skipped: intValue 'twelve' is not an integer",
        f"{prefix}[8]: span skipped: field '(span)': expected an object, got str 'not a span'",
        f"{prefix}[9]: span skipped: field 'traceId': all-zero id is invalid",
    ]
    orphan = result.spans[1]
    assert orphan.parent_span_id == "f00dfeedf00dfeed"  # a missing parent is kept, not an error here
    assert result.spans[2].attributes == {"ok": "yes"}


def test_jaeger_malformed_spans_tags_and_traces() -> None:
    path = BAD / "jaeger_malformed_spans.json"
    result = read_trace_file(path)
    assert [s.name for s in result.spans] == ["root", "child of missing"]
    assert result.spans[1].parent_span_id == "00000000000000ff"
    assert result.spans[1].attributes == {"ok": True}
    assert result.warnings == [
        f"{path}: span data[0].spans[1]: span skipped: field 'tags': expected a list, got dict",
        f"{path}: span data[0].spans[2]: span skipped: field 'spanID': missing",
        f"{path}: span data[0].spans[3]: span skipped: field 'startTime': not a time: 'noon'",
        f"{path}: span data[0].spans[4] tags[0]: tag 'n' skipped: bad int64 value 'x'",
        f"{path}: data[1]: trace skipped: expected an object with a 'spans' list",
    ]


def test_span_dict_malformed_spans_and_events() -> None:
    path = BAD / "span_dicts_malformed.json"
    result = read_trace_file(path)
    assert [s.name for s in result.spans] == ["good", "its own parent (a cycle)"]
    assert [e.name for e in result.spans[1].events] == ["ok"]
    assert result.warnings == [
        f"{path}: span [1]: span skipped: field 'attributes': expected an object, got list",
        f"{path}: span [2]: span skipped: field 'name': expected a string, got 7",
        f"{path}: span [3]: span skipped: field 'span_id': missing",
        f"{path}: span [4]: span skipped: field 'start_time': expected a number, got list [1]",
        f"{path}: span [5] event [1]: event skipped: field 'timestamp': missing",
    ]


def test_parent_cycles_are_not_an_error_when_reading() -> None:
    result = read_trace_file(BAD / "parent_cycle.json")
    assert result.warnings == []
    assert {(s.span_id, s.parent_span_id) for s in result.spans} == {
        ("0000000000000001", "0000000000000002"),
        ("0000000000000002", "0000000000000001"),
    }


def test_several_files_one_bad_the_others_still_read(tmp_path: Path) -> None:
    paths = [
        AGENTEVALS / "helm.json",
        BAD / "binary_garbage.bin",
        tmp_path / "gone.json",
        STRANDS / "adk_live_spans.json",
    ]
    results = read_trace_files(paths)
    assert [p for p, _ in results] == paths
    outcomes = [r for _, r in results]
    assert isinstance(outcomes[0], TraceReadResult) and len(outcomes[0].spans) == 96
    assert isinstance(outcomes[1], TraceFormatError) and "binary_garbage.bin" in str(outcomes[1])
    assert isinstance(outcomes[2], TraceFormatError) and "gone.json" in str(outcomes[2])
    assert isinstance(outcomes[3], TraceReadResult) and len(outcomes[3].spans) == 7


TEN_MB = 10 * 1024 * 1024


def huge_otlp() -> dict[str, Any]:
    big = "x" * TEN_MB
    spans = [
        {
            "traceId": TRACE_ID,
            "spanId": "00000000000000a1",
            "name": "call_llm",
            "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000000000000001",
            "attributes": [{"key": "gcp.vertex.agent.llm_request", "value": {"stringValue": big}}],
        },
        {"traceId": TRACE_ID, "spanId": big, "name": "huge id", "startTimeUnixNano": "1"},
        {
            "traceId": TRACE_ID,
            "spanId": "00000000000000a3",
            "name": "huge bad int",
            "startTimeUnixNano": "1",
            "attributes": [{"key": "n", "value": {"intValue": "9" * TEN_MB + "x"}}],
        },
    ]
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def test_ten_megabyte_values_are_read_and_never_copied_into_warnings() -> None:
    result = read_trace_bytes(json.dumps(huge_otlp()).encode(), source="huge.json")
    assert [s.name for s in result.spans] == ["call_llm", "huge bad int"]
    assert len(result.spans[0].attributes["gcp.vertex.agent.llm_request"]) == TEN_MB
    assert result.spans[1].attributes == {}
    assert len(result.warnings) == 2
    assert all(len(w) < 300 for w in result.warnings)
    assert "field 'spanId'" in result.warnings[0] and "'n' skipped" in result.warnings[1]


def test_ten_megabyte_attribute_in_jaeger_and_span_dicts() -> None:
    big = "y" * TEN_MB
    jaeger = {
        "data": [
            {
                "traceID": TRACE_ID,
                "spans": [
                    {
                        "traceID": TRACE_ID,
                        "spanID": "00000000000000b1",
                        "operationName": "op",
                        "startTime": 1,
                        "duration": 1,
                        "tags": [{"key": "big", "type": "string", "value": big}],
                    }
                ],
            }
        ]
    }
    assert len(read_trace_bytes(json.dumps(jaeger).encode(), source="j").spans[0].attributes["big"]) == TEN_MB
    dicts = [{"trace_id": TRACE_ID, "span_id": big, "name": "n", "start_time": 1, "end_time": 2}]
    result = read_trace_bytes(json.dumps(dicts).encode(), source="d")
    assert len(result.spans) == 1  # a readable (if huge) fixture id is hashed like other non-hex ids
    assert len(result.spans[0].span_id) == 16 and all(len(w) < 300 for w in result.warnings)


def test_json_nested_too_deeply_is_a_format_error() -> None:
    with pytest.raises(TraceFormatError, match=r"deep\.json: JSON nested too deeply"):
        read_trace_bytes(b"[" * 200_000 + b"]" * 200_000, source="deep.json")


def test_invalid_utf8_inside_json_is_a_format_error() -> None:
    with pytest.raises(TraceFormatError, match="not UTF-8"):
        read_trace_bytes(b'{"resourceSpans": [], "x": "\xff\xfe"}', source="latin.json")


def test_empty_list_is_a_file_without_spans() -> None:
    result = read_trace_bytes(b"[]", source="none.json")
    assert result.spans == [] and result.warnings == ["none.json: (file): no spans"]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=40),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=20), children, max_size=4),
    max_leaves=30,
)
SPAN_KEYS = st.sampled_from(
    [
        "traceId",
        "spanId",
        "parentSpanId",
        "name",
        "kind",
        "startTimeUnixNano",
        "endTimeUnixNano",
        "attributes",
        "events",
        "status",
        "flags",
        "trace_id",
        "span_id",
        "start_time",
        "scope",
        "resource",
    ]
)


def read_never_raises_anything_else(data: bytes) -> None:
    try:
        result = read_trace_bytes(data, source="fuzz")
    except TraceFormatError as exc:
        assert str(exc).startswith("fuzz: ")
    else:
        assert all(w.startswith("fuzz: ") for w in result.warnings)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.sampled_from(["resourceSpans", "batches", "data", "list", "jsonl", "trace"]),
    spans=st.lists(st.dictionaries(SPAN_KEYS, JSON_VALUES, max_size=10), max_size=4),
)
def test_fuzzed_spans_in_every_shape(shape: str, spans: list[dict[str, Any]]) -> None:
    container: Any
    if shape in ("resourceSpans", "trace"):
        container = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
        container = {"trace": container} if shape == "trace" else container
    elif shape == "batches":
        container = {"batches": [{"instrumentationLibrarySpans": [{"spans": spans}]}]}
    elif shape == "data":
        container = {"data": [{"traceID": TRACE_ID, "spans": spans, "processes": {"p1": spans[0] if spans else {}}}]}
    else:
        container = [{**s, "trace_id": s.get("trace_id", TRACE_ID), "span_id": s.get("span_id", "ab")} for s in spans]
    payload = "\n".join(json.dumps(s) for s in spans) if shape == "jsonl" and len(spans) > 1 else json.dumps(container)
    read_never_raises_anything_else(payload.encode())


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300) | JSON_VALUES.map(lambda v: json.dumps(v).encode()))
def test_fuzzed_bytes_and_json(data: bytes) -> None:
    read_never_raises_anything_else(data)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_fuzzed_truncations_of_a_real_file(data: st.DataObject) -> None:
    raw = (STRANDS / "adk_live_spans.json").read_bytes()
    cut = data.draw(st.integers(min_value=0, max_value=len(raw)))
    flip = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    mutated = bytearray(raw[:cut] + raw[cut + 1 :])
    if flip < len(mutated):
        mutated[flip] ^= data.draw(st.integers(min_value=1, max_value=255))
    read_never_raises_anything_else(bytes(mutated))


def test_nesting_around_the_recursion_limit_gives_spans_or_a_format_error() -> None:
    """Nested attributes at every depth around the recursion limit (json.loads parses them, then they are flattened)
    give spans or a TraceFormatError, never a RecursionError."""
    head = '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"' + TRACE_ID + '","spanId":"eee19b7ec3c1b174",'
    head += '"name":"n","startTimeUnixNano":"1","attributes":'
    outcomes = set()
    for depth in range(700, 1000, 2):
        payload = (head + '{"k":' * depth + "1" + "}" * depth + "}]}]}]}").encode()
        try:
            outcomes.add(type(read_trace_bytes(payload, source="nested.json")).__name__)
        except TraceFormatError as exc:
            assert "nested.json: JSON nested too deeply" in str(exc)
            outcomes.add("TraceFormatError")
    assert outcomes == {"TraceReadResult", "TraceFormatError"}  # both sides of the limit, nothing else


def test_an_integer_too_long_to_read_is_invalid_json_at_its_place() -> None:
    """``json.loads`` refuses an integer of more than 4300 digits with a plain ValueError, which escaped the reader
    (a file), skipped nothing (a JSONL line) or failed the convention (a JSON-valued attribute)."""
    digits = "9" * 5000
    span = {"trace_id": TRACE_ID, "span_id": "00000000000000a1", "name": "invoke_agent", "start_time": 1, "end_time": 2}
    whole = json.dumps([span]).replace('"start_time": 1', f'"start_time": {digits}')
    with pytest.raises(TraceFormatError, match=r"^big\.json: invalid JSON at line 1 column \d+ \(an integer of more "):
        read_trace_bytes(whole.encode(), source="big.json")

    lines = [json.dumps(span | {"span_id": "00000000000000a2"}), whole, json.dumps(span)]
    result = read_trace_bytes("\n".join(lines).encode(), source="big.jsonl")
    assert [s.span_id for s in result.spans] == ["00000000000000a2", "00000000000000a1"]
    assert result.warnings == ["big.jsonl: line 2: line skipped: invalid JSON (an integer of more than 4300 digits)"]

    messages = '[{"role": "user", "parts": [{"type": "text", "content": "hi", "n": ' + digits + "}]}]"
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.input.messages": messages}
    read = read_trace_bytes(json.dumps([span | {"attributes": attributes}]).encode(), source="attr.json")
    [trace] = rebuild_traces(read.spans)
    [invocation] = trace.invocations
    assert any("not valid JSON" in w and "4300 digits" in w for w in invocation.warnings), invocation.warnings
