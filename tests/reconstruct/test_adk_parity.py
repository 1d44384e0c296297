"""ADK parity, generated live: real google-adk agents run with a scripted model; the invocations rebuilt from their
spans must equal what ``EvaluationGenerator.convert_events_to_eval_invocations`` builds from their session events.

Both ADK telemetry schemas (1 = legacy ``call_llm`` JSON, 2 = semconv-aligned GenAI messages) and every scenario of
``tests/reconstruct/adk_agents.py``. ADK 2.13 returns ``InvocationEvents`` and we return ``IntermediateData``, so both
are compared through ADK's own accessors: user content, final response content, ``get_all_tool_calls`` (name, args),
``get_all_tool_responses`` (name, response), call/response pairing with ADK's ids (``get_all_tool_calls_with_responses``),
intermediate texts with their authors, invocation id. Schema 2 with ``EVENT_ONLY`` content (on log records, joined
onto the spans) must give the same.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.evaluation import eval_case as adk_eval_case
from google.adk.evaluation.evaluation_generator import EvaluationGenerator
from google.adk.evaluation.llm_as_judge_utils import get_text_from_content

from otel_eval.model import TracedInvocation
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces.log_records import attach_log_records, log_record_from_sdk
from tests.reconstruct.adk_agents import SCENARIOS, AdkRun, ScriptedLlm, adk_telemetry, run_turns
from tests.reconstruct.adk_workflows import WORKFLOW_SCENARIOS

SCHEMAS = {1: "adk", 2: "adk_v2"}
ALL_SCENARIOS = {**SCENARIOS, **WORKFLOW_SCENARIOS}


# ADK logs the traceback of the tool_error scenario's (expected) exception at ERROR level.
pytestmark = pytest.mark.usefixtures("quiet_adk")


def normalise(invocation: adk_eval_case.Invocation) -> dict[str, Any]:
    """What must be equal, read through ADK's own accessors so that InvocationEvents and IntermediateData compare."""
    data = invocation.intermediate_data
    if isinstance(data, adk_eval_case.InvocationEvents):
        texts = [
            (event.author, get_text_from_content(event.content))
            for event in data.invocation_events
            if get_text_from_content(event.content)
        ]
    else:
        assert data is not None
        texts = [(author, "\n".join(p.text for p in parts if p.text)) for author, parts in data.intermediate_responses]
    return {
        "invocation_id": invocation.invocation_id,
        "user_content": invocation.user_content.model_dump(exclude_none=True),
        "final_response": None
        if invocation.final_response is None
        else invocation.final_response.model_dump(exclude_none=True),
        "tool_calls": [(c.name, c.args) for c in adk_eval_case.get_all_tool_calls(data)],
        "tool_responses": [(r.name, r.response) for r in adk_eval_case.get_all_tool_responses(data)],
        # Calls pair with responses by id exactly as in ADK, with ADK's own "adk-..." ids (a call whose tool raised
        # has no response, and its id appears in no span).
        "answered_calls": [
            (call.id, call.name, response.id)
            for call, response in adk_eval_case.get_all_tool_calls_with_responses(data)
            if response is not None
        ],
        "unanswered_calls": [
            call.name for call, response in adk_eval_case.get_all_tool_calls_with_responses(data) if response is None
        ],
        "intermediate_texts": texts,
    }


def as_adk(traced: TracedInvocation) -> adk_eval_case.Invocation:
    """Our invocation parsed by ADK itself (wire compatibility is part of parity)."""
    return adk_eval_case.Invocation.model_validate(traced.invocation.model_dump(mode="json"))


def rebuilt(run: AdkRun, convention: str) -> list[TracedInvocation]:
    traces = rebuild_traces(run.spans)
    assert {t.convention for t in traces} == {convention}
    return sorted((inv for t in traces for inv in t.invocations), key=lambda inv: inv.start_time_ns)


async def _run(name: str, schema: int) -> AdkRun:
    with adk_telemetry(schema=schema, capture_content=True):
        return await run_turns(ALL_SCENARIOS[name]())


@pytest.mark.parametrize("schema", sorted(SCHEMAS))
@pytest.mark.parametrize("name", sorted(ALL_SCENARIOS))
async def test_rebuilt_invocations_equal_adks_own(name: str, schema: int) -> None:
    run = await _run(name, schema)
    expected = EvaluationGenerator.convert_events_to_eval_invocations(run.session_events)
    actual = rebuilt(run, SCHEMAS[schema])

    assert [normalise(as_adk(inv)) for inv in actual] == [normalise(inv) for inv in expected]
    assert len(actual) == len(run.scenario.turns)
    for traced in actual:
        assert traced.content_captured is True
        assert traced.session_id == run.session_id
        assert traced.warnings == []


