"""More real google-adk scenarios (scripted models) for the parity tests: ADK's workflow and callback features.

Each builder returns a fresh :class:`~tests.reconstruct.adk_agents.Scenario`; :data:`WORKFLOW_SCENARIOS` maps names
to them, beside :data:`~tests.reconstruct.adk_agents.SCENARIOS`.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.reconstruct.adk_agents import Scenario, ToolFailedError, _agent, call, flaky_lookup, get_weather, reply


def parallel_tool_error_scenario() -> Scenario:
    """Two tools called in one model turn, one raises: ADK stores the other's response and the run ends on no final
    response."""
    agent = _agent(
        "lookup_agent",
        [call(("get_weather", {"city": "Paris"}), ("flaky_lookup", {"query": "otel"})), reply("unreachable")],
        tools=[get_weather, flaky_lookup],
    )
    return Scenario("parallel_tool_error", agent, ["Weather in Paris, and look up otel"], expect_error=ToolFailedError)


WORKFLOW_SCENARIOS: dict[str, Callable[[], Scenario]] = {
    "parallel_tool_error": parallel_tool_error_scenario,
}
