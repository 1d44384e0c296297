"""Multi-turn ADK sessions recorded from real ADK runners (scripted models), interleaved in time.

Three sessions of 2 to 4 turns run through real ``Runner``s, their turns interleaved (one session's turn between
another's), and one session resumes after a pause (``PAUSE_SECONDS``: the gap a session window would close on).
Each runner carries ADK's own ``_RequestIntercepterPlugin``, as ADK's evaluation flow does, so ADK's invocations of
each session come with the app details ADK builds itself (instructions, in-memory tool declarations):
``EvaluationGenerator._get_app_details_by_invocation_id`` + ``convert_events_to_eval_invocations``, exactly as
``EvaluationGenerator`` does in an eval run.

Typical use::

    with adk_telemetry(schema=2):
        sessions = await record_sessions()
    sessions.spans           # every span of every turn (one trace per turn)
    sessions.invocations     # session name -> ADK's own invocations of it
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from google.adk.evaluation.evaluation_generator import EvaluationGenerator
from google.adk.evaluation.request_intercepter_plugin import _RequestIntercepterPlugin
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.genai import types as genai_types
from opentelemetry.sdk.trace import ReadableSpan

from tests.reconstruct.adk_agents import (
    APP_NAME,
    USER_ID,
    Scenario,
    _agent,
    call,
    get_time,
    get_weather,
    reply,
    span_exporter,
)

PAUSE_SECONDS = 1.5
"""How long the ``trip`` session pauses before its last turn."""


def trip_session() -> Scenario:
    """Two turns: the coordinator transfers to the weather agent, which answers both (the resumed session)."""
    weather = _agent(
        "weather_agent",
        [
            call(("get_weather", {"city": "Oslo"})),
            reply("Oslo: rain, 21 C."),
            reply("Tomorrow looks dry in Oslo."),
        ],
        tools=[get_weather],
    )
    root = _agent(
        "coordinator",
        [call(("transfer_to_agent", {"agent_name": "weather_agent"}), text="Handing over to the weather expert.")],
        sub_agents=[weather],
    )
    return Scenario("trip", root, ["How is the weather in Oslo?", "And tomorrow?"])


def plan_session() -> Scenario:
    """Three turns: a tool turn, a direct answer, another tool turn."""
    agent = _agent(
        "planner_agent",
        [
            call(("get_weather", {"city": "Paris"})),
            reply("Sunny in Paris, 21 C."),
            reply("You are welcome."),
            call(("get_time", {"city": "Paris"}), text="Checking the clock."),
            reply("It is 10:30 in Paris."),
        ],
        tools=[get_weather, get_time],
    )
    return Scenario("plan", agent, ["Weather in Paris?", "Thanks!", "And the time there?"])


def chat_session() -> Scenario:
    """Four turns: a greeting, parallel tool calls, an answer from them, a goodbye."""
    agent = _agent(
        "chat_agent",
        [
            reply("Hello! How can I help?"),
            call(("get_weather", {"city": "Rome"}), ("get_time", {"city": "Lima"})),
            reply("Rome is rainy; it is 10:30 in Lima."),
            reply("No, Rome is rainy today."),
            reply("Goodbye!"),
        ],
        tools=[get_weather, get_time],
    )
    return Scenario("chat", agent, ["Hi", "Weather in Rome and the time in Lima?", "Is Rome sunny?", "Bye"])


SCHEDULE: list[tuple[str, int]] = [
    ("plan", 0),
    ("chat", 0),
    ("trip", 0),
    ("plan", 1),
    ("chat", 1),
    ("chat", 2),
    ("pause", 0),
    ("trip", 1),
    ("plan", 2),
    ("chat", 3),
]
"""Which session's which turn runs when: interleaved, with the ``trip`` session resuming after the pause."""


@dataclass
class RecordedSessions:
    """The spans of every turn and ADK's own invocations (with app details) of each session."""

    spans: list[ReadableSpan] = field(default_factory=list)
    invocations: dict[str, list[Any]] = field(default_factory=dict)
    session_ids: dict[str, str] = field(default_factory=dict)


async def record_sessions() -> RecordedSessions:
    """Runs :data:`SCHEDULE` (the caller sets the telemetry schema with ``adk_telemetry``)."""
    exporter = span_exporter()
    exporter.clear()
    scenarios = {s.name: s for s in (trip_session(), plan_session(), chat_session())}
    service = InMemorySessionService()
    plugins = {name: _RequestIntercepterPlugin(name="request_intercepter_plugin") for name in scenarios}
    runners = {
        name: Runner(app_name=APP_NAME, agent=s.agent, session_service=service, plugins=[plugins[name]])
        for name, s in scenarios.items()
    }
    recorded = RecordedSessions()
    for name in scenarios:
        session = await service.create_session(app_name=APP_NAME, user_id=USER_ID, session_id=f"session-{name}")
        recorded.session_ids[name] = session.id
    try:
        for name, turn in SCHEDULE:
            if name == "pause":
                await asyncio.sleep(PAUSE_SECONDS)
                continue
            message = genai_types.Content(role="user", parts=[genai_types.Part(text=scenarios[name].turns[turn])])
            async for _event in runners[name].run_async(
                user_id=USER_ID, session_id=recorded.session_ids[name], new_message=message
            ):
                pass
    finally:
        for runner in runners.values():
            await runner.close()
    for name in scenarios:
        stored = await service.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=recorded.session_ids[name])
        assert stored is not None
        events = list(stored.events)
        app_details = EvaluationGenerator._get_app_details_by_invocation_id(events, plugins[name])
        recorded.invocations[name] = EvaluationGenerator.convert_events_to_eval_invocations(events, app_details)
    recorded.spans = list(exporter.get_finished_spans())
    return recorded
