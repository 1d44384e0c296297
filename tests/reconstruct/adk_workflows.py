"""More real google-adk scenarios (scripted models) for the parity tests: ADK's workflow and callback features.

Each builder returns a fresh :class:`~tests.reconstruct.adk_agents.Scenario`; :data:`WORKFLOW_SCENARIOS` maps names
to them, beside :data:`~tests.reconstruct.adk_agents.SCENARIOS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types as genai_types

from tests.reconstruct.adk_agents import Scenario, ToolFailedError, _agent, call, flaky_lookup, get_weather, reply

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


WORKFLOW_SCENARIOS: dict[str, Callable[[], Scenario]] = {
    "parallel_tool_error": parallel_tool_error_scenario,
}