@pytest.mark.parametrize("schema", sorted(SCHEMAS))
async def test_scenarios_exercise_what_they_claim(schema: int) -> None:
    """Guards the parity test against vacuous scenarios: the ADK side really has these shapes."""
    shapes = {}
    names = ("parallel_tools", "transfer", "agent_tool", "tool_error", "tool_error_handled", "sequential_tools")
    names += ("parallel_tool_error", "nested_workflow", "transfer_back", "before_tool", "agent_tool_workflow")
    for name in (*names, "skip_summarization"):
        run = await _run(name, schema)
        [expected] = EvaluationGenerator.convert_events_to_eval_invocations(run.session_events)
        shapes[name] = normalise(expected)
    assert [c[0] for c in shapes["parallel_tools"]["tool_calls"]] == ["get_weather", "get_weather", "get_time"]
    assert [c[0] for c in shapes["transfer"]["tool_calls"]] == ["transfer_to_agent", "get_weather"]
    assert shapes["transfer"]["intermediate_texts"] == [("coordinator", "Handing over to the weather expert.")]
    # AgentTool: the inner agent's get_time call is not in the parent's trajectory, only the agent-tool call.
    assert [c[0] for c in shapes["agent_tool"]["tool_calls"]] == ["clock_agent"]
    assert shapes["tool_error"]["tool_responses"] == [] and shapes["tool_error"]["final_response"] is None
    assert shapes["tool_error"]["unanswered_calls"] == ["flaky_lookup"]
    # on_tool_error_callback: ADK's events hold the callback's dict as the function response of the failed tool.
    assert shapes["tool_error_handled"]["tool_responses"] == [
        ("flaky_lookup", {"error": "ToolFailedError: lookup backend unavailable for 'otel'", "retryable": False})
    ]
    assert all(call_id.startswith("adk-") for call_id, _, _ in shapes["parallel_tools"]["answered_calls"])
    # skip_summarization: ADK's final response is the function-response event (plus the agent tool's text), and
    # the final event's content is left out of the intermediate events, so the call has no response there.
    final = shapes["skip_summarization"]["final_response"]
    assert final["parts"][0]["function_response"]["name"] == "clock_agent"
    assert final["parts"][1] == {"text": "It is 10:30 in Tokyo."}
    assert shapes["skip_summarization"]["unanswered_calls"] == ["clock_agent"]
    assert shapes["sequential_tools"]["intermediate_texts"] == [("weather_agent", "Let me check the weather first.")]
    # A tool raising beside another: ADK keeps the other's response, and the run ends on no final response.
    assert shapes["parallel_tool_error"]["tool_responses"] == [
        ("get_weather", {"city": "Paris", "sky": "sunny", "temperature_c": 21})
    ]
    assert shapes["parallel_tool_error"]["final_response"] is None
    assert [c[0] for c in shapes["nested_workflow"]["tool_calls"]] == ["exit_loop", "get_weather", "get_time"]
    assert ("critic", "Needs work.") in shapes["nested_workflow"]["intermediate_texts"]
    assert [c[0] for c in shapes["transfer_back"]["tool_calls"]] == [
        "transfer_to_agent",
        "get_weather",
        "transfer_to_agent",
    ]
    assert ("get_weather", {"city": "Paris", "sky": "cached"}) in shapes["before_tool"]["tool_responses"]
    assert [c[0] for c in shapes["agent_tool_workflow"]["tool_calls"]] == ["research_pipeline"]


@pytest.mark.parametrize("schema", sorted(SCHEMAS))
async def test_metadata_from_the_spans(schema: int) -> None:
    run = await _run("agent_tool", schema)
    [traced] = rebuilt(run, SCHEMAS[schema])
    root = next(s for s in run.spans if s.span_id == traced.span_id)

    assert root.parent_span_id is None and root.name.startswith(("invocation", "invoke_workflow"))
    assert traced.trace_id == root.trace_id
    assert traced.agent_name == "assistant"
    assert traced.model == "scripted-model-1"
    assert traced.model_call_count == 2  # the inner clock_agent's two calls belong to its own (dropped) run
    assert traced.token_usage.input_tokens == 20 and traced.token_usage.output_tokens == 10
    assert (traced.start_time_ns, traced.end_time_ns) == (root.start_time_ns, root.end_time_ns)
    invocation = traced.invocation
    assert invocation.duration == round(root.duration_ns / 1e9, 3)
    assert invocation.creation_timestamp == root.start_time_ns / 1e9
    assert traced.model_seconds is not None and traced.tool_seconds is not None
    assert 0 < traced.model_seconds + traced.tool_seconds <= root.duration_ns / 1e9


@pytest.mark.parametrize("schema", sorted(SCHEMAS))
async def test_app_details_are_the_first_request_of_each_agent(schema: int) -> None:
    scenario = SCENARIOS["transfer"]()
    with adk_telemetry(schema=schema, capture_content=True):
        run = await run_turns(scenario)
    [traced] = rebuilt(run, SCHEMAS[schema])
    details = traced.invocation.app_details
    assert details is not None
    agents = {"coordinator": scenario.agent, "weather_agent": scenario.agent.sub_agents[0]}
    assert list(details.agent_details) == list(agents)
    for name, agent in agents.items():
        model = agent.model
        assert isinstance(model, ScriptedLlm)
        first_request = model.requests[0]
        got = details.agent_details[name]
        assert got.instructions == first_request.config.system_instruction
        declared = [
            d.name for t in first_request.config.tools or [] for d in getattr(t, "function_declarations", None) or []
        ]
        got_names = [d["name"] for t in got.tool_declarations for d in t.get("function_declarations", [])]
        assert got_names == declared and declared


