"""Real recorded trace files (every shipped reader's format, every framework recorded) with fields dropped,
duplicated and retyped, ids of the wrong length, huge numbers and NaN: ``otel-eval run``'s reading and rebuild give
invocations that travel as requests (``to_wire`` reads back as written), or a ``TraceFormatError`` naming the file;
never another exception, never a hang."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_eval.errors import TraceFormatError
from otel_eval.model.messages import EvaluationRequest
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import read_trace_bytes
from otel_eval.worker.consumer import parse_request

DATA = Path(__file__).resolve().parents[1] / "data"
FILES = sorted(
    [
        *(DATA / "traces" / "strands-evals").glob("*.json"),
        *(DATA / "traces" / "agentevals").glob("[hkt]*.json"),
        *(DATA / "frameworks").glob("*/*.otlp.json*"),
    ]
)
ODD_VALUES = st.sampled_from(
    [
        None,
        True,
        0,
        -1,
        2**64,
        -(2**63) - 1,
        10**40,
        1e308,
        float("nan"),
        float("inf"),
        "",
        "zz",
        "0" * 31,
        "0" * 33,
        "ab" * 8,
        "AB" * 16,
        "0" * 16,
        "q83vEjRWeJA=",
        "1e99",
        "x" * 70,
        "\ud800",
        [],
        {},
        [1],
        {"a": {}},
    ]
)


@cache
def _document(path: Path) -> Any:
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.suffix == ".gz" else data)


def _mutated(value: Any, data: st.DataObject) -> Any:
    if isinstance(value, dict) and value and data.draw(st.integers(0, 9)) < 8:
        key = data.draw(st.sampled_from(sorted(value)))
        action = data.draw(st.sampled_from(["drop", "odd", "deeper", "deeper"]))
        rest = {k: v for k, v in value.items() if k != key}
        if action == "drop":
            return rest
        return rest | {key: data.draw(ODD_VALUES) if action == "odd" else _mutated(value[key], data)}
    if isinstance(value, list) and value and data.draw(st.integers(0, 9)) < 8:
        index = data.draw(st.integers(0, len(value) - 1))
        action = data.draw(st.sampled_from(["drop", "duplicate", "odd", "deeper", "deeper"]))
        if action == "drop":
            return value[:index] + value[index + 1 :]
        if action == "duplicate":
            return [*value, value[index]]
        changed = data.draw(ODD_VALUES) if action == "odd" else _mutated(value[index], data)
        return [*value[:index], changed, *value[index + 1 :]]
    return data.draw(ODD_VALUES)


@pytest.mark.timeout(60)
@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_mutated_recorded_file_is_rebuilt_or_named(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(FILES))
    document = _document(path)
    for _ in range(data.draw(st.integers(1, 8))):
        document = _mutated(document, data)
    try:
        read = read_trace_bytes(json.dumps(document).encode(), source=str(path))
    except TraceFormatError as exc:
        assert str(exc).startswith(f"{path}: ")
        return
    assert all(w.startswith(f"{path}: ") for w in read.warnings)
    for trace in rebuild_traces(read.spans):
        for invocation in trace.invocations:
            written = EvaluationRequest(invocations=[invocation]).to_wire()
            assert parse_request(written, str(path)).to_wire() == written


def test_a_readable_id_holding_a_lone_surrogate_is_hashed_like_any_other() -> None:
    """Found by the test above: such a span-dict id stopped the whole file with a UnicodeEncodeError."""
    spans = [{"trace_id": "t-\ud800", "span_id": "s-\ud800", "name": "n", "start_time": 1, "end_time": 2}]
    spans.append(spans[0] | {"span_id": "child", "parent_span_id": "s-\ud800"})
    read = read_trace_bytes(json.dumps(spans).encode(), source="ids.json")
    assert [len(s.span_id) for s in read.spans] == [16, 16]
    assert read.spans[1].parent_span_id == read.spans[0].span_id


def test_a_non_base64_blob_holding_a_lone_surrogate_keeps_its_invocation() -> None:
    """Its content was encoded as strict UTF-8: the GenAI reconstruction failed and the invocation was lost."""
    blob = {"type": "blob", "mime_type": "text/plain", "content": "caf\udce9"}
    messages = [{"role": "user", "parts": [{"type": "text", "content": "read this"}, blob]}]
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.input.messages": json.dumps(messages)}
    span = {"trace_id": "ab" * 16, "span_id": "ab" * 8, "name": "invoke_agent a", "start_time": 1, "end_time": 2}
    read = read_trace_bytes(json.dumps([span | {"attributes": attributes}]).encode(), source="blob.json")
    [trace] = rebuild_traces(read.spans)
    [invocation] = trace.invocations
    assert not trace.warnings
    assert [part.text for part in invocation.invocation.user_content.parts or []] == ["read this"]
