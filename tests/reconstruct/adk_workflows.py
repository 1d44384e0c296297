"""More real google-adk scenarios (scripted models) for the parity tests: ADK's workflow and callback features.

Each builder returns a fresh :class:`~tests.reconstruct.adk_agents.Scenario`; :data:`WORKFLOW_SCENARIOS` maps names
to them, beside :data:`~tests.reconstruct.adk_agents.SCENARIOS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.adk.agents.loop_agent import LoopAgent
from google.adk.agents.parallel_agent import ParallelAgent
from google.adk.agents.sequential_agent import SequentialAgent
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools import LongRunningFunctionTool
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.exit_loop_tool import exit_loop
from google.genai import types as genai_types

from tests.reconstruct.adk_agents import (
    Scenario,
    ToolFailedError,
    _agent,
    call,
    flaky_lookup,
    get_time,
    get_weather,
    reply,
)

BLOCKED = "I cannot help with that."


def parallel_tool_error_scenario() -> Scenario:
    """Two tools called in one model turn, one raises: ADK stores the other's response and the run ends on no final
    response."""
    agent = _agent(
        "lookup_agent",
        [call(("get_weather", {"city": "Paris"}), ("flaky_lookup", {"query": "otel"})), reply("unreachable")],
        tools=[get_weather, flaky_lookup],
    )
    return Scenario("parallel_tool_error", agent, ["Weather in Paris, and look up otel"], expect_error=ToolFailedError)


def refuse_secrets(callback_context: Any, llm_request: LlmRequest) -> LlmResponse | None:
    """A ``before_model_callback`` guardrail: answers a request whose last message mentions secrets without calling
    the model."""
    last = llm_request.contents[-1] if llm_request.contents else None
    text = " ".join(p.text or "" for p in last.parts or []) if last is not None else ""
    if "secret" not in text.lower():
        return None
    return LlmResponse(content=genai_types.Content(role="model", parts=[genai_types.Part(text=BLOCKED)]))


def guardrail_scenario() -> Scenario:
    """Two turns: the guardrail answers the first without the model, the model answers the second with a tool."""
    agent = _agent(
        "guarded_agent",
        [call(("get_weather", {"city": "Paris"})), reply("It is sunny in Paris.")],
        tools=[get_weather],
        before_model_callback=refuse_secrets,
    )
    return Scenario("guardrail", agent, ["Tell me the admin secrets", "Weather in Paris?"])


def nested_workflow_scenario() -> Scenario:
    """A SequentialAgent of a LoopAgent (writer and critic, the critic calls ``exit_loop`` on its second pass), a
    ParallelAgent of two branches, and a summariser with a tool that reads the writer's ``output_key`` from state."""
    writer = _agent("writer", [reply("Draft 1"), reply("Draft 2")], output_key="draft")
    critic = _agent("critic", [reply("Needs work."), call(("exit_loop", {}), text="Good now.")], tools=[exit_loop])
    loop = LoopAgent(name="refine", sub_agents=[writer, critic], max_iterations=5)
    branches = ParallelAgent(
        name="checks",
        sub_agents=[
            _agent("style_check", [reply("Style is fine.")]),
            _agent(
                "weather_check", [call(("get_weather", {"city": "Rome"})), reply("Rome: rain.")], tools=[get_weather]
            ),
        ],
    )
    summariser = _agent(
        "summariser",
        [call(("get_time", {"city": "Oslo"})), reply("Final: Draft 2, at 10:30.")],
        tools=[get_time],
        instruction="Summarise {draft}.",
    )
    return Scenario(
        "nested_workflow", SequentialAgent(name="pipeline", sub_agents=[loop, branches, summariser]), ["Write"]
    )


def transfer_back_scenario() -> Scenario:
    """The coordinator transfers to a sub-agent, which calls a tool and transfers back; the coordinator answers."""
    weather = _agent(
        "weather_agent",
        [call(("get_weather", {"city": "Oslo"})), call(("transfer_to_agent", {"agent_name": "coordinator"}))],
        tools=[get_weather],
    )
    root = _agent(
        "coordinator",
        [call(("transfer_to_agent", {"agent_name": "weather_agent"})), reply("Back here: Oslo has rain.")],
        sub_agents=[weather],
    )
    return Scenario("transfer_back", root, ["Oslo weather?"])


def agent_tool_workflow_scenario() -> Scenario:
    """An AgentTool wrapping a SequentialAgent: the inner pipeline's tool call is not the parent's."""
    pipeline = SequentialAgent(
        name="research_pipeline",
        description="Finds the time.",
        sub_agents=[
            _agent("lookup_step", [call(("get_time", {"city": "Tokyo"})), reply("10:30")], tools=[get_time]),
            _agent("answer_step", [reply("It is 10:30 in Tokyo.")]),
        ],
    )
    root = _agent(
        "assistant",
        [call(("research_pipeline", {"request": "time in Tokyo"})), reply("The pipeline says 10:30.")],
        tools=[AgentTool(agent=pipeline)],
    )
    return Scenario("agent_tool_workflow", root, ["Time in Tokyo?"])


def ask_approval(amount: int) -> dict[str, Any]:
    """Asks a manager to approve a reimbursement (long-running: answers at once that it is pending)."""
    return {"status": "pending", "ticket": "T-1", "amount": amount}


def long_running_tool_scenario() -> Scenario:
    """A LongRunningFunctionTool returns a pending status; the model answers from it."""
    agent = _agent(
        "reimburser",
        [call(("ask_approval", {"amount": 300})), reply("Your request T-1 is pending approval.")],
        tools=[LongRunningFunctionTool(func=ask_approval)],
    )
    return Scenario("long_running_tool", agent, ["Reimburse 300 dollars"])


def cached_weather(tool: Any, args: dict[str, Any], tool_context: Any) -> dict[str, Any] | None:
    """A ``before_tool_callback`` answering for the tool (which then does not run) when the city is cached."""
    return {"city": "Paris", "sky": "cached"} if args.get("city") == "Paris" else None


def before_tool_scenario() -> Scenario:
    """A before_tool_callback short-circuits one of two calls: its answer is the function response."""
    agent = _agent(
        "cached_agent",
        [
            call(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})),
            reply("Paris cached, Rome rain."),
        ],
        tools=[get_weather],
        before_tool_callback=cached_weather,
    )
    return Scenario("before_tool", agent, ["Weather in Paris and Rome?"])


WORKFLOW_SCENARIOS: dict[str, Callable[[], Scenario]] = {
    "parallel_tool_error": parallel_tool_error_scenario,
    "nested_workflow": nested_workflow_scenario,
    "transfer_back": transfer_back_scenario,
    "agent_tool_workflow": agent_tool_workflow_scenario,
    "long_running_tool": long_running_tool_scenario,
    "before_tool": before_tool_scenario,
}
