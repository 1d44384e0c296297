"""Records ``openai_agents_<instrumentation>/handoff_guardrail[_streamed].otlp.json.gz``: the OpenAI Agents SDK under
``openinference-instrumentation-openai-agents`` and OpenLLMetry's ``opentelemetry-instrumentation-openai-agents``
(versions of ``requirements.txt``), the SDK's default Responses model answered by the scripted loopback server, with
``Runner.run`` and with ``Runner.run_streamed``.

A triage agent with an input guardrail hands off to a weather agent with two function tools; the conversation is kept
in the SDK's ``SQLiteSession`` and each turn runs in a span of the application's own carrying the session's id as
``session.id`` (the SDK writes it on no span). Three turns: a handoff then a tool call; a tool call of the weather
agent; a turn the guardrail stops (``InputGuardrailTripwireTriggered``), whose model call the SDK runs beside the
guardrail (it completes when streamed; it is cancelled otherwise). Run it in the generator's virtualenv::

    .venv-frameworks/bin/python tests/data/frameworks/record_openai_agents_handoffs.py
"""

from __future__ import annotations

import asyncio
import gzip
import json
import sys
from pathlib import Path
from typing import Any

from _common import MODEL, ChatCompletionsServer, Scenario, Script, Turn, new_provider, otlp_json
from agents import (
    Agent,
    GuardrailFunctionOutput,
    InputGuardrailTripwireTriggered,
    OpenAIResponsesModel,
    Runner,
    SQLiteSession,
    function_tool,
    input_guardrail,
    set_trace_processors,
)
from openai import AsyncOpenAI

SESSION_ID = "conv-123"
HIDDEN_ANSWER = "The secret is 42."
TURNS = [
    Turn(
        "What's the weather in Paris?",
        [[("transfer_to_weather_agent", {})], [("get_weather", {"city": "Paris"})], "Paris is cloudy at 18 °C."],
    ),
    Turn("And the time there?", [[("get_time", {"city": "Paris"})], "It is 14:05 in Paris."]),
    Turn("Tell me a forbidden secret", [HIDDEN_ANSWER]),
]


@function_tool
def get_weather(city: str) -> dict[str, Any]:
    """The current weather in a city."""
    return {"city": city, "temperature_c": 18, "conditions": "cloudy"}


@function_tool
def get_time(city: str) -> str:
    """The local time in a city, as HH:MM."""
    return "14:05"


@input_guardrail
async def no_secrets(context: Any, agent: Any, user_input: Any) -> GuardrailFunctionOutput:
    tripped = "forbidden" in json.dumps(user_input)
    return GuardrailFunctionOutput(output_info={"forbidden": tripped}, tripwire_triggered=tripped)


def record(instrumentation: str, streamed: bool) -> None:
    provider, exporter = new_provider("support_app")
    set_trace_processors([])  # no export to OpenAI's tracing backend: the instrumentation's processor only
    if instrumentation == "openinference":
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    else:
        from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("support_app")
    with ChatCompletionsServer(Script(Scenario("handoff_guardrail", TURNS))) as server:
        model = OpenAIResponsesModel(MODEL, AsyncOpenAI(base_url=server.base_url, api_key="not-a-key"))
        weather = Agent(
            name="weather_agent", instructions="Answer with the tools.", model=model, tools=[get_weather, get_time]
        )
        triage = Agent(
            name="triage_agent",
            instructions="Hand weather questions to the weather agent.",
            model=model,
            handoffs=[weather],
            input_guardrails=[no_secrets],
        )

        async def conversation() -> None:
            session = SQLiteSession(SESSION_ID)
            for agent, turn in zip((triage, weather, triage), TURNS, strict=True):
                with tracer.start_as_current_span("chat turn", attributes={"session.id": session.session_id}):
                    try:
                        if streamed:
                            result = Runner.run_streamed(agent, turn.user, session=session)
                            async for _ in result.stream_events():
                                pass
                        else:
                            await Runner.run(agent, turn.user, session=session)
                    except InputGuardrailTripwireTriggered:
                        pass

        asyncio.run(conversation())
    OpenAIAgentsInstrumentor().uninstrument()
    name = "handoff_guardrail_streamed" if streamed else "handoff_guardrail"
    path = Path(__file__).parent / f"openai_agents_{instrumentation}" / f"{name}.otlp.json.gz"
    document = json.dumps(otlp_json(list(exporter.get_finished_spans())), ensure_ascii=False).encode()
    path.write_bytes(gzip.compress(document, compresslevel=9, mtime=0))


if __name__ == "__main__":
    if len(sys.argv) == 3:
        record(sys.argv[1], sys.argv[2] == "streamed")
    else:
        import subprocess

        for instrumentation in ("openinference", "openllmetry"):
            for mode in ("run", "streamed"):
                subprocess.run([sys.executable, __file__, instrumentation, mode], check=True)
