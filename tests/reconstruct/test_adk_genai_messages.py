"""GenAI message JSON -> genai Content, as ADK v2 writes it (ADK's own serializer) and as other producers write it."""

from __future__ import annotations

import json

from google.adk.models.llm_request import LlmRequest
from google.adk.telemetry import _experimental_semconv as adk_semconv
from google.genai import types as genai_types

from otel_eval.reconstruct._genai_agent_details import system_instruction_text, tools_from_definitions
from otel_eval.reconstruct._genai_messages import (
    content_from_message,
    contents_from_messages,
    genai_role,
    tool_call_names,
)
from otel_eval.reconstruct._values import tool_response_payload


def _adk_history() -> list[genai_types.Content]:
    return [
        genai_types.Content(role="user", parts=[genai_types.Part(text="weather in Paris and Rome?")]),
        genai_types.Content(
            role="model",
            parts=[
                genai_types.Part(text="Checking."),
                genai_types.Part(
                    function_call=genai_types.FunctionCall(id="c1", name="get_weather", args={"city": "Paris"})
                ),
                genai_types.Part(
                    function_call=genai_types.FunctionCall(name="get_weather", args={"city": "Rome", "n": [1, 2]})
                ),
            ],
        ),
        genai_types.Content(
            role="user",
            parts=[
                genai_types.Part(
                    function_response=genai_types.FunctionResponse(
                        id="c1", name="get_weather", response={"temp": 21, "sky": "clear"}
                    )
                ),
                genai_types.Part(
                    function_response=genai_types.FunctionResponse(name="get_weather", response={"result": "rain"})
                ),
            ],
        ),
    ]


def test_adk_v2_serialized_messages_round_trip_to_the_same_contents() -> None:
    history = _adk_history()
    # Exactly what ADK puts on gen_ai.input.messages (builder + its own no-whitespace JSON encoder).
    serialized = adk_semconv._safe_json_serialize_no_whitespaces(
        adk_semconv._to_any_value(adk_semconv._to_input_messages(history))
    )
    warnings: list[str] = []
    contents = contents_from_messages(serialized, warnings)

    assert warnings == []
    assert [c.role for c in contents] == ["user", "model", "user"]
    assert contents[0].parts is not None and contents[0].parts[0].text == "weather in Paris and Rome?"
    calls = [p.function_call for p in contents[1].parts or [] if p.function_call]
    assert [(c.name, c.args) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome", "n": [1, 2]}),
    ]
    # A call without id gets ADK's "{name}_{index}" fallback id; its response is named through that id.
    assert [c.id for c in calls] == ["c1", "get_weather_2"]
    responses = [p.function_response for p in contents[2].parts or [] if p.function_response]
    assert [(r.id, r.name, r.response) for r in responses] == [
        ("c1", "get_weather", {"temp": 21, "sky": "clear"}),
        ("get_weather_1", None, {"result": "rain"}),
    ]


def test_adk_v2_system_instructions_and_tool_definitions() -> None:
    request = LlmRequest(
        model="m",
        contents=[],
        config=genai_types.GenerateContentConfig(
            system_instruction="You are helpful.\nBe brief.",
            tools=[
                genai_types.Tool(
                    function_declarations=[
                        genai_types.FunctionDeclaration(
                            name="get_weather",
                            description="Weather of a city.",
                            parameters=genai_types.Schema(
                                type=genai_types.Type.OBJECT,
                                properties={"city": genai_types.Schema(type=genai_types.Type.STRING)},
                            ),
                        )
                    ]
                )
            ],
        ),
    )
    details = adk_semconv._build_request_operation_details(request)
    instructions = adk_semconv._safe_json_serialize_no_whitespaces(details["gen_ai.system_instructions"])
    definitions = adk_semconv._safe_json_serialize_no_whitespaces(details["gen_ai.tool.definitions"])

    assert system_instruction_text(instructions) == "You are helpful.\nBe brief."
    warnings: list[str] = []
    tools = tools_from_definitions(definitions, warnings)
    assert warnings == []
    assert request.config.tools is not None
    assert [t.model_dump(exclude_none=True) for t in tools] == [
        t.model_dump(exclude_none=True) for t in request.config.tools if isinstance(t, genai_types.Tool)
    ]


def test_content_based_chat_messages() -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}],
        },
        {"role": "tool", "tool_call_id": "t1", "content": '{"hits": 3}'},
        {"role": "tool", "tool_call_id": "t2", "name": "other", "content": "plain text"},
        {"role": "assistant", "content": "done"},
    ]
    contents = contents_from_messages(json.dumps(messages))

    assert [c.role for c in contents] == ["system", "user", "model", "user", "user", "model"]
    call = (contents[2].parts or [])[0].function_call
    assert call is not None and (call.id, call.name, call.args) == ("t1", "lookup", {"q": "x"})
    first = (contents[3].parts or [])[0].function_response
    second = (contents[4].parts or [])[0].function_response
    assert first is not None and (first.name, first.response) == ("lookup", {"hits": 3})
    assert second is not None and (second.name, second.response) == ("other", {"result": "plain text"})
    assert tool_call_names(messages) == {"t1": "lookup"}


def test_openai_style_tool_definitions_keep_json_schema() -> None:
    tools = tools_from_definitions(
        [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    )
    assert len(tools) == 1 and tools[0].function_declarations is not None
    declaration = tools[0].function_declarations[0]
    assert declaration.name == "f"
    assert declaration.parameters_json_schema == {"type": "object", "properties": {}}


def test_malformed_input_is_a_warning_never_an_exception() -> None:
    warnings: list[str] = []
    assert contents_from_messages("{not json", warnings, "span x: gen_ai.input.messages") == []
    assert contents_from_messages(42, warnings) == []
    assert contents_from_messages([1, {"role": "user", "parts": [{"type": "tool_call"}, 5]}], warnings) == []
    assert content_from_message({"role": "user", "parts": [{"type": "mystery"}]}, warnings) is None
    assert tools_from_definitions("oops", warnings) == []
    assert any("span x: gen_ai.input.messages" in w and "not valid JSON" in w for w in warnings)
    assert len(warnings) >= 6


def test_thinking_parts_are_thoughts_and_roles_map() -> None:
    content = content_from_message({"role": "assistant", "parts": [{"type": "reasoning", "content": "hmm"}]})
    assert content is not None and content.parts is not None
    assert content.parts[0].thought is True and content.parts[0].text == "hmm"
    assert [genai_role(r) for r in ("assistant", "model", "tool", "user", "developer", None)] == [
        "model",
        "model",
        "user",
        "user",
        "system",
        "user",
    ]
    assert tool_response_payload("x") == {"result": "x"}
    assert tool_response_payload({"a": 1}) == {"a": 1}
