"""ADK for JavaScript (``@google/adk``) writes its ``llm_request`` in camelCase (``config.systemInstruction``,
``functionCall``, ...): the rebuild reads it as it reads ADK for Python's snake_case one."""

from __future__ import annotations

import json
from typing import Any

from pydantic import alias_generators

from otel_eval import semconv
from otel_eval.reconstruct import rebuild_trace
from tests.reconstruct.test_adk_malformed import base_spans, mutate


def _camel(value: Any) -> Any:
    """``value`` with every object key in camelCase, as ADK for JavaScript serialises its request."""
    if isinstance(value, dict):
        return {alias_generators.to_camel(key): _camel(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_camel(item) for item in value]
    return value


def _camel_requests(attributes: dict[str, Any]) -> None:
    request = json.loads(attributes[semconv.ADK_LLM_REQUEST])
    assert "system_instruction" in request["config"]  # the base trace is ADK for Python's snake_case
    attributes[semconv.ADK_LLM_REQUEST] = json.dumps(_camel(request))


def test_camel_case_system_instruction_becomes_the_agents_instructions() -> None:
    python = base_spans()
    javascript = python
    for nth in range(sum(span.name == "call_llm" for span in python)):
        javascript = mutate(javascript, "call_llm", _camel_requests, nth=nth)
    [expected] = rebuild_trace(python).invocations
    [actual] = rebuild_trace(javascript).invocations
    expected_agents = expected.invocation.app_details.agent_details if expected.invocation.app_details else {}
    assert expected_agents and all(agent.instructions for agent in expected_agents.values())
    assert actual.invocation.app_details == expected.invocation.app_details
    assert actual.invocation == expected.invocation  # the rest of the request rebuilds exactly too
