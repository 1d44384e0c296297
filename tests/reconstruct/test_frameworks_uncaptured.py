"""Frameworks whose spans carry no message content, proven on what their real instrumentation emits (recorded by
``tests/data/frameworks/generate.py``): AutoGen (``autogen-agentchat`` teams on the ``autogen-core`` runtime), and
Microsoft Agent Framework as it is by default (``ENABLE_SENSITIVE_DATA`` off).

AutoGen's ``invoke_agent`` / ``execute_tool`` spans carry ``gen_ai.agent.*``, ``gen_ai.tool.name`` and
``gen_ai.tool.call.id`` only: no messages, arguments or results under GenAI names, and no model-call spans. The content
exists only as JSON in the runtime's own ``message`` attribute on its ``autogen process ...`` spans, one trace per
delivered message (10 to 23 traces per run here), which an evaluation that reads one trace at a time cannot join. So
what is rebuilt is the tool calls' names and ids in order and a failing tool's error (``<type>: <text>``, as the
span's status says), with ``content_captured`` false -- and the content metrics say ``content_not_captured`` instead
of judging an empty answer.

CrewAI under OpenInference's ``TraceConfig(hide_inputs=True, hide_outputs=True)`` (``OPENINFERENCE_HIDE_INPUTS``,
``OPENINFERENCE_HIDE_OUTPUTS``) writes ``__REDACTED__`` for every input and output value: that is no content either.

Microsoft Agent Framework without sensitive data keeps the same GenAI spans as with it (``invoke_agent``, ``chat``,
``execute_tool``), less every message, argument and result: the tool spans name the tool and its call id, and a failing
tool's span has the exception's type (``error.type``) and an ERROR status without a description.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otel_eval.metrics import default_registry
from otel_eval.metrics._reference import CONTENT_NOT_CAPTURED
from otel_eval.model import BaseCriterion, EvalStatus, IntermediateData, TracedInvocation, content_text
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import read_trace_file
from tests.judge.fake_gemini import FakeGemini
from tests.judge.helpers import invocation, make_judge

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")

FRAMEWORKS = Path(__file__).resolve().parents[1] / "data" / "frameworks"
AUTOGEN = FRAMEWORKS / "autogen"
AGENT_FRAMEWORK = FRAMEWORKS / "agent_framework_no_content"
RECORDS = sorted([*AUTOGEN.glob("*.record.json"), *AGENT_FRAMEWORK.glob("*.record.json")])


def rebuilt(record_path: Path) -> tuple[dict[str, Any], list[str], list[TracedInvocation]]:
    """The record, the conventions of the rebuilt traces, and the invocations in time order."""
    record = json.loads(record_path.read_text(encoding="utf-8"))
    spans_path = record_path.with_name(record_path.name.replace(".record.json", ".otlp.json.gz"))
    traces = rebuild_traces(read_trace_file(spans_path).spans)
    invocations = sorted((i for t in traces for i in t.invocations), key=lambda i: i.start_time_ns)
    return record, [t.convention for t in traces], invocations


def recorded_calls(producer: str, turn: Any) -> list[tuple[str, str]]:
    """``(tool name, call id)`` of each call the model asked for, in order: AutoGen's ``ToolCallRequestEvent``s, Agent
    Framework's ``function_call`` contents."""
    if producer == "autogen":
        return [(c["name"], c["id"]) for m in turn if m["type"] == "ToolCallRequestEvent" for c in m["content"]]
    return [(c["name"], c["call_id"]) for m in turn["messages"] for c in m["contents"] if c["type"] == "function_call"]


def recorded_errors(producer: str, turn: Any) -> list[tuple[str, str]]:
    """The failing tools and what the framework says of each error: AutoGen's result (``is_error``: the exception's
    text, as sent to the model, which the span's status repeats after the type); Agent Framework's result, by its call
    id (``exception`` set: the model is sent only ``Error: Function failed.``, the span keeps the exception's type)."""
    if producer == "autogen":
        return [
            (r["name"], f"RuntimeError: {r['content']}")
            for m in turn
            if m["type"] == "ToolCallExecutionEvent"
            for r in m["content"]
            if r["is_error"]
        ]
    names = {call_id: name for name, call_id in recorded_calls(producer, turn)}
    return [
        (names[c["call_id"]], "RuntimeError")
        for m in turn["messages"]
        for c in m["contents"]
        if c["type"] == "function_result" and c.get("exception")
    ]


