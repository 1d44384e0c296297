"""A real ADK turn in which no model was called (a ``before_model_callback`` guardrail answered it) is an invocation
of its own in ADK's eval; it must be one in the rebuild too, in both telemetry schemas, with what the spans hold."""

from __future__ import annotations

import pytest
from google.adk.evaluation.evaluation_generator import EvaluationGenerator

from otel_eval.reconstruct import capture_hints, rebuild_traces
from tests.reconstruct.adk_agents import adk_telemetry, run_turns
from tests.reconstruct.adk_workflows import BLOCKED, guardrail_scenario
from tests.reconstruct.test_adk_parity import SCHEMAS, as_adk, normalise, rebuilt

pytestmark = pytest.mark.usefixtures("quiet_adk")


@pytest.mark.parametrize("schema", sorted(SCHEMAS))
async def test_a_turn_a_guardrail_answered_is_an_invocation(
    schema: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(capture_hints, "_HINT", capture_hints._Hint())  # as in a process that has rebuilt nothing
    with adk_telemetry(schema=schema):
        run = await run_turns(guardrail_scenario())
    expected = EvaluationGenerator.convert_events_to_eval_invocations(run.session_events)
    assert [inv.final_response.parts[0].text for inv in expected if inv.final_response] == [
        BLOCKED,
        "It is sunny in Paris.",
    ]
    blocked, answered = rebuilt(run, SCHEMAS[schema])

    assert normalise(as_adk(answered)) == normalise(expected[1])
    assert blocked.session_id == answered.session_id == run.session_id
    assert blocked.agent_name == "guarded_agent"
    assert blocked.invocation.intermediate_data is not None
    assert blocked.invocation.intermediate_data.tool_uses == []
    assert blocked.start_time_ns < answered.start_time_ns
    if schema == 1:  # the legacy call_llm span is written around the callback, with its answer
        assert normalise(as_adk(blocked)) == normalise(expected[0])
    else:  # v2 writes no generate_content span for it: the content is unknown, and said to be
        assert blocked.model_call_count == 0 and blocked.content_captured is False
        assert blocked.invocation.final_response is None and not blocked.invocation.user_content.parts
        [warning] = blocked.warnings
        assert "before_model_callback" in warning and "no model call span" in warning
    # Content capture is on: the turn without a model call is no reason to say how to turn it on.
    assert "carries no message content" not in caplog.text


async def test_a_run_answered_by_before_agent_callback_is_read_as_adk() -> None:
    """The legacy schema's only spans are then ADK's ``invocation`` and ``invoke_agent``: read as ADK, not as
    generic GenAI spans whose content capture is off."""
    from google.genai import types as genai_types

    from tests.reconstruct.adk_agents import Scenario, _agent

    def disabled(callback_context: object) -> genai_types.Content:
        return genai_types.Content(role="model", parts=[genai_types.Part(text="Agent disabled.")])

    scenario = Scenario("disabled", _agent("disabled_agent", [], before_agent_callback=disabled), ["hi"])
    for schema, convention in SCHEMAS.items():
        with adk_telemetry(schema=schema):
            run = await run_turns(scenario)
        [trace] = rebuild_traces(run.spans)
        assert trace.convention == convention
        [invocation] = trace.invocations
        assert invocation.session_id == run.session_id and invocation.agent_name == "disabled_agent"
        assert any("before_agent_callback" in w for w in invocation.warnings)