@pytest.mark.parametrize("schema", sorted(SCHEMAS))
async def test_content_capture_off_says_so_and_keeps_tool_names(schema: int) -> None:
    with adk_telemetry(schema=schema, capture_content=False):
        run = await run_turns(SCENARIOS["sequential_tools"]())
    [traced] = rebuilt(run, SCHEMAS[schema])

    assert traced.content_captured is False
    assert any("not captured" in w for w in traced.warnings)
    invocation = as_adk(traced)
    assert invocation.invocation_id == run.session_events[0].invocation_id
    assert not invocation.user_content.parts  # unknown, never a wrong text
    assert invocation.final_response is None
    assert [c.name for c in adk_eval_case.get_all_tool_calls(invocation.intermediate_data)] == [
        "get_weather",
        "get_time",
    ]
    assert adk_eval_case.get_all_tool_responses(invocation.intermediate_data) == []
    assert traced.model_call_count == 3 and traced.token_usage.input_tokens == 30


@pytest.mark.parametrize("schema", sorted(SCHEMAS))
@pytest.mark.parametrize("name", ["sequential_tools", "parallel_tools", "transfer", "multi_turn"])
async def test_streamed_responses_equal_adks_own(name: str, schema: int) -> None:
    """SSE streaming: ADK's aggregator joins the word chunks into the event; the spans must rebuild the same."""
    with adk_telemetry(schema=schema, capture_content=True):
        run = await run_turns(SCENARIOS[name](), streaming=True)
    expected = EvaluationGenerator.convert_events_to_eval_invocations(run.session_events)
    actual = rebuilt(run, SCHEMAS[schema])

    assert [normalise(as_adk(inv)) for inv in actual] == [normalise(inv) for inv in expected]
    assert all(inv.warnings == [] for inv in actual)


@pytest.mark.parametrize("schema", sorted(SCHEMAS))
async def test_turns_sharing_one_trace_are_separate_invocations(schema: int) -> None:
    """An application span around all turns puts them in one trace: still one invocation per user turn."""
    with adk_telemetry(schema=schema, capture_content=True):
        run = await run_turns(SCENARIOS["multi_turn"](), outer_span="chat_session")
    traces = rebuild_traces(run.spans)
    assert len(traces) == 1
    [trace] = traces
    expected = EvaluationGenerator.convert_events_to_eval_invocations(run.session_events)

    assert [normalise(as_adk(inv)) for inv in trace.invocations] == [normalise(inv) for inv in expected]
    roots = {s.span_id: s for s in run.spans}
    assert len({inv.span_id for inv in trace.invocations}) == 3
    assert all(roots[inv.span_id].name.startswith(("invocation", "invoke_workflow")) for inv in trace.invocations)
    assert all(inv.session_id == run.session_id for inv in trace.invocations)


EVENT_ONLY_UNREBUILT = {"skip_summarization", "parallel_tool_error"}
"""Under EVENT_ONLY ADK records a tool result no later model call sees nowhere: an AgentTool's skipped-summarization
result, the result of a tool that ran beside one that raised."""


@pytest.mark.parametrize("name", sorted(set(ALL_SCENARIOS) - EVENT_ONLY_UNREBUILT))
async def test_event_only_content_joined_from_log_records_equals_adks_own(name: str) -> None:
    with adk_telemetry(schema=2, capture_mode="EVENT_ONLY"):
        run = await run_turns(ALL_SCENARIOS[name]())
    spans = run.spans
    assert not any(s.attr("gen_ai.input.messages") for s in spans)  # nothing on the spans
    records = [r for r in map(log_record_from_sdk, run.log_records) if r is not None]
    assert records and attach_log_records(spans, records) == []
    traces = rebuild_traces(spans)
    actual = sorted((inv for t in traces for inv in t.invocations), key=lambda inv: inv.start_time_ns)
    expected = EvaluationGenerator.convert_events_to_eval_invocations(run.session_events)

    assert [normalise(as_adk(inv)) for inv in actual] == [normalise(inv) for inv in expected]
    assert all(inv.content_captured and inv.warnings == [] for inv in actual)


async def test_event_only_tool_result_nothing_recorded_stays_unknown() -> None:
    with adk_telemetry(schema=2, capture_mode="EVENT_ONLY"):
        run = await run_turns(SCENARIOS["skip_summarization"]())
    spans = run.spans
    attach_log_records(spans, [r for r in map(log_record_from_sdk, run.log_records) if r is not None])
    (invocation,) = [inv for t in rebuild_traces(spans) for inv in t.invocations]
    assert invocation.invocation.final_response is None  # not invented: ADK put the agent tool's result nowhere
