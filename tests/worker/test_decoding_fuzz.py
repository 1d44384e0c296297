"""Fuzzed records through the worker's decoding (what :func:`otel_eval.worker._decoding.decoding` runs off the loop)
and the rebuild after it: a record gives its request, spans or log records, or an ``InputError`` naming the record
(it is dead-lettered); never another exception, which would fail the worker's batch and re-read it for ever. A
request that decodes also writes back (``to_wire``) and reads again, as the sessions and results topics need."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from otel_eval.errors import InputError
from otel_eval.worker.collector_path import AssembledTrace, parse_otlp_logs, parse_otlp_spans, requests_from_trace
from otel_eval.worker.consumer import parse_request
from tests.transport._requests import request
from tests.worker._collector import agent_spans

WHERE = "topic/0@7"
FUZZ = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

ODD_VALUES = st.sampled_from(
    [
        None,
        True,
        0,
        -1,
        2**64,
        -(2**63) - 1,
        1e308,
        "",
        "x" * 70,
        "\ud800",
        "zz",
        "0" * 32,
        "ab" * 8,
        [],
        {},
        [1],
        {"a": 1},
    ]
)


@cache
def _request_document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(request(1).to_wire())
    return document


@cache
def _otlp_message() -> bytes:
    return bytes(encode_spans(agent_spans(2)).SerializeToString())


def _mutated(value: Any, data: st.DataObject) -> Any:
    """``value`` with one field (at any depth) dropped, duplicated or replaced by an odd value."""
    if isinstance(value, dict) and value and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(value)))
        action = data.draw(st.sampled_from(["drop", "odd", "deeper"]))
        rest = {k: v for k, v in value.items() if k != key}
        if action == "drop":
            return rest
        return rest | {key: data.draw(ODD_VALUES) if action == "odd" else _mutated(value[key], data)}
    if isinstance(value, list) and value and data.draw(st.booleans()):
        index = data.draw(st.integers(0, len(value) - 1))
        action = data.draw(st.sampled_from(["duplicate", "odd", "deeper"]))
        if action == "duplicate":
            return [*value, value[index]]
        changed = data.draw(ODD_VALUES) if action == "odd" else _mutated(value[index], data)
        return [*value[:index], changed, *value[index + 1 :]]
    return data.draw(ODD_VALUES)


def _decoded_request_round_trips(value: bytes) -> None:
    try:
        decoded = parse_request(value, WHERE)
    except InputError as exc:
        assert str(exc).startswith(f"{WHERE}: ")
        return
    assert parse_request(decoded.to_wire(), WHERE).trace_id == decoded.trace_id


@FUZZ
@given(st.data())
def test_a_mutated_request_is_read_or_named(data: st.DataObject) -> None:
    document: Any = _request_document()
    for _ in range(data.draw(st.integers(1, 4))):
        document = _mutated(document, data)
    _decoded_request_round_trips(json.dumps(document).encode())


@FUZZ
@given(st.binary(max_size=200) | st.text(max_size=80).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_arbitrary_bytes_on_the_requests_topic_are_named(value: bytes) -> None:
    _decoded_request_round_trips(value)


@FUZZ
@given(st.data())
def test_a_mutated_collector_message_is_read_or_named_and_rebuilt(data: st.DataObject) -> None:
    message = bytearray(_otlp_message())
    for _ in range(data.draw(st.integers(1, 6))):
        index = data.draw(st.integers(0, len(message) - 1))
        action = data.draw(st.sampled_from(["flip", "drop", "insert"]))
        if action == "flip":
            message[index] ^= data.draw(st.integers(1, 255))
        elif action == "drop":
            del message[index]
        else:
            message[index:index] = data.draw(st.binary(min_size=1, max_size=8))
    for parse in (parse_otlp_spans, parse_otlp_logs):
        try:
            parsed = parse(bytes(message), WHERE)
        except InputError as exc:
            assert str(exc).startswith(f"{WHERE}: ")
            continue
        if parse is parse_otlp_spans:
            for trace_id in {span.trace_id for span in parsed}:
                spans = [span for span in parsed if span.trace_id == trace_id]
                for built in requests_from_trace(AssembledTrace(trace_id, spans=spans)):
                    assert parse_request(built.to_wire(), WHERE).trace_id == trace_id


def test_a_request_with_a_lone_surrogate_writes_back_with_the_replacement_character() -> None:
    document = _request_document() | {"eval_set_id": "set \ud800"}
    document["invocations"] = [document["invocations"][0] | {"agent_name": "weather\udcffagent"}]
    decoded = parse_request(json.dumps(document).encode(), WHERE)  # ASCII JSON: the surrogates as \u escapes
    again = parse_request(decoded.to_wire(), WHERE)
    assert (again.eval_set_id, again.invocations[0].agent_name) == ("set \ufffd", "weather\ufffdagent")
