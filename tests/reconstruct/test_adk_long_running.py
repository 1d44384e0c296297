"""A LongRunningFunctionTool answered later: the application's next ``run_async`` sends the function response, and
ADK resumes the first run's invocation. ADK's eval makes one invocation of both runs; each run is a trace of its own,
rebuilt and scored as it ends (docs/frameworks.md says so): two invocations with ADK's one invocation id."""

from __future__ import annotations

import pytest
from google.adk.evaluation.evaluation_generator import EvaluationGenerator
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.genai import types as genai_types

from otel_eval.traces import spans_from_readable
from tests.reconstruct.adk_agents import APP_NAME, USER_ID, AdkRun, adk_telemetry, reply, span_exporter
from tests.reconstruct.adk_workflows import long_running_tool_scenario
from tests.reconstruct.test_adk_parity import SCHEMAS, as_adk, normalise, rebuilt

pytestmark = pytest.mark.usefixtures("quiet_adk")


@pytest.mark.parametrize("schema", sorted(SCHEMAS))
async def test_a_resumed_long_running_call_is_a_second_invocation_of_the_same_id(schema: int) -> None:
    scenario = long_running_tool_scenario()
    scenario.agent.model.responses.append(reply("Approved: 300 dollars reimbursed."))
    exporter = span_exporter()
    exporter.clear()
    service = InMemorySessionService()
    runner = Runner(app_name=APP_NAME, agent=scenario.agent, session_service=service)
    session = await service.create_session(app_name=APP_NAME, user_id=USER_ID)
    text = genai_types.Content(role="user", parts=[genai_types.Part(text=scenario.turns[0])])
    with adk_telemetry(schema=schema):
        pending = [e async for e in runner.run_async(user_id=USER_ID, session_id=session.id, new_message=text)]
        [call_id] = {i for e in pending for i in e.long_running_tool_ids or ()}
        approval = genai_types.FunctionResponse(id=call_id, name="ask_approval", response={"status": "approved"})
        answer = genai_types.Content(role="user", parts=[genai_types.Part(function_response=approval)])
        async for _ in runner.run_async(user_id=USER_ID, session_id=session.id, new_message=answer):
            pass
    await runner.close()
    stored = await service.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=session.id)
    assert stored is not None
    [adks] = EvaluationGenerator.convert_events_to_eval_invocations(stored.events)
    run = AdkRun(scenario, session.id, list(stored.events), list(exporter.get_finished_spans()))
    assert len({s.trace_id for s in spans_from_readable(run.readable_spans)}) == 2

    first, resumed = (normalise(as_adk(inv)) for inv in rebuilt(run, SCHEMAS[schema]))
    expected = normalise(adks)
    assert first["invocation_id"] == resumed["invocation_id"] == expected["invocation_id"]
    assert first["tool_calls"] == expected["tool_calls"] == [("ask_approval", {"amount": 300})]
    assert first["final_response"]["parts"] == [{"text": "Your request T-1 is pending approval."}]
    assert resumed["final_response"] == expected["final_response"]
    assert resumed["user_content"] == first["user_content"] == {"parts": [{"text": scenario.turns[0]}], "role": "user"}
    assert expected["user_content"]["parts"][0]["function_response"]["response"] == {"status": "approved"}
