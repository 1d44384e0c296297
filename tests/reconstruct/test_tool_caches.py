"""Tool declarations are converted once per distinct JSON and cached: every call still gets its own warnings."""

from __future__ import annotations

import json

from otel_eval.reconstruct._adk_contents import genai_tools as _genai_tools
from otel_eval.reconstruct._genai_agent_details import tools_from_definitions

DEFINITIONS = json.dumps(
    [
        {"type": "function", "name": "get_weather", "parameters": {"type": "object", "required": ["city"]}},
        {"type": "function"},  # no name: skipped with a warning
        {"type": "mystery", "name": "m"},  # no genai equivalent: skipped with a warning
    ]
)


def test_cached_definitions_warn_on_every_call_with_their_own_place() -> None:
    first: list[str] = []
    second: list[str] = []
    tools_a = tools_from_definitions(DEFINITIONS, first, "span a: gen_ai.tool.definitions")
    tools_b = tools_from_definitions(DEFINITIONS, second, "span b: gen_ai.tool.definitions")
    assert tools_a == tools_b and tools_a is not tools_b
    assert [t.function_declarations[0].name for t in tools_a if t.function_declarations] == ["get_weather"]
    assert len(first) == 2 and all(w.startswith("span a: gen_ai.tool.definitions[") for w in first)
    assert second == [w.replace("span a:", "span b:") for w in first]
    uncached: list[str] = []
    assert tools_from_definitions(json.loads(DEFINITIONS), uncached, "span a: gen_ai.tool.definitions") == tools_a
    assert uncached == first


def test_legacy_request_tools_are_validated_once_per_distinct_json() -> None:
    raw = [{"function_declarations": [{"name": "f", "parameters": {"type": "OBJECT"}}]}, {"bogus_field": 1}]
    declarations, problems = _genai_tools(raw)
    again, problems_again = _genai_tools(json.loads(json.dumps(raw)))
    assert again is declarations  # validated and dumped once
    assert problems == problems_again and len(problems) == 1 and problems[0].startswith("config.tools[1]")
    assert declarations == ({"function_declarations": [{"name": "f", "parameters": {"type": "OBJECT"}}]},)
