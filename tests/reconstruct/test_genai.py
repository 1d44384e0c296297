"""GenAI semantic-convention reconstruction on hand-typed attributes recorded through the real OpenTelemetry SDK.

The attributes here are typed by the tests, for shapes the recorded producers in ``tests/data/frameworks`` do not emit
(deprecated per-message events, operation-details events, other emitters' quirks, capture off); what Pydantic AI,
OpenLLMetry's LangChain and OpenAI Agents instrumentations and ``opentelemetry-instrumentation-google-genai`` really
emit is proven in ``test_frameworks.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from otel_eval.conversations import group_conversations
from otel_eval.model import TracedInvocation
from otel_eval.reconstruct import rebuild_trace, rebuild_traces
from otel_eval.reconstruct.genai import GenAIConvention
from otel_eval.reconstruct.openinference import OpenInferenceConvention
from otel_eval.reconstruct.openllmetry import OpenLLMetryConvention
from otel_eval.traces import Span
from tests.reconstruct import sdk_traces
from tests.reconstruct.sdk_traces import TraceRecorder, as_json, trajectory

USER = "What's the weather in Paris?"
ANSWER = "It is sunny and 21°C in Paris."
SYSTEM = "Be brief."
CALL_ID = "call_1"
TOOL_RESULT = "sunny, 21°C"

PARTS_FIRST_IN = [
    {"role": "system", "parts": [{"type": "text", "content": SYSTEM}]},
    {"role": "user", "parts": [{"type": "text", "content": USER}]},
]
PARTS_FIRST_OUT = [
    {
        "role": "assistant",
        "parts": [
            {"type": "text", "content": "Checking."},
            {"type": "tool_call", "id": CALL_ID, "name": "get_weather", "arguments": {"city": "Paris"}},
        ],
        "finish_reason": "tool_call",
    }
]
PARTS_SECOND_IN = [
    *PARTS_FIRST_IN,
    {"role": "assistant", "parts": PARTS_FIRST_OUT[0]["parts"]},
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": CALL_ID, "response": TOOL_RESULT}]},
]
PARTS_SECOND_OUT = [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}], "finish_reason": "stop"}]

OPENAI_CALL = {"id": CALL_ID, "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
CONTENT_FIRST_IN = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
CONTENT_FIRST_OUT = [{"role": "assistant", "content": "Checking.", "tool_calls": [OPENAI_CALL]}]
CONTENT_SECOND_IN = [
    *CONTENT_FIRST_IN,
    *CONTENT_FIRST_OUT,
    {"role": "tool", "tool_call_id": CALL_ID, "content": TOOL_RESULT},
]
CONTENT_SECOND_OUT = [{"role": "assistant", "content": ANSWER}]

SHAPES = {
    "parts": (PARTS_FIRST_IN, PARTS_FIRST_OUT, PARTS_SECOND_IN, PARTS_SECOND_OUT),
    "content": (CONTENT_FIRST_IN, CONTENT_FIRST_OUT, CONTENT_SECOND_IN, CONTENT_SECOND_OUT),
}


def _chat_attributes(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
    }


def record_weather_run(recorder: TraceRecorder, shape: str, carrier: str) -> None:
    """One agent turn (model call -> tool -> model call) with the content carried as ``carrier`` says."""
    first_in, first_out, second_in, second_out = SHAPES[shape]
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"}
    agent["gen_ai.conversation.id"] = "conv-1"
    with recorder.span("invoke_agent weather_agent", agent, new_trace=True):
        for inputs, outputs, usage in ((first_in, first_out, (10, 5)), (second_in, second_out, (20, 7))):
            attributes = _chat_attributes(*usage)
            if carrier == "attributes":
                attributes["gen_ai.input.messages"] = as_json(inputs)
                attributes["gen_ai.output.messages"] = as_json(outputs)
            with recorder.span("chat gpt-4o", attributes) as chat:
                if carrier == "details_event":
                    recorder.event(
                        chat,
                        "gen_ai.client.inference.operation.details",
                        {"gen_ai.input.messages": as_json(inputs), "gen_ai.output.messages": as_json(outputs)},
                    )
            if outputs is first_out:
                tool = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": CALL_ID,
                    "gen_ai.tool.call.arguments": as_json({"city": "Paris"}),
                    "gen_ai.tool.call.result": TOOL_RESULT,
                }
                with recorder.span("execute_tool get_weather", tool):
                    pass


def record_deprecated_events_run(recorder: TraceRecorder) -> None:
    """The same turn in the pre-1.37 per-message event form (OpenAI instrumentation style attributes)."""
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"}
    with recorder.span("invoke_agent weather_agent", agent, new_trace=True):
        with recorder.span("chat gpt-4o", _chat_attributes(10, 5)) as chat:
            recorder.event(chat, "gen_ai.system.message", {"content": SYSTEM})
            recorder.event(chat, "gen_ai.user.message", {"content": USER})
            choice = {"role": "assistant", "content": "Checking.", "tool_calls": [OPENAI_CALL]}
            recorder.event(
                chat, "gen_ai.choice", {"index": 0, "finish_reason": "tool_calls", "message": as_json(choice)}
            )
        with recorder.span("execute_tool get_weather", {"gen_ai.tool.name": "get_weather"}):
            pass
        with recorder.span("chat gpt-4o", _chat_attributes(20, 7)) as chat:
            recorder.event(chat, "gen_ai.system.message", {"content": SYSTEM})
            recorder.event(chat, "gen_ai.user.message", {"content": USER})
            recorder.event(
                chat, "gen_ai.assistant.message", {"content": "Checking.", "tool_calls": as_json([OPENAI_CALL])}
            )
            recorder.event(chat, "gen_ai.tool.message", {"content": TOOL_RESULT, "id": CALL_ID})
            recorder.event(
                chat, "gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": as_json({"content": ANSWER})}
            )


def only_invocation(spans: list[Span]) -> TracedInvocation:
    return sdk_traces.only_invocation(spans, "genai")


EXPECTED = {
    "user": USER,
    "calls": [("get_weather", {"city": "Paris"}, CALL_ID)],
    "responses": [("get_weather", {"result": TOOL_RESULT}, CALL_ID)],
    "intermediate": [("weather_agent", ["Checking."])],
    "final": ANSWER,
}


@pytest.mark.parametrize("shape", ["parts", "content"])
@pytest.mark.parametrize("carrier", ["attributes", "details_event"])
def test_message_shapes_and_carriers_give_the_same_invocation(shape: str, carrier: str) -> None:
    recorder = TraceRecorder()
    record_weather_run(recorder, shape, carrier)
    inv = only_invocation(recorder.spans())
    assert trajectory(inv) == EXPECTED
    assert inv.agent_name == "weather_agent"
    assert inv.session_id == "conv-1"
    assert inv.model == "gpt-4o"
    assert inv.model_call_count == 2
    assert (inv.token_usage.input_tokens, inv.token_usage.output_tokens) == (30, 12)
    app = inv.invocation.app_details
    assert app is not None and app.agent_details["weather_agent"].instructions == SYSTEM
    assert inv.content_captured and inv.warnings == []


def test_deprecated_per_message_events() -> None:
    recorder = TraceRecorder()
    record_deprecated_events_run(recorder)
    inv = only_invocation(recorder.spans())
    # The tool span has no result attribute: the result comes from the gen_ai.tool.message sent back to the model.
    assert trajectory(inv) == EXPECTED


def test_strands_legacy_content_blocks_and_tool_events() -> None:
    recorder = TraceRecorder()
    agent = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "strands_agent",
        "gen_ai.system": "strands-agents",
    }
    with recorder.span("invoke_agent strands_agent", agent, new_trace=True) as root:
        recorder.event(root, "gen_ai.user.message", {"content": as_json([{"text": USER}])})
        with recorder.span("chat", {"gen_ai.operation.name": "chat"}) as chat:
            recorder.event(chat, "gen_ai.user.message", {"content": as_json([{"text": USER}])})
            use = {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}}
            recorder.event(chat, "gen_ai.choice", {"finish_reason": "tool_use", "message": as_json([use])})
        with recorder.span(
            "execute_tool get_weather",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "tooluse_1",
            },
        ) as tool:
            recorder.event(
                tool, "gen_ai.tool.message", {"role": "tool", "content": as_json({"city": "Paris"}), "id": "tooluse_1"}
            )
            recorder.event(tool, "gen_ai.choice", {"message": as_json([{"text": TOOL_RESULT}]), "id": "tooluse_1"})
        with recorder.span("chat", {"gen_ai.operation.name": "chat"}) as chat:
            recorder.event(chat, "gen_ai.choice", {"finish_reason": "end_turn", "message": as_json([{"text": ANSWER}])})
        recorder.event(root, "gen_ai.choice", {"message": ANSWER, "finish_reason": "end_turn"})
    inv = only_invocation(recorder.spans())
    assert trajectory(inv) == {
        "user": USER,
        "calls": [("get_weather", {"city": "Paris"}, "tooluse_1")],
        "responses": [("get_weather", {"result": TOOL_RESULT}, "tooluse_1")],
        "intermediate": [],
        "final": ANSWER,
    }


def test_missing_agent_span_groups_model_calls_into_one_turn() -> None:
    recorder = TraceRecorder()
    record_weather_run(recorder, "parts", "attributes")
    spans = recorder.spans(drop={"invoke_agent weather_agent"})
    assert all(s.parent_span_id is not None for s in spans)  # their parent is gone
    inv = only_invocation(spans)
    assert trajectory(inv)["calls"] == EXPECTED["calls"]
    assert trajectory(inv)["responses"] == EXPECTED["responses"]
    assert trajectory(inv)["user"] == USER and trajectory(inv)["final"] == ANSWER
    assert inv.model_call_count == 2
    assert inv.end_time_ns > inv.start_time_ns


def test_invalid_json_attributes_give_warnings_and_a_partial_result() -> None:
    recorder = TraceRecorder()
    agent = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "weather_agent",
        "gen_ai.input.messages": as_json(PARTS_FIRST_IN),
    }
    with recorder.span("invoke_agent weather_agent", agent, new_trace=True):
        broken_chat = _chat_attributes(1, 1) | {
            "gen_ai.input.messages": "[{not json",
            "gen_ai.output.messages": "{oops",
        }
        with recorder.span("chat gpt-4o", broken_chat):
            pass
        tool = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.arguments": "{city: Paris",
        }
        with recorder.span("execute_tool get_weather", tool | {"gen_ai.tool.call.result": TOOL_RESULT}):
            pass
        with recorder.span(
            "chat gpt-4o", _chat_attributes(1, 1) | {"gen_ai.output.messages": as_json(PARTS_SECOND_OUT)}
        ):
            pass
    inv = only_invocation(recorder.spans())
    got = trajectory(inv)
    assert got["user"] == USER  # from the agent span's input, the model call's being unreadable
    assert got["calls"] == [("get_weather", {"input": "{city: Paris"}, None)]
    assert got["responses"] == [("get_weather", {"result": TOOL_RESULT}, None)]
    assert got["final"] == ANSWER
    joined = "\n".join(inv.warnings)
    assert "gen_ai.input.messages: not valid JSON" in joined
    assert "gen_ai.output.messages: not valid JSON" in joined
    assert "tool arguments are not valid JSON" in joined


def test_values_of_the_wrong_type_never_raise() -> None:
    recorder = TraceRecorder()
    with recorder.span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent"}, new_trace=True):
        with recorder.span(
            "chat m", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": 42, "gen_ai.output.messages": [1, 2]}
        ):
            pass
        with recorder.span(
            "execute_tool t", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": 7}
        ):
            pass
    traces = rebuild_traces(recorder.spans())
    (inv,) = traces[0].invocations
    assert trajectory(inv)["calls"] == [("t", {"input": 7}, None)]
    assert inv.warnings  # the unusable messages are reported


def record_turn(
    recorder: TraceRecorder, history: list[dict[str, Any]], question: str, city: str, answer: str
) -> list[dict[str, Any]]:
    """One turn of a session in its own trace; the model input carries the whole history (as chat APIs do)."""
    call_id = f"call_{city}"
    user = {"role": "user", "parts": [{"type": "text", "content": question}]}
    call = {
        "role": "assistant",
        "parts": [
            {"type": "text", "content": f"Looking up {city}."},
            {"type": "tool_call", "id": call_id, "name": "get_weather", "arguments": {"city": city}},
        ],
    }
    result = {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": f"{city}: mild"}]}
    final = {"role": "assistant", "parts": [{"type": "text", "content": answer}]}
    agent = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "weather_agent",
        "gen_ai.conversation.id": "session-7",
    }
    with recorder.span(
        "invoke_agent weather_agent", agent | {"gen_ai.input.messages": as_json([*history, user])}, new_trace=True
    ):
        with recorder.span(
            "chat gpt-4o",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": as_json([*history, user]),
                "gen_ai.output.messages": as_json([call]),
            },
        ):
            pass
        with recorder.span(
            "execute_tool get_weather",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": call_id,
            },
        ):
            pass
        second_in = [*history, user, call, result]
        with recorder.span(
            "chat gpt-4o",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": as_json(second_in),
                "gen_ai.output.messages": as_json([final]),
            },
        ):
            pass
    return [*history, user, call, result, final]


def test_multi_turn_session_across_two_traces_does_not_repeat_history() -> None:
    recorder = TraceRecorder()
    history = record_turn(recorder, [], "Weather in Oslo?", "Oslo", "Oslo is mild.")
    record_turn(recorder, history, "And in Rome?", "Rome", "Rome is mild too.")
    traces = rebuild_traces(recorder.spans())
    assert len(traces) == 2 and {t.trace_id for t in traces} == {t.invocations[0].trace_id for t in traces}
    conversations = group_conversations(inv for t in traces for inv in t.invocations)
    assert len(conversations) == 1 and conversations[0].session_id == "session-7"
    first, second = (trajectory(inv) for inv in conversations[0].invocations)
    assert first == {
        "user": "Weather in Oslo?",
        "calls": [("get_weather", {"city": "Oslo"}, "call_Oslo")],
        "responses": [("get_weather", {"result": "Oslo: mild"}, "call_Oslo")],
        "intermediate": [("weather_agent", ["Looking up Oslo."])],
        "final": "Oslo is mild.",
    }
    assert second == {
        "user": "And in Rome?",
        "calls": [("get_weather", {"city": "Rome"}, "call_Rome")],
        "responses": [("get_weather", {"result": "Rome: mild"}, "call_Rome")],
        "intermediate": [("weather_agent", ["Looking up Rome."])],
        "final": "Rome is mild too.",
    }


def test_two_turns_of_bare_model_calls_in_one_trace() -> None:
    recorder = TraceRecorder()
    with recorder.span("request", {}, new_trace=True):
        user1 = {"role": "user", "content": "Hi"}
        answer1 = {"role": "assistant", "content": "Hello!"}
        with recorder.span(
            "chat m",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": as_json([user1]),
                "gen_ai.output.messages": as_json([answer1]),
            },
        ):
            pass
        user2 = {"role": "user", "content": "Bye"}
        with recorder.span(
            "chat m",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": as_json([user1, answer1, user2]),
                "gen_ai.output.messages": as_json([{"role": "assistant", "content": "Goodbye!"}]),
            },
        ):
            pass
    (trace_result,) = rebuild_traces(recorder.spans())
    assert [(trajectory(i)["user"], trajectory(i)["final"]) for i in trace_result.invocations] == [
        ("Hi", "Hello!"),
        ("Bye", "Goodbye!"),
    ]


def test_parallel_tool_calls_and_a_failed_tool() -> None:
    recorder = TraceRecorder()
    calls = [
        {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Oslo"}},
        {"type": "tool_call", "id": "c2", "name": "get_weather", "arguments": {"city": "Rome"}},
    ]
    with recorder.span(
        "invoke_agent a",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.input.messages": as_json([{"role": "user", "parts": [{"type": "text", "content": "Both?"}]}]),
        },
        new_trace=True,
    ) as agent:
        with recorder.span(
            "chat m",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.output.messages": as_json([{"role": "assistant", "parts": calls}]),
            },
        ):
            pass
        # The second tool starts and ends inside the first one (run in parallel); it failed without a result.
        with (
            recorder.span(
                "execute_tool get_weather",
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": "c1",
                    "gen_ai.tool.call.result": "cold",
                },
            ),
            recorder.span(
                "execute_tool get_weather",
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": "c2",
                    "error.type": "TimeoutError",
                },
                parent=agent,
            ),
        ):
            pass
        with recorder.span(
            "chat m",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.output.messages": as_json(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "Oslo is cold."}]}]
                ),
            },
        ):
            pass
    got = trajectory(only_invocation(recorder.spans()))
    assert got["calls"] == [("get_weather", {"city": "Oslo"}, "c1"), ("get_weather", {"city": "Rome"}, "c2")]
    assert got["responses"] == [
        ("get_weather", {"result": "cold"}, "c1"),
        ("get_weather", {"error": "TimeoutError"}, "c2"),
    ]


def test_agent_as_tool_inner_calls_are_excluded_and_handoffs_included() -> None:
    recorder = TraceRecorder()
    user = as_json([{"role": "user", "parts": [{"type": "text", "content": "Plan a trip"}]}])
    with recorder.span("invoke_workflow trip", {"gen_ai.operation.name": "invoke_workflow"}, new_trace=True):
        with recorder.span(
            "invoke_agent planner",
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner", "gen_ai.input.messages": user},
        ):
            out = [
                {
                    "role": "assistant",
                    "parts": [{"type": "tool_call", "id": "t1", "name": "ask_expert", "arguments": {"q": "where"}}],
                }
            ]
            with recorder.span(
                "chat m",
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": user,
                    "gen_ai.output.messages": as_json(out),
                },
            ):
                pass
            with (
                recorder.span(
                    "execute_tool ask_expert",
                    {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "ask_expert",
                        "gen_ai.tool.call.id": "t1",
                        "gen_ai.tool.call.result": "Lisbon",
                    },
                ),
                recorder.span(
                    "invoke_agent expert", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "expert"}
                ),
            ):
                inner = [
                    {
                        "role": "assistant",
                        "parts": [{"type": "tool_call", "id": "x1", "name": "search", "arguments": {}}],
                    }
                ]
                with recorder.span(
                    "chat m",
                    {
                        "gen_ai.operation.name": "chat",
                        "gen_ai.output.messages": as_json(inner),
                        "gen_ai.usage.input_tokens": 100,
                    },
                ):
                    pass
                with recorder.span(
                    "execute_tool search", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}
                ):
                    pass
            handoff = [
                {
                    "role": "assistant",
                    "parts": [{"type": "tool_call", "id": "t2", "name": "transfer_to_booker", "arguments": {}}],
                }
            ]
            with recorder.span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.output.messages": as_json(handoff)}):
                pass
        with recorder.span(
            "invoke_agent booker", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "booker"}
        ):
            done = [{"role": "assistant", "parts": [{"type": "text", "content": "Booked Lisbon."}]}]
            with recorder.span(
                "chat m",
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.output.messages": as_json(done),
                    "gen_ai.usage.input_tokens": 5,
                },
            ):
                pass
    # An ``invoke_workflow`` root is also what ADK v2 writes; without ADK's scope the dispatcher must pick GenAI.
    result = rebuild_trace(recorder.spans())
    assert result.convention == "genai"
    (inv,) = result.invocations
    got = trajectory(inv)
    assert got["user"] == "Plan a trip"
    assert got["calls"] == [("ask_expert", {"q": "where"}, "t1"), ("transfer_to_booker", {}, "t2")]
    assert got["responses"] == [("ask_expert", {"result": "Lisbon"}, "t1")]
    assert got["final"] == "Booked Lisbon."
    assert inv.agent_name == "planner"
    assert inv.model_call_count == 4  # the expert's call counts for usage, not for the trajectory
    assert inv.token_usage.input_tokens == 105


def test_detection_is_specific() -> None:
    genai, openinference, openllmetry = GenAIConvention(), OpenInferenceConvention(), OpenLLMetryConvention()
    recorder = TraceRecorder()
    with recorder.span(
        "response",
        {"openinference.span.kind": "LLM", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 3},
        new_trace=True,
    ):
        pass
    oi_spans = recorder.spans()
    assert not genai.detect(oi_spans) and openinference.detect(oi_spans)
    recorder = TraceRecorder()
    with recorder.span(
        "openai.chat",
        {"gen_ai.system": "openai", "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "hi"},
        new_trace=True,
    ):
        pass
    oll_spans = recorder.spans()
    assert not genai.detect(oll_spans) and not openinference.detect(oll_spans) and openllmetry.detect(oll_spans)
    recorder = TraceRecorder()
    with (
        recorder.span(
            "x.agent", {"traceloop.span.kind": "agent", "gen_ai.operation.name": "invoke_agent"}, new_trace=True
        ),
        recorder.span(
            "openai.response", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": as_json(PARTS_FIRST_IN)}
        ),
    ):
        pass
    mixed = recorder.spans()
    assert genai.detect(mixed) and not openllmetry.detect(mixed)
    assert [t.convention for t in rebuild_traces(mixed)] == ["genai"]
