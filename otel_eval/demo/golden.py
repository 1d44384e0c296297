"""The demo's golden eval set: what the travel assistant *should* do for four of its scenarios."""

from __future__ import annotations

from typing import Any

from otel_eval.model import EvalCase, EvalSet, IntermediateData, Invocation
from otel_eval.model import genai as genai_types

EVAL_SET_ID = "travel_assistant_golden"

_EXPECTED: tuple[tuple[str, str, list[tuple[str, dict[str, Any]]], str], ...] = (
    ("weather_paris", "What's the weather like in Paris today?", [("get_weather", {"city": "Paris"})],
     "It is sunny and 18°C in Paris today."),
    ("usd_to_eur", "How much is 100 USD in euros?",
     [("convert_currency", {"amount": 100, "source": "USD", "target": "EUR"})], "100 USD is 92 EUR."),
    ("rain_tokyo", "Is it raining in Tokyo right now?", [("get_weather", {"city": "Tokyo"})],
     "Yes, it is raining in Tokyo right now, at 12°C."),
    ("time_london", "What time is it in London?", [("get_local_time", {"city": "London"})],
     "It is 14:05 GMT in London."),
)  # fmt: skip


def golden_eval_set() -> EvalSet:
    """Four single-turn cases with the expected tool calls and final answers (ADK eval-set form)."""
    cases = []
    for eval_id, user_text, tools, answer in _EXPECTED:
        invocation = Invocation(
            invocation_id=f"{eval_id}-1",
            user_content=genai_types.Content(role="user", parts=[genai_types.Part(text=user_text)]),
            final_response=genai_types.Content(role="model", parts=[genai_types.Part(text=answer)]),
            intermediate_data=IntermediateData(
                tool_uses=[genai_types.FunctionCall(name=name, args=args) for name, args in tools]
            ),
        )
        cases.append(EvalCase(eval_id=eval_id, conversation=[invocation]))
    return EvalSet(eval_set_id=EVAL_SET_ID, name="Travel assistant golden answers", eval_cases=cases)
