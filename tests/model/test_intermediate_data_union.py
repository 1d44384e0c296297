"""``Invocation.intermediate_data`` is validated left to right (the first form that validates), not in pydantic's
default ("smart") union mode, which validates every form: the result must be the one smart mode gives, on the
intermediate data of every recorded trace and eval set, in both spellings, and on hostile mappings (same form, same
values, same fields set, or the same errors)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest

from otel_eval.model import Invocation
from otel_eval.model.eval_case import IntermediateDataType
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import read_trace_file

DATA = Path(__file__).resolve().parents[1] / "data"
TRACES = [
    *sorted((DATA / "traces" / "agentevals").glob("[hkt]*.json")),
    DATA / "traces" / "strands-evals" / "adk_live_spans.json",
    *sorted((DATA / "hostile").glob("*.adk*.json")),
]
EVAL_SETS = sorted((DATA / "evalsets").glob("*.json"))
USER_CONTENT = {"parts": [{"text": "hi"}], "role": "user"}
HOSTILE: list[Any] = [
    None,
    {},
    {"tool_uses": []},
    {"toolUses": [{"name": "f"}], "toolResponses": [{"name": "f", "response": {"a": 1}}]},
    {"invocation_events": []},
    {"invocationEvents": [{"author": "a", "extra": "ignored"}]},
    {"tool_uses": [], "invocation_events": []},
    {"bogus": 1},
    [],
    "text",
    3,
    {"tool_uses": "not a list"},
    {"tool_uses": [{"name": 3}]},
    {"invocation_events": "not a list"},
    {"invocation_events": [{"content": {}}]},
    {"intermediate_responses": [["author", [{"text": "t", "thought": None}]]]},
    {"intermediate_responses": [["author"]]},
]


class _SmartInvocation(Invocation):
    """The same invocation with the union in pydantic's default mode (the reference)."""

    intermediate_data: IntermediateDataType | None = None


def _recorded() -> Iterator[Any]:
    for path in TRACES:
        for trace in rebuild_traces(read_trace_file(path).spans):
            for traced in trace.invocations:
                data = traced.invocation.intermediate_data
                if data is not None:
                    yield data.model_dump(mode="json")
                    yield data.model_dump(mode="json", by_alias=True)
    for path in EVAL_SETS:
        for case in json.loads(path.read_text())["eval_cases"]:
            for invocation in case.get("conversation") or []:
                yield invocation.get("intermediate_data", invocation.get("intermediateData"))


def _outcome(model: type[Invocation], data: Any, mode: str) -> Any:
    document = {"user_content": USER_CONTENT, "intermediate_data": data}
    try:
        if mode == "json":
            invocation = model.model_validate_json(json.dumps(document))
        else:
            invocation = model.model_validate(document)
    except pydantic.ValidationError as exc:
        return "error", [(e["loc"], e["msg"], e["type"]) for e in exc.errors()]
    value = invocation.intermediate_data
    if value is None:
        return None
    return type(value).__name__, value.model_dump(), sorted(value.model_fields_set)


def test_recorded_data_is_read_as_smart_mode_reads_it() -> None:
    recorded = list(_recorded())
    assert sum(1 for data in recorded if data) > 20  # the recorded traces and eval sets do carry tool calls
    forms = set()
    for data in recorded:
        for mode in ("python", "json"):
            ours = _outcome(Invocation, data, mode)
            assert ours == _outcome(_SmartInvocation, data, mode), data
            forms.add(ours[0] if ours else None)
    assert "IntermediateData" in forms


@pytest.mark.parametrize("data", HOSTILE, ids=[json.dumps(h)[:40] for h in HOSTILE])
def test_hostile_data_is_read_or_rejected_as_smart_mode_does(data: Any) -> None:
    for mode in ("python", "json"):
        assert _outcome(Invocation, data, mode) == _outcome(_SmartInvocation, data, mode)


def test_model_instances_are_kept_or_rejected_as_smart_mode_does() -> None:
    events = {"invocation_events": [{"author": "a", "content": {"parts": [{"text": "t"}], "role": "model"}}]}
    built = _SmartInvocation.model_validate({"user_content": USER_CONTENT, "intermediate_data": events})
    ours = Invocation(user_content=built.user_content, intermediate_data=built.intermediate_data)
    smart = _SmartInvocation(user_content=built.user_content, intermediate_data=built.intermediate_data)
    assert type(ours.intermediate_data).__name__ == "InvocationEvents"
    assert type(ours.intermediate_data) is type(smart.intermediate_data)
    assert ours.model_dump() == smart.model_dump()
    # another model is neither form
    rejected = _outcome(Invocation, built.user_content, "python")
    assert rejected[0] == "error" and rejected == _outcome(_SmartInvocation, built.user_content, "python")
