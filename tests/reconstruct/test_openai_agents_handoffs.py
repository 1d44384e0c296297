"""OpenAI Agents SDK conversations with a handoff, function tools, an input guardrail and ``SQLiteSession``, recorded
under OpenInference and OpenLLMetry with ``Runner.run`` and ``Runner.run_streamed``
(``tests/data/frameworks/record_openai_agents_handoffs.py``), rebuilt by ``otel-eval convert``.

A turn a guardrail's tripwire stops raises ``InputGuardrailTripwireTriggered`` in the application: the user gets no
answer, so the invocation has none either (a streamed run's model call completes beside the guardrail, and its text
must not be judged as what the agent said), and it counts as ended in error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from otel_eval.cli import main

FRAMEWORKS = Path(__file__).resolve().parents[1] / "data" / "frameworks"
HIDDEN_ANSWER = "The secret is 42."


def rebuilt(instrumentation: str, name: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    path = FRAMEWORKS / f"openai_agents_{instrumentation}" / f"{name}.otlp.json.gz"
    result = CliRunner().invoke(main, ["convert", str(path), "--output", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    traces = json.loads(result.stdout)["traces"]
    pairs = [pair for trace in traces for pair in zip(trace["invocations"], trace["invocation_metadata"], strict=True)]
    return sorted(pairs, key=lambda pair: pair[1]["start_time_ns"])


def text(content: dict[str, Any] | None) -> str:
    return "".join(part.get("text", "") for part in (content or {}).get("parts") or [])


@pytest.mark.parametrize(
    ("instrumentation", "name"),
    [
        ("openinference", "handoff_guardrail"),
        ("openinference", "handoff_guardrail_streamed"),
        ("openllmetry", "handoff_guardrail_streamed"),
    ],
)
def test_a_turn_a_guardrail_stops_has_no_final_response_and_ended_in_error(instrumentation: str, name: str) -> None:
    *answered, (stopped, metadata) = rebuilt(instrumentation, name)
    assert [text(invocation["final_response"]) for invocation, _ in answered] == [
        "Paris is cloudy at 18 °C.",
        "It is 14:05 in Paris.",
    ]
    assert not text(stopped.get("final_response"))
    assert HIDDEN_ANSWER not in json.dumps(stopped, ensure_ascii=False)
    assert metadata["ended_in_error"] is True
    assert not any(meta["ended_in_error"] for _, meta in answered)
    assert any("a guardrail stopped the run" in w and "no_secrets" in w for w in metadata["warnings"])


@pytest.mark.parametrize("instrumentation", ["openinference", "openllmetry"])
def test_a_streamed_conversation_rebuilds_as_the_same_run_and_joins_its_session(instrumentation: str) -> None:
    """The handoff is the model's ``transfer_to_<agent>`` call with the SDK's ``{"assistant": <agent>}`` as its
    result, as ADK counts ``transfer_to_agent``; under OpenLLMetry that result is only in the next model call's input,
    which names the call by the Responses API's item id (``fc_call_1``) and the result by the call id."""

    def answered(name: str) -> list[dict[str, Any]]:
        return [
            {
                "user": text(invocation["user_content"]),
                "tool_uses": [(u["name"], u["args"]) for u in invocation["intermediate_data"]["tool_uses"]],
                "tool_responses": [r["response"] for r in invocation["intermediate_data"]["tool_responses"]],
                "final": text(invocation["final_response"]),
                "agent": metadata["agent_name"],
                "session": metadata["session_id"],
            }
            for invocation, metadata in rebuilt(instrumentation, name)[:2]
        ]

    run = answered("handoff_guardrail")
    assert answered("handoff_guardrail_streamed") == run
    assert [turn["tool_uses"] for turn in run] == [
        [("transfer_to_weather_agent", {}), ("get_weather", {"city": "Paris"})],
        [("get_time", {"city": "Paris"})],
    ]
    assert [turn["tool_responses"] for turn in run] == [
        [{"assistant": "weather_agent"}, {"city": "Paris", "temperature_c": 18, "conditions": "cloudy"}],
        [{"result": "14:05"}],
    ]
    assert {turn["session"] for turn in run} == {"conv-123"}
    assert [turn["agent"] for turn in run] == ["triage_agent", "weather_agent"]
