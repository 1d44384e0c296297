"""OpenInference reconstruction on hand-typed attributes recorded through the real OpenTelemetry SDK.

The attributes here are typed by the tests, for shapes the recorded producers in ``tests/data/frameworks`` do not emit
(other frameworks' layouts, ADOT exports, edge cases); what ``openinference-instrumentation-langchain``,
``-openai-agents`` and ``-smolagents`` really emit is proven in ``test_frameworks.py``.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import Status, StatusCode

from otel_eval.model import TracedInvocation
from otel_eval.traces import Span
from tests.reconstruct import sdk_traces
from tests.reconstruct.sdk_traces import TraceRecorder, as_json, trajectory

KIND = "openinference.span.kind"


def only_invocation(spans: list[Span]) -> TracedInvocation:
    return sdk_traces.only_invocation(spans, "openinference")


def llm_attributes(messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {KIND: "LLM", "llm.model_name": "gpt-4o-mini", **messages, **extra}


def record_agent_run(recorder: TraceRecorder, *, with_tool_span: bool = True) -> None:
    agent = {KIND: "AGENT", "agent.name": "helper", "input.value": "Convert 3 km to miles", "session.id": "s-42"}
    with recorder.span("helper", agent, new_trace=True):
        first = {
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "You convert units.",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": "Convert 3 km to miles",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.contents.0.message_content.type": "text",
            "llm.output_messages.0.message.contents.0.message_content.text": "Converting.",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_9",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "convert",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": as_json(
                {"value": 3, "unit": "km"}
            ),
            "llm.tools.0.tool.json_schema": as_json(
                {"type": "function", "function": {"name": "convert", "parameters": {"type": "object"}}}
            ),
        }
        with recorder.span("ChatOpenAI", llm_attributes(first, **{"llm.token_count.prompt": 30})):
            pass
        if with_tool_span:
            tool = {KIND: "TOOL", "tool.name": "convert", "input.value": as_json({"value": 3, "unit": "km"})}
            with recorder.span("convert", tool | {"output.value": "1.864 miles", "output.mime_type": "text/plain"}):
                pass
        second = {
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Convert 3 km to miles",
            "llm.input_messages.1.message.role": "assistant",
            "llm.input_messages.1.message.tool_calls.0.tool_call.id": "call_9",
            "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "convert",
            "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments": as_json({"value": 3}),
            "llm.input_messages.2.message.role": "tool",
            "llm.input_messages.2.message.tool_call_id": "call_9",
            "llm.input_messages.2.message.content": "1.864 miles (sent back)",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "3 km is about 1.86 miles.",
        }
        with recorder.span("ChatOpenAI", llm_attributes(second, **{"llm.token_count.prompt": 50})):
            pass


def test_agent_llm_tool_spans() -> None:
    recorder = TraceRecorder()
    record_agent_run(recorder)
    inv = only_invocation(recorder.spans())
    assert trajectory(inv) == {
        "user": "Convert 3 km to miles",
        "calls": [("convert", {"value": 3, "unit": "km"}, "call_9")],
        "responses": [("convert", {"result": "1.864 miles"}, "call_9")],  # the TOOL span wins over the echo
        "intermediate": [("helper", ["Converting."])],
        "final": "3 km is about 1.86 miles.",
    }
    assert (inv.agent_name, inv.session_id, inv.model, inv.model_call_count) == ("helper", "s-42", "gpt-4o-mini", 2)
    assert inv.token_usage.input_tokens == 80
    app = inv.invocation.app_details
    assert app is not None
    assert app.agent_details["helper"].instructions == "You convert units."
    assert app.agent_details["helper"].tool_declarations[0]["function_declarations"][0]["name"] == "convert"


def test_tool_result_from_the_message_sent_back_when_there_is_no_tool_span() -> None:
    recorder = TraceRecorder()
    record_agent_run(recorder, with_tool_span=False)
    got = trajectory(only_invocation(recorder.spans()))
    assert got["responses"] == [("convert", {"result": "1.864 miles (sent back)"}, "call_9")]


def test_langgraph_root_chain_and_mislabelled_agent_nodes() -> None:
    recorder = TraceRecorder()
    graph_in = as_json({"messages": [{"lc": 1, "kwargs": {"content": "Hi there", "type": "human"}}]})
    graph_out = as_json({"messages": [{"content": "Hi there", "type": "human"}, {"content": "Hello!", "type": "ai"}]})
    root = {KIND: "CHAIN", "input.value": graph_in, "output.value": graph_out}
    with recorder.span("LangGraph", root, new_trace=True):
        with recorder.span("router", {KIND: "AGENT", "input.value": "{'agent_name': 'x'}"}):
            pass
        llm = {
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Hi there",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "Hello!",
        }
        with recorder.span("ChatBedrock", llm_attributes(llm)):
            pass
    got = trajectory(only_invocation(recorder.spans()))
    assert got == {"user": "Hi there", "calls": [], "responses": [], "intermediate": [], "final": "Hello!"}


def test_smolagents_wrapped_tool_arguments_and_agent_as_tool_exclusion() -> None:
    recorder = TraceRecorder()
    root = {KIND: "AGENT", "input.value": as_json({"task": "Find it", "stream": False}), "output.value": "Found."}
    with recorder.span("CodeAgent.run", root, new_trace=True):
        search = {
            KIND: "TOOL",
            "tool.name": "search",
            "tool.parameters": as_json({"query": {"type": "string"}, "limit": {"type": "integer"}}),
            "input.value": as_json({"args": ["cats"], "sanitize_inputs_outputs": False, "kwargs": {"limit": 2}}),
            "output.value": as_json(["a", "b"]),
        }
        with recorder.span("SearchTool", search):
            pass
        helper = {KIND: "TOOL", "tool.name": "helper_agent", "input.value": "sub task"}
        managed = {KIND: "AGENT", "input.value": "sub task"}
        inner = {KIND: "TOOL", "tool.name": "inner_tool", "input.value": "{}"}
        with (
            recorder.span("helper_agent", helper),
            recorder.span("ManagedAgent.run", managed),
            recorder.span("inner", inner),
        ):
            pass
    inv = only_invocation(recorder.spans())
    got = trajectory(inv)
    assert got["user"] == "Find it"
    assert got["calls"] == [
        ("search", {"query": "cats", "limit": 2}, None),
        ("helper_agent", {"input": "sub task"}, None),
    ]
    assert got["responses"] == [("search", {"result": ["a", "b"]}, None)]
    assert got["final"] == "Found."


def test_failed_tool_and_malformed_arguments() -> None:
    recorder = TraceRecorder()
    with recorder.span("agent", {KIND: "AGENT", "input.value": "go", "output.value": "done"}, new_trace=True):
        llm = {
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "fetch",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": "{url: nope",
        }
        with recorder.span("llm", llm_attributes(llm)):
            pass
        with recorder.span("fetch", {KIND: "TOOL", "tool.name": "fetch", "tool.id": "c1"}) as tool:
            tool.set_status(Status(StatusCode.ERROR, "ConnectionError: refused"))
    inv = only_invocation(recorder.spans())
    got = trajectory(inv)
    assert got["calls"] == [("fetch", {"input": "{url: nope"}, "c1")]
    assert got["responses"] == [("fetch", {"error": "ConnectionError: refused"}, "c1")]
    assert any("tool arguments are not valid JSON" in w for w in inv.warnings)


def test_content_not_captured() -> None:
    recorder = TraceRecorder()
    with recorder.span("agent", {KIND: "AGENT"}, new_trace=True):
        with recorder.span("llm", {KIND: "LLM", "llm.token_count.prompt": 5}):
            pass
        with recorder.span("lookup", {KIND: "TOOL", "tool.name": "lookup"}):
            pass
    inv = only_invocation(recorder.spans())
    assert inv.content_captured is False
    assert any("no message content was captured" in w for w in inv.warnings)
    assert trajectory(inv)["calls"] == [("lookup", {}, None)]
    assert inv.invocation.final_response is None
