"""The fast JSON parser gives exactly ``json.loads``'s values and errors, including where pydantic-core refuses."""

from __future__ import annotations

import json

import pytest

from otel_eval.traces import _json as fast_json

DOCUMENTS = [
    '{"a": 1, "a": 2}',  # duplicate keys: the last wins
    "12345678901234567890123456789",
    "[1e400, -0.0, 5e-324, 0.1, NaN, -Infinity]",
    '"\\ud83d\\ude00 \\u00e9"',
    '"\\ud800"',  # an escaped lone surrogate: pydantic-core refuses, json accepts
    "[" * 300 + "]" * 300,  # deeper than pydantic-core's limit
    '"\ud800"',  # a str holding a lone surrogate
    '{"k": [true, false, null, "x"]}',
]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_same_values_as_json(document: str) -> None:
    assert repr(fast_json.loads(document)) == repr(json.loads(document))


def test_utf16_bytes_fall_back_to_json() -> None:
    data = '{"a": "é"}'.encode("utf-16")
    assert fast_json.loads(data) == {"a": "é"}


@pytest.mark.parametrize("document", ["[1,2,]", "{'a': 1}", "[1] x", "tru", '"\t"', "[01]", ""])
def test_same_errors_as_json(document: str) -> None:
    with pytest.raises(json.JSONDecodeError) as ours:
        fast_json.loads(document)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(document)
    assert (ours.value.msg, ours.value.pos) == (theirs.value.msg, theirs.value.pos)
