"""Legacy ADK contents of the common shapes are made without the validator: exactly what validating them gives.

Every ``llm_request`` / ``llm_response`` content of every recorded and hostile trace (and hand-made edge shapes) is
made both ways: where the plain path takes the shape, the content equals the validated one, with the same fields set
at every level and the same JSON; every shape it does not take is validated (and fails) as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest

from otel_eval import semconv
from otel_eval.errors import InputError
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct import _adk_contents
from tests.reconstruct.recorded import file_spans

DATA = Path(__file__).resolve().parents[1] / "data"
SHARED = Path("/work/shared/data/traces")
FILES = sorted(
    [
        *(DATA / "traces").glob("*/*.json"),
        *(DATA / "hostile").glob("*.json"),
        *(DATA / "frameworks").glob("*/*.otlp.json.gz"),
        *SHARED.glob("*/*.json"),
    ]
)
FILES = [path for path in FILES if "eval" not in path.name or "evals" in path.parent.name]  # trace files only
EDGE_SHAPES: list[Any] = [
    {},
    {"role": None},
    {"parts": None},
    {"parts": []},
    {"parts": [{}], "role": "model"},
    {"parts": [{"text": ""}]},
    {"parts": [{"text": None, "thought": None}]},
    {"parts": [{"text": "x", "thought": True, "thought_signature": "c2ln"}]},
    {"parts": [{"text": "x", "thoughtSignature": None}]},
    {"parts": [{"function_call": {"name": "f"}}]},
    {"parts": [{"function_call": {"id": None, "args": None, "name": None}}]},
    {"parts": [{"function_call": {"id": "1", "args": {"a": [1, {"b": None}]}, "name": "f"}}]},
    {"parts": [{"function_call": {"args": {}}}, {"function_response": {"id": "1", "name": "f", "response": {}}}]},
    {"parts": [{"function_response": {"response": {"result": None}}}], "role": "user"},
    # Not taken by the plain path: validated as before (converted, or rejected).
    {"parts": [{"functionCall": {"name": "f"}}]},
    {"parts": [{"text": 3}]},
    {"parts": [{"thought": "true"}]},
    {"parts": [{"thought": 1}]},
    {"parts": [{"function_call": {"name": 3}}]},
    {"parts": [{"function_call": {"args": []}}]},
    {"parts": [{"function_call": {"args": {"a": 1}, "will_continue": True}}]},
    {"parts": [{"function_response": {"response": "text"}}]},
    {"parts": [{"inline_data": {"mime_type": "image/png", "data": "AAAA"}}]},
    {"parts": ({"text": "x"},)},
    {"parts": "x"},
    {"role": 1},
    {"role": "user", "other": 1},
    ["not", "a", "content"],
    None,
]


def _recorded_contents() -> Iterator[Any]:
    for path in FILES:
        try:
            spans = file_spans(path)
        except InputError:  # a hostile file that is no trace
            continue
        for span in spans:
            for key in (semconv.ADK_LLM_REQUEST, semconv.ADK_LLM_RESPONSE):
                raw = span.attributes.get(key)
                try:
                    value = json.loads(raw) if isinstance(raw, str) else raw
                except (ValueError, RecursionError):  # hostile attributes: not JSON, or nested too deeply
                    continue
                if not isinstance(value, dict):
                    continue
                if key == semconv.ADK_LLM_RESPONSE:
                    yield value.get("content")
                elif isinstance(value.get("contents"), list):
                    yield from value["contents"]


def _fields_set(value: Any) -> Any:
    """Every model's fields set, at every level."""
    if isinstance(value, pydantic.BaseModel):
        return (type(value).__name__, sorted(value.model_fields_set), [_fields_set(v) for v in value.__dict__.values()])
    if isinstance(value, list):
        return [_fields_set(v) for v in value]
    return None


def _check(raw: Any) -> bool:
    """Whether the plain path took ``raw``; asserts it made what validation makes."""
    plain = _adk_contents._plain_content(raw)
    try:
        validated = genai_types.Content.model_validate(_adk_contents.strip_thought_signatures(raw))
    except pydantic.ValidationError:
        assert plain is None, raw
        return False
    if plain is None:
        return False
    assert plain == validated, raw
    assert list(plain.__dict__) == list(validated.__dict__)
    assert _fields_set(plain) == _fields_set(validated), raw
    assert plain.model_dump_json() == validated.model_dump_json()
    assert plain.model_dump(exclude_unset=True) == validated.model_dump(exclude_unset=True)
    return True


def test_recorded_contents_are_made_as_validating_them_makes_them() -> None:
    taken = checked = 0
    for raw in _recorded_contents():
        checked += 1
        taken += _check(raw)
    assert checked > 200
    assert taken > checked // 2  # the common case takes the plain path


@pytest.mark.parametrize("raw", EDGE_SHAPES, ids=range(len(EDGE_SHAPES)))
def test_edge_shapes_are_made_or_validated_alike(raw: Any) -> None:
    taken = _check(raw)
    assert taken == (EDGE_SHAPES.index(raw) < EDGE_SHAPES.index({"parts": [{"functionCall": {"name": "f"}}]}))


def test_a_content_that_is_not_one_still_fails_validation() -> None:
    with pytest.raises(pydantic.ValidationError):
        _adk_contents.validated_content({"parts": [{"text": 3}]}, {})
    with pytest.raises(pydantic.ValidationError):
        _adk_contents.validated_content({"role": "user", "other": 1}, {})
