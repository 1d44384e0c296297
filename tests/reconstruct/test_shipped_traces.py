"""Every strands-evals framework trace (except ADK's, covered by the ADK tests) rebuilt into the invocations its raw spans
describe. Expected values were written from the spans themselves (attribute by attribute), not from our output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from otel_eval.model import TracedInvocation, content_text
from otel_eval.reconstruct import TraceInvocations, rebuild_traces
from otel_eval.traces import read_trace_file

DATA = Path(__file__).resolve().parents[1] / "data" / "traces" / "strands-evals"


def rebuild(name: str) -> list[TraceInvocations]:
    return rebuild_traces(read_trace_file(DATA / name).spans)


def only(name: str, convention: str) -> TracedInvocation:
    traces = rebuild(name)
    assert [t.convention for t in traces] == [convention]
    assert len(traces[0].invocations) == 1, traces[0].warnings
    return traces[0].invocations[0]


def calls(inv: TracedInvocation) -> list[tuple[str | None, dict[str, Any] | None, str | None]]:
    data = inv.invocation.intermediate_data
    assert data is not None and hasattr(data, "tool_uses")
    return [(c.name, c.args, c.id) for c in data.tool_uses]


def responses(inv: TracedInvocation) -> list[tuple[str | None, dict[str, Any] | None, str | None]]:
    data = inv.invocation.intermediate_data
    assert data is not None and hasattr(data, "tool_responses")
    return [(r.name, r.response, r.id) for r in data.tool_responses]


def response_by_id(inv: TracedInvocation) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for _, response, call_id in responses(inv):
        assert call_id is not None and response is not None
        found[call_id] = response
    return found


def intermediate(inv: TracedInvocation) -> list[tuple[str, str, bool]]:
    data = inv.invocation.intermediate_data
    assert data is not None and hasattr(data, "intermediate_responses")
    return [(author, p.text or "", bool(p.thought)) for author, parts in data.intermediate_responses for p in parts]


def user_text(inv: TracedInvocation) -> str:
    return content_text(inv.invocation.user_content)


def final_text(inv: TracedInvocation) -> str:
    return content_text(inv.invocation.final_response)


# --- GenAI semantic conventions ------------------------------------------------------------------------------------


def test_otel_genai_convention_canonical_example() -> None:
    inv = only("otel_genai_convention_spans.json", "genai")
    assert inv.trace_id == "a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4"
    assert inv.span_id == inv.invocation.invocation_id == "1000000000000001"
    assert user_text(inv) == "What's the weather in Paris and London?"
    assert calls(inv) == [
        ("get_weather", {"location": "Paris"}, "call_paris_001"),
        ("get_weather", {"location": "London"}, "call_london_001"),
    ]
    # London's execute_tool span failed (error.type) without a result: the text sent back to the model is used.
    assert responses(inv) == [
        ("get_weather", {"result": "rainy, 57°F"}, "call_paris_001"),
        ("get_weather", {"result": "Error: TimeoutError"}, "call_london_001"),
    ]
    assert intermediate(inv) == [("WeatherAssistant", "Let me check the weather for both cities.", False)]
    assert final_text(inv) == (
        "The weather in Paris is rainy at 57°F. I was unable to retrieve London's weather due to a service timeout."
    )
    assert (inv.session_id, inv.agent_name, inv.model, inv.model_call_count) == (
        "conv_otel_test_001",
        "WeatherAssistant",
        "gpt-4o",
        2,
    )
    # Summed over the two chat spans (80+120, 25+35), not the invoke_agent span's own totals.
    assert (inv.token_usage.input_tokens, inv.token_usage.output_tokens) == (200, 60)
    app = inv.invocation.app_details
    assert app is not None
    tools = app.agent_details["WeatherAssistant"].tool_declarations
    assert tools[0]["function_declarations"][0]["name"] == "get_weather"
    assert inv.content_captured and not inv.warnings


def test_pydantic_ai() -> None:
    inv = only("pydantic_ai_live_spans.json", "genai")
    assert user_text(inv) == "What's the weather like in Seattle right now?"
    assert calls(inv) == [("get_weather", {"city": "Seattle"}, "tooluse_ThYFd3WOkO59ZUHC77SIdX")]
    assert responses(inv) == [
        ("get_weather", {"result": "62°F, cloudy with light rain"}, "tooluse_ThYFd3WOkO59ZUHC77SIdX")
    ]
    assert final_text(inv) == (
        "The current weather in Seattle is 62°F and cloudy with light rain. Pretty typical Seattle weather!"
    )
    assert intermediate(inv) == []
    assert inv.session_id == "019f8b0c-5147-74b5-b1e4-f9b086da98e0"
    assert inv.agent_name == "agent"
    assert inv.model == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert (inv.token_usage.input_tokens, inv.token_usage.output_tokens) == (588 + 663, 53 + 25)
    app = inv.invocation.app_details
    assert app is not None
    assert app.agent_details["agent"].instructions == "You are a helpful assistant. Use the provided tools when needed."


def test_autogen_has_no_content_and_says_so() -> None:
    traces = rebuild("autogen_live_spans.json")
    assert [t.convention for t in traces] == ["genai", "genai"]
    by_count = sorted(traces, key=lambda t: len(t.invocations))
    create_only, invoked = by_count
    assert create_only.invocations == []
    assert any("no agent invocation" in w for w in create_only.warnings)
    (inv,) = invoked.invocations
    assert inv.content_captured is False
    assert any("no message content was captured" in w for w in inv.warnings)
    assert calls(inv) == [("calculate", {}, "toolu_bdrk_011nDreLrC9nv8NZs6iGrx6d")]
    assert responses(inv) == []
    assert inv.invocation.user_content.parts == []
    assert inv.invocation.final_response is None
    assert inv.agent_name == "math_assistant"


def test_openai_agents_genai_live_agents_as_tools() -> None:
    inv = only("openai_agents_genai_live_spans.json", "genai")
    assert inv.span_id == "20e16110c2caf0a9"  # "Agent Workflow", whose parent is not in the file
    assert user_text(inv) == (
        "Look up the stock price for AMZN, then calculate what 1000 shares would be worth by multiplying the price "
        "by 1000."
    )
    # The specialists' own tools (lookup_stock_price, multiply_numbers) are inside the ask_* tools: not top-level.
    assert calls(inv) == [
        ("ask_research_specialist", {"query": "current stock price of AMZN"}, "call_s6F0eFD5axqDZTStwEzNBOBw"),
        ("ask_math_specialist", {"query": "240.98 multiplied by 1000"}, "call_FbrAp5TcHzzAQ8DDdAsEY0F3"),
    ]
    names_and_ids = [(name, call_id) for name, _, call_id in responses(inv)]
    assert names_and_ids == [
        ("ask_research_specialist", "call_s6F0eFD5axqDZTStwEzNBOBw"),
        ("ask_math_specialist", "call_FbrAp5TcHzzAQ8DDdAsEY0F3"),
    ]
    first, second = (response for _, response, _ in responses(inv))
    assert first == {"result": "The current stock price of Amazon (AMZN) is $240.98."}
    assert second is not None and second["result"].endswith("Therefore, \\( 240.98 \\times 1000 = 240980 \\).")
    assert final_text(inv) == (
        "The current stock price of Amazon (AMZN) is $240.98. Therefore, 1,000 shares would be worth $240,980."
    )
    assert inv.agent_name == "coordinator"
    assert inv.model_call_count == 8  # 3 coordinator + 2 research + 3 math model calls
    assert inv.token_usage.input_tokens == 225 + 141 + 174 + 275 + 187 + 217 + 246 + 405


def test_openai_agents_genai_adot_handoff() -> None:
    inv = only("openai_agents_genai_adot_spans.json", "genai")
    assert inv.span_id == "24e36a98a3709aeb"  # "Agent workflow" under the starlette POST span
    assert user_text(inv) == "What is 42 * 7, and what's the weather in Seattle?"
    # The coordinator's calls are only in printed ResponseFunctionToolCall(...) text; the math specialist took over.
    assert calls(inv) == [
        ("transfer_to_math_specialist", {}, "call_51GcOnoD74w70pXxuVysYF9l"),
        ("transfer_to_research_specialist", {}, "call_hkef8huCY9wRqq3nUYpPSnSQ"),
        ("multiply_numbers", {"a": 42, "b": 7}, "call_jJ9VuMX3v20km2IbQsVqFji1"),
    ]
    assert responses(inv) == [("multiply_numbers", {"result": "294.0"}, "call_jJ9VuMX3v20km2IbQsVqFji1")]
    assert final_text(inv) == (
        "The product of 42 and 7 is 294. \n\nAs for the weather in Seattle, I recommend checking a current weather "
        "service or website for real-time information."
    )
    assert intermediate(inv) == []
    assert inv.session_id == "7cdeb989-856d-4e70-9b40-02b70cb12287"
    assert inv.agent_name == "coordinator"


# --- OpenInference -------------------------------------------------------------------------------------------------


def test_openai_agents_openinference_live() -> None:
    inv = only("openai_agents_openinference_live_spans.json", "openinference")
    assert inv.span_id == "25060f453384d2ff"
    assert user_text(inv) == "What is 42 multiplied by 17, then divided by 3?"
    assert calls(inv) == [
        ("ask_math_specialist", {"query": "42 multiplied by 17, then divided by 3"}, "call_Xw9gngSGFTuCw1vZ30iZHqhk")
    ]
    ((name, response, call_id),) = responses(inv)
    assert (name, call_id) == ("ask_math_specialist", "call_Xw9gngSGFTuCw1vZ30iZHqhk")
    assert response is not None and response["result"].startswith("First, I calculated \\( 42 \\times 17 \\):")
    assert final_text(inv) == (
        "The result of \\( 42 \\) multiplied by \\( 17 \\), then divided by \\( 3 \\), is **238**."
    )
    assert inv.agent_name == "coordinator"
    assert inv.model_call_count == 5
    assert (inv.token_usage.input_tokens, inv.token_usage.output_tokens) == (1228, 194)


def test_openai_agents_openinference_adot_handoff() -> None:
    inv = only("openai_agents_openinference_adot_spans.json", "openinference")
    assert user_text(inv) == "What is 42 * 7, and what's the weather in Seattle?"
    assert calls(inv) == [
        ("transfer_to_math_specialist", {}, "call_BcvqKc5BjhX0NeiqTG2eaeFA"),
        ("transfer_to_research_specialist", {}, "call_HxtaQFaymn4MK1H6XUUGChBm"),
        ("multiply_numbers", {"a": 42, "b": 7}, "call_6OK7LCjPfCaxaJID3WPkrmds"),
    ]
    # Handoff results exist only as tool messages re-sent to the math specialist's model calls.
    assert responses(inv) == [
        ("transfer_to_math_specialist", {"assistant": "math_specialist"}, "call_BcvqKc5BjhX0NeiqTG2eaeFA"),
        (
            "transfer_to_research_specialist",
            {"result": "Multiple handoffs detected, ignoring this one."},
            "call_HxtaQFaymn4MK1H6XUUGChBm",
        ),
        ("multiply_numbers", {"result": "294.0"}, "call_6OK7LCjPfCaxaJID3WPkrmds"),
    ]
    assert final_text(inv) == (
        "The product of \\(42 \\times 7\\) is \\(294\\). As for the weather, I can’t access current weather "
        "information. You might check a reliable weather service for that."
    )
    assert inv.session_id == "29fb7129-8624-4bd2-b37b-dea182f63ce8"


def test_openinference_langgraph_live() -> None:
    inv = only("openinference_live_spans.json", "openinference")
    assert user_text(inv) == "What is the weather difference between Taipei and Seattle?"
    assert calls(inv) == [
        ("get_weather", {"city": "Taipei"}, "toolu_001"),
        ("finish", {"answer": "Taipei is warmer"}, "toolu_002"),
    ]
    # The TOOL span's output is a serialised LangChain ToolMessage: its content is the result.
    assert responses(inv) == [("finish", {"result": "Taipei is warmer than Seattle."}, "toolu_002")]
    # The root LangGraph chain's output is the answer; both model texts came with tool calls.
    assert final_text(inv) == "Taipei is warmer than Seattle overall."
    assert [text for _, text, _ in intermediate(inv)] == [
        "I'll check the weather for both cities.",
        "Taipei is warmer than Seattle. Taipei averages 25C while Seattle averages 12C.",
    ]


def test_openinference_langgraph_adot_event_bodies() -> None:
    traces = rebuild("openinference_adot_spans.json")
    assert [t.convention for t in traces] == ["openinference", "openinference"]
    first, second = (t.invocations for t in traces)
    (weather,) = first
    assert user_text(weather) == "What is the weather in Alaska?"
    assert calls(weather) == [("get_weather", {"city": "Alaska"}, "tc_01")]
    assert responses(weather) == [("get_weather", {"result": "Weather in Alaska: -5C, snowy"}, "tc_01")]
    assert final_text(weather) == "The weather in Alaska is -5C and snowy."
    assert [text for _, text, _ in intermediate(weather)] == ["Let me check the weather for you."]
    (joke,) = second
    assert user_text(joke) == "Tell me a joke"
    assert calls(joke) == []
    assert final_text(joke) == "Why did the chicken cross the road? To get to the other side!"


def test_smolagents_code_agent() -> None:
    inv = only("smolagents_live_spans.json", "openinference")
    answer = (
        "The population of Tokyo is approximately 14 million people as of 2023. (The city proper has over 14 million "
        "residents, while the greater Tokyo metropolitan area has approximately 37 million people.)"
    )
    assert user_text(inv) == "What is the population of Tokyo?"  # the task, not the templated "New task:\n..."
    # {"args", "kwargs"} wrappers unwrapped; final_answer's positional arg named from tool.parameters.
    assert calls(inv) == [
        ("web_search", {"query": "population of Tokyo"}, None),
        ("final_answer", {"answer": answer}, None),
    ]
    (search_name, search_response, _), final_answer = responses(inv)
    assert search_name == "web_search"
    assert search_response is not None and search_response["result"].startswith("## Search Results")
    assert final_answer == ("final_answer", {"result": answer}, None)
    assert final_text(inv) == answer
    assert (inv.token_usage.input_tokens, inv.token_usage.output_tokens) == (2366 + 3890, 52 + 111)


def test_claude_agent_sdk_live() -> None:
    inv = only("claude_live_spans.json", "openinference")
    assert user_text(inv) == ("Look up the weather in New York and Seattle, then calculate the temperature difference.")
    # No LLM spans: the query span's own output messages are the model's turns. Sub-agents' Bash calls are nested.
    assert calls(inv) == [
        (
            "Agent",
            {
                "description": "Get current weather in New York",
                "subagent_type": "research-specialist",
                "prompt": "What is the current temperature in New York City?",
                "run_in_background": False,
            },
            "toolu_mock_agent_ny",
        ),
        (
            "Agent",
            {
                "description": "Get current weather in Seattle",
                "subagent_type": "research-specialist",
                "prompt": "What is the current temperature in Seattle, Washington?",
                "run_in_background": False,
            },
            "toolu_mock_agent_seattle",
        ),
        (
            "Agent",
            {
                "description": "Calculate temperature difference",
                "subagent_type": "math-specialist",
                "prompt": "Calculate 89 minus 72.",
                "run_in_background": False,
            },
            "toolu_mock_agent_math",
        ),
    ]
    results = response_by_id(inv)
    assert results["toolu_mock_agent_ny"]["content"] == [
        {"type": "text", "text": "89°F, partly cloudy with high humidity"}
    ]
    assert results["toolu_mock_agent_seattle"]["content"] == [{"type": "text", "text": "72°F, partly cloudy"}]
    assert results["toolu_mock_agent_math"]["content"] == [{"type": "text", "text": "17"}]
    assert final_text(inv) == (
        "New York is 89°F and Seattle is 72°F. The temperature difference is 17°F — New York is warmer."
    )
    assert [text for _, text, _ in intermediate(inv)] == [
        "I'll look up the weather in both cities and then calculate the difference.",
        "Got both temperatures! Now let me calculate the difference.",
    ]
    assert inv.session_id == "mock-session-001"
    assert inv.model_call_count == 0
    assert (inv.token_usage.input_tokens, inv.token_usage.output_tokens) == (132, 850)


def test_claude_agent_sdk_adot() -> None:
    inv = only("claude_adot_spans.json", "openinference")
    assert user_text(inv) == "What is 42 * 7, and how many miles is that in kilometers?"
    assert [(name, (args or {}).get("subagent_type"), call_id) for name, args, call_id in calls(inv)] == [
        ("Agent", "math-agent", "toolu_bdrk_013DnTxpqTDkwezwKkHizcHT"),
        ("Agent", "conversion-agent", "toolu_bdrk_01RQYH5cNSJ2iYbufJ8VbEk4"),
    ]
    results = response_by_id(inv)
    assert results["toolu_bdrk_013DnTxpqTDkwezwKkHizcHT"]["content"] == [{"type": "text", "text": "42 * 7 = **294**"}]
    assert results["toolu_bdrk_01RQYH5cNSJ2iYbufJ8VbEk4"]["agentType"] == "conversion-agent"
    assert final_text(inv).startswith("Here are your results:\n\n1. **42 × 7 = 294**")
    thoughts = [text for _, text, thought in intermediate(inv) if thought]
    texts = [text for _, text, thought in intermediate(inv) if not thought]
    assert len(thoughts) == 1 and thoughts[0].startswith("The user wants two things:")
    assert texts == [
        "I'll delegate both tasks simultaneously — the math to **math-agent** and the unit conversion to "
        "**conversion-agent** (since 42 × 7 = 294, I can kick off both in parallel)!"
    ]
    assert inv.session_id == "e457cade-6652-42ad-b879-182dde7124c5"


@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in DATA.glob("*.json") if p.name != "adk_live_spans.json"),
)
def test_every_file_rebuilds_without_warnings_except_autogen(name: str) -> None:
    traces = rebuild(name)
    assert traces
    invocations = [inv for t in traces for inv in t.invocations]
    assert invocations
    for inv in invocations:
        assert len(inv.trace_id) == 32 and len(inv.span_id) == 16
        assert inv.end_time_ns >= inv.start_time_ns > 0
        if name != "autogen_live_spans.json":
            assert inv.content_captured
            assert inv.warnings == []
            assert content_text(inv.invocation.user_content)
            assert content_text(inv.invocation.final_response)
