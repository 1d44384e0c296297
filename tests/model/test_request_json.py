"""``validate_request_json`` (the worker's read of a request, without a call into Python per part's field) gives
exactly what ``EvaluationRequest.model_validate_json`` gives: the same classes, values and fields set at every level,
or the same error, for the requests otel-eval writes (real invocations, recorded traces, eval cases, ADK events) and for
hostile JSON (parts generated from google-genai's own annotations: camelCase keys, unknown keys, wrong types, nulls)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otel_eval.model import InvocationEvent, InvocationEvents, genai
from otel_eval.model.loading import load_eval_set
from otel_eval.model.messages import EvaluationRequest
from otel_eval.model.request_json import validate_request_json
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import read_trace_file
from tests.model.test_genai_models import EXAMPLES, _inputs
from tests.transport._requests import request

AGENTEVALS = Path(__file__).resolve().parents[1] / "data" / "traces" / "agentevals"


def _identical(left: Any, right: Any, where: str = "request") -> None:
    """``left`` and ``right`` are the same value: same types, and for models the same fields, fields set and extras,
    recursively."""
    assert type(left) is type(right), where
    if isinstance(left, pydantic.BaseModel):
        assert left.model_fields_set == right.model_fields_set, where
        assert left.__pydantic_extra__ == right.__pydantic_extra__, where
        assert list(left.__dict__) == list(right.__dict__), where
        for name, value in left.__dict__.items():
            _identical(value, right.__dict__[name], f"{where}.{name}")
    elif isinstance(left, (list, tuple)):
        assert len(left) == len(right), where
        for index, (a, b) in enumerate(zip(left, right, strict=True)):
            _identical(a, b, f"{where}[{index}]")
    elif isinstance(left, dict):
        assert list(left) == list(right), where
        for key, value in left.items():
            _identical(value, right[key], f"{where}[{key!r}]")
    else:
        assert left == right or (left != left and right != right), where  # NaN


def _assert_read_alike(text: str | bytes) -> EvaluationRequest | None:
    """Both accept ``text`` alike or reject it with the same errors, with the same warnings (a google-genai enum's
    unknown value; given once more when the second validator rejected what the general path then reads, which the
    default warnings filter shows once)."""
    with warnings.catch_warnings(record=True) as general_warnings:
        warnings.simplefilter("always")
        try:
            expected: EvaluationRequest | Exception = EvaluationRequest.model_validate_json(text)
        except Exception as exc:  # a ValidationError; google-genai's enums raise e.g. AttributeError
            expected = exc
    with warnings.catch_warnings(record=True) as our_warnings:
        warnings.simplefilter("always")
        try:
            got: EvaluationRequest | Exception = validate_request_json(text)
        except Exception as exc:
            got = exc
    assert {str(w.message) for w in our_warnings} == {str(w.message) for w in general_warnings}
    if isinstance(expected, Exception):
        assert type(got) is type(expected) and str(got) == str(expected)
        if isinstance(expected, pydantic.ValidationError):
            assert isinstance(got, pydantic.ValidationError)
            assert got.errors(include_url=False, include_context=False) == expected.errors(
                include_url=False, include_context=False
            )
        return None
    assert isinstance(got, EvaluationRequest)
    _identical(got, expected)
    assert got == expected and got.model_dump_json() == expected.model_dump_json()
    return got


def _with_user_content(content: Any) -> str:
    data = json.loads(request(1).model_dump_json())
    data["invocations"][0]["invocation"]["user_content"] = content
    return json.dumps(data)


def test_a_request_as_the_exporter_writes_it_reads_alike() -> None:
    written = request(1)
    content = written.invocations[0].invocation.user_content
    assert content is not None and content.parts is not None
    parts = content.parts
    parts.append(genai.Part(inline_data=genai.Blob(data=b"\x00\x01 image", mime_type="image/png")))
    parts.append(genai.Part(text="thinking", thought=True, thought_signature=b"\xff\x00sig"))
    got = _assert_read_alike(written.model_dump_json())
    assert got == written
    assert got is not None and got.invocations[0].invocation.user_content is not None
    read = got.invocations[0].invocation.user_content.parts
    assert read is not None and read[0].model_fields_set == {"text"} | (set(genai.Part.model_fields) - _init_keywords())
    assert read[2].thought_signature == b"\xff\x00sig"


def _init_keywords() -> set[str]:
    from otel_eval.model.genai._contents import _INIT_KEYWORDS

    return set(_INIT_KEYWORDS)


def test_recorded_traces_with_their_eval_case_and_events_read_alike() -> None:
    """Real rebuilt invocations (several per request, intermediate texts), the eval case they pair with, and ADK
    events with contents."""
    traces = [t for name in ("helm.json", "k8s.json") for t in rebuild_traces(read_trace_file(AGENTEVALS / name).spans)]
    invocations = [invocation for trace in traces for invocation in trace.invocations]
    case = load_eval_set(AGENTEVALS / "eval_set_helm.json").eval_cases[0]
    events = InvocationEvents(
        invocation_events=[
            InvocationEvent(author="agent", content=genai.Content(role="model", parts=[genai.Part(text="calling")])),
            InvocationEvent(author="agent", content=None),
        ]
    )
    with_events = invocations[0].model_copy(
        update={"invocation": invocations[0].invocation.model_copy(update={"intermediate_data": events})}
    )
    written = EvaluationRequest(invocations=[*invocations, with_events], eval_case=case, eval_set_id="helm")
    got = _assert_read_alike(written.model_dump_json())
    assert got == written


@pytest.mark.parametrize(
    "content",
    [
        {"role": "user", "parts": [{"functionCall": None, "text": "alias key with a null"}]},
        {"role": "user", "parts": [{"function_call": None, "functionCall": {"name": "f"}}]},
        {"role": "user", "parts": [{"thoughtSignature": "AAE=", "text": "t"}]},
        {"role": "user", "parts": [{"text": 5}]},
        {"role": "user", "parts": [{"media_resolution": {"level": "nope"}}]},
        {"role": "user", "parts": [{"executable_code": {"code": "x", "language": "PYTHON"}}]},
        {"role": "user", "parts": [{"unknown": None}]},
        {"role": "user", "parts": "not a list"},
        {"role": "user", "parts": [None]},
    ],
    ids=[
        "alias-null", "name-and-alias", "alias-bytes", "wrong-type", "bad-genai-field",
        "genai-field", "unknown-key", "parts-not-a-list", "null-part",
    ],
)  # fmt: skip
def test_hostile_parts_read_alike(content: Any) -> None:
    _assert_read_alike(_with_user_content(content))


@pytest.mark.parametrize(
    "keys", ['"text": "a", "text": null', '"text": null, "text": "a"', '"thought": true, "thought": null']
)
def test_duplicate_keys_read_alike(keys: str) -> None:
    """The last of a repeated key counts, in both (and a null last one leaves the field unset in both)."""
    text = _with_user_content({"role": "user", "parts": [{"video_metadata": None}]})
    got = _assert_read_alike(text.replace('"video_metadata": null', keys))
    assert got is not None


@pytest.mark.parametrize(
    "text",
    [b"", b"\x00 not json", b"[1, 2]", b'{"schema_version": 1}', b'{"schema_version": 1, "invocations": [{}]}'],
    ids=["empty", "not-json", "a-list", "no-invocations", "empty-invocation"],
)
def test_what_is_not_a_request_fails_alike(text: bytes) -> None:
    assert _assert_read_alike(text) is None


@EXAMPLES
@given(content=_inputs("Content", python=False), final=st.booleans())
def test_generated_contents_read_alike(content: Any, final: bool) -> None:
    """Contents generated from google-genai's annotations (every field of a part, snake_case and camelCase keys,
    unknown keys, wrong types, None vs missing), as a request's user content or final response."""
    data = json.loads(request(1).model_dump_json())
    data["invocations"][0]["invocation"]["final_response" if final else "user_content"] = content
    _assert_read_alike(json.dumps(data))