@pytest.mark.parametrize("producer", [AUTOGEN, AGENT_FRAMEWORK], ids=lambda p: p.name)
def test_every_scenario_is_recorded(producer: Path) -> None:
    names = {p.name.split(".")[0] for p in producer.glob("*.record.json")}
    assert names == {"one_tool", "sequential_tools", "tool_error", "no_tool", "multi_turn"}


@pytest.mark.parametrize("record_path", RECORDS, ids=lambda p: f"{p.parent.name}/{p.name.split('.')[0]}")
def test_tool_names_ids_and_errors_are_rebuilt_without_content(record_path: Path) -> None:
    record, conventions, invocations = rebuilt(record_path)
    producer = record["producer"]
    # AutoGen's runtime message traces follow no known convention.
    assert set(conventions) == ({"genai", "unknown"} if producer == "autogen" else {"genai"})
    assert len(invocations) == len(record["turns"])
    for traced, turn in zip(invocations, record["turns"], strict=True):
        data = traced.invocation.intermediate_data
        assert isinstance(data, IntermediateData)
        assert [(c.name, c.id) for c in data.tool_uses] == recorded_calls(producer, turn)
        assert all(c.args == {} for c in data.tool_uses)  # arguments are not recorded
        errors = [(r.name, (r.response or {}).get("error", "")) for r in data.tool_responses]
        assert errors == recorded_errors(producer, turn)
        assert not traced.content_captured
        assert content_text(traced.invocation.user_content) == ""
        assert traced.invocation.final_response is None
        assert any("no message content was captured" in w for w in traced.warnings)


@pytest.mark.parametrize("producer", [AUTOGEN, AGENT_FRAMEWORK], ids=lambda p: p.name)
@pytest.mark.parametrize("metric", ["safety_v1", "hallucinations_v1", "response_match_score"])
async def test_content_metrics_report_content_not_captured(
    fake_gemini: FakeGemini, metric: str, producer: Path
) -> None:
    _, _, invocations = rebuilt(producer / "one_tool.record.json")
    evaluator = default_registry().create(
        metric, BaseCriterion.model_validate({"threshold": 0.5}), judge=make_judge(fake_gemini, max_attempts=1)
    )
    expected = [invocation("What's the weather in Paris?", "Paris is cloudy at 18 °C.")]
    result = await evaluator.evaluate(invocations, expected if evaluator.info.requires_reference else None)
    assert [r.eval_status for r in result.per_invocation_results] == [EvalStatus.NOT_EVALUATED]
    assert [r.error_type for r in result.per_invocation_results] == [CONTENT_NOT_CAPTURED]
    assert result.overall_score is None
    assert fake_gemini.requests == []


@pytest.mark.parametrize("producer", ["crewai_openinference", "crewai_openinference_events"])
async def test_openinference_redacted_values_are_content_not_captured(fake_gemini: FakeGemini, producer: str) -> None:
    """OpenInference's placeholder for a hidden value is not the user's text, a tool's arguments or result, or the
    answer: the invocation has the tool call by name, its agent, and the content metrics say ``content_not_captured``
    instead of judging ``__REDACTED__``."""
    record, _, invocations = rebuilt(FRAMEWORKS / producer / "hidden_content.record.json")
    [traced] = invocations
    assert not traced.content_captured
    assert traced.agent_name == "weather_agent"
    assert "__REDACTED__" not in traced.model_dump_json()
    data = traced.invocation.intermediate_data
    assert isinstance(data, IntermediateData)
    assert [(c.name, c.args) for c in data.tool_uses] == [("get_weather", {})]
    assert traced.invocation.final_response is None
    assert any("no message content was captured" in w for w in traced.warnings)
    assert record["turns"][0]["raw"] == "Paris."  # the crew did answer
    evaluator = default_registry().create(
        "hallucinations_v1", BaseCriterion.model_validate({"threshold": 0.5}), judge=make_judge(fake_gemini)
    )
    result = await evaluator.evaluate(invocations)
    assert [r.error_type for r in result.per_invocation_results] == [CONTENT_NOT_CAPTURED]
    assert fake_gemini.requests == []
