"""``BaseModel.trusted`` (built without validating, for a rebuild's own parts and contents) makes the object that
validating the same values makes: equal, same fields set, same dumps and repr, and what google-genai makes of them."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from google.genai import types as g

from otel_eval.model import genai as o

CASES: list[tuple[type[o.BaseModel], dict[str, Any]]] = [
    (o.Part, {"text": "hello"}),
    (o.Part, {"text": "thinking", "thought": True}),
    (o.Part, {"text": "t", "thought": None}),  # the None keyword stays unset, as Part(text=..., thought=None) leaves it
    (o.Part, {"function_call": o.FunctionCall(id="c1", name="f", args={"a": 1})}),
    (o.Part, {"function_response": o.FunctionResponse(name="f", response={"result": "r"})}),
    (o.Content, {"role": "user", "parts": [o.Part(text="hi")]}),
    (o.Content, {"role": None, "parts": []}),  # BaseModel.__init__ keeps an explicit None in the fields set
    (o.Content, {"parts": [o.Part.trusted(text="a"), o.Part.trusted(text="b", thought=True)]}),
    (o.FunctionCall, {"id": "c1", "name": "f", "args": {"a": [1, 2]}}),
]


@pytest.mark.parametrize(("model", "values"), CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_trusted_is_the_validated_object(model: type[o.BaseModel], values: dict[str, Any]) -> None:
    trusted, validated = model.trusted(**values), model(**values)
    assert trusted == validated
    assert trusted.model_fields_set == validated.model_fields_set
    assert repr(trusted) == repr(validated)
    assert trusted.model_dump(exclude_unset=True) == validated.model_dump(exclude_unset=True)
    assert trusted.model_dump_json() == validated.model_dump_json()
    assert pickle.loads(pickle.dumps(trusted)) == copy.deepcopy(trusted) == trusted.model_copy() == validated
    genai = getattr(g, model.__name__).model_validate(trusted.model_dump())
    assert trusted.model_dump(mode="json") == genai.model_dump(mode="json")


def test_trusted_refuses_a_model_with_other_defaults() -> None:
    with pytest.raises(TypeError, match="validate it"):
        o.GenerateContentResponseUsageMetadata.trusted(prompt_token_count=3)
