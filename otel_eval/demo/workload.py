"""A small travel-assistant agent with a scripted model, instrumented with the OpenTelemetry GenAI conventions.

Every span is a real SDK span written as an instrumented agent framework writes them: ``invoke_agent {agent}``
(the invocation), ``chat {model}`` per model call (input/output messages, token usage) and ``execute_tool {tool}``
per tool call (arguments and result). The model's decisions are scripted per :class:`Scenario`; the tools really
run (small lookup tables). Used by ``otel-eval demo``, the processor tests and the processor benchmark.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from otel_eval import semconv

AGENT_NAME = "travel_assistant"
MODEL = "scripted-flash-1"
PROVIDER = "scripted"
AGENT_SCOPE = "travel_assistant.agent"
"""The agent's instrumentation scope (not ``otel_eval``: the processor skips its own scope)."""

_WEATHER = {"paris": ("sunny", 18), "tokyo": ("rain", 12), "london": ("cloudy", 14), "rome": ("sunny", 24)}
_RATES = {("USD", "EUR"): 0.92, ("EUR", "USD"): 1.09, ("GBP", "EUR"): 1.17}
_TIME_ZONES = {"london": "14:05 GMT", "tokyo": "23:05 JST", "paris": "15:05 CET"}


def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city."""
    condition, celsius = _WEATHER.get(city.lower(), ("unknown", 0))
    return {"city": city, "condition": condition, "temperature_c": celsius}


def convert_currency(amount: float, source: str, target: str) -> dict[str, Any]:
    """``amount`` of ``source`` currency in ``target`` currency."""
    rate = _RATES.get((source.upper(), target.upper()))
    if rate is None:
        return {"error": f"no rate for {source}->{target}"}
    return {"amount": round(amount * rate, 2), "currency": target.upper()}


def get_local_time(city: str) -> dict[str, Any]:
    """Local time in a city."""
    return {"city": city, "time": _TIME_ZONES.get(city.lower(), "unknown")}


TOOLS: Mapping[str, Callable[..., dict[str, Any]]] = {
    "get_weather": get_weather,
    "convert_currency": convert_currency,
    "get_local_time": get_local_time,
}

TOOL_DEFINITIONS = [
    {
        "type": "function",
        "name": name,
        "description": (function.__doc__ or "").strip(),
        "parameters": {"type": "object"},
    }
    for name, function in TOOLS.items()
]


@dataclass(frozen=True, slots=True)
class ToolStep:
    """One tool call the scripted model makes."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Scenario:
    """One user turn: what the user says, which tools the scripted model calls, what it finally answers."""

    key: str
    description: str
    user_text: str
    tool_steps: tuple[ToolStep, ...]
    answer: str
    input_tokens: int = 120
    output_tokens: int = 30


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        key="weather",
        description="calls the right tool and answers from its result",
        user_text="What's the weather like in Paris today?",
        tool_steps=(ToolStep("get_weather", {"city": "Paris"}),),
        answer="It is sunny and 18°C in Paris today.",
    ),
    Scenario(
        key="currency",
        description="converts currency with the right arguments",
        user_text="How much is 100 USD in euros?",
        tool_steps=(ToolStep("convert_currency", {"amount": 100, "source": "USD", "target": "EUR"}),),
        answer="100 USD is 92 EUR.",
    ),
    Scenario(
        key="hallucination",
        description="ignores the tool result and invents the weather (hallucination)",
        user_text="Is it raining in Tokyo right now?",
        tool_steps=(ToolStep("get_weather", {"city": "Tokyo"}),),
        answer="No, it is completely dry in Tokyo: clear skies and 30°C, perfect beach weather.",
    ),
    Scenario(
        key="wrong_tool",
        description="calls the weather tool when asked for the time (wrong tool)",
        user_text="What time is it in London?",
        tool_steps=(ToolStep("get_weather", {"city": "London"}),),
        answer="It is cloudy in London.",
    ),
    Scenario(
        key="two_tools",
        description="plans a trip with two tool calls",
        user_text="I'm flying to Rome with 200 EUR. What's the weather there and how much is that in dollars?",
        tool_steps=(
            ToolStep("get_weather", {"city": "Rome"}),
            ToolStep("convert_currency", {"amount": 200, "source": "EUR", "target": "USD"}),
        ),
        answer="Rome is sunny at 24°C, and 200 EUR is 218 USD.",
        input_tokens=210,
        output_tokens=48,
    ),
    Scenario(
        key="greeting",
        description="small talk, no tool",
        user_text="Hi there!",
        tool_steps=(),
        answer="Hello! I can help with weather, currency and local time. Where are you travelling?",
        input_tokens=40,
        output_tokens=20,
    ),
)


def _text_message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@dataclass(slots=True)
class TravelAgent:
    """The scripted agent. :meth:`run` / :meth:`arun` perform one invocation and return the answer.

    Args:
        tracer_provider: Provider the agent's spans go to (the global one when None).
        parallel_tools: Run each turn's tool calls on a thread pool, so spans of one trace end on several threads.
        scope: The instrumentation scope of the agent's spans.
        model_latency_seconds: How long each scripted model call takes in :meth:`run` (a real model's latency).
    """

    tracer_provider: TracerProvider | None = None
    parallel_tools: bool = False
    scope: str = AGENT_SCOPE
    model_latency_seconds: float = 0.0
    _pool: ThreadPoolExecutor | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.parallel_tools:
            self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="OtelEvalDemoTool")

    @property
    def tracer(self) -> trace.Tracer:
        """The agent's tracer (scope :attr:`scope`)."""
        return trace.get_tracer(self.scope, "1.0", tracer_provider=self.tracer_provider)

    def close(self) -> None:
        """Stops the tool thread pool."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def run(self, scenario: Scenario, *, conversation_id: str | None = None) -> str:
        """One invocation of ``scenario`` (synchronous)."""
        with self._invocation(scenario, conversation_id) as agent_span:
            messages: list[dict[str, Any]] = [_text_message("user", scenario.user_text)]
            if scenario.tool_steps:
                results = self._model_then_tools(scenario, messages)
                messages += results
            answer = self._final_model_call(scenario, messages)
            agent_span.set_attribute(semconv.GEN_AI_OUTPUT_MESSAGES, _json([_text_message("assistant", answer)]))
            return answer

    async def arun(self, scenario: Scenario, *, conversation_id: str | None = None) -> str:
        """One invocation of ``scenario`` on an event loop, yielding between steps so invocations interleave."""
        with self._invocation(scenario, conversation_id) as agent_span:
            messages: list[dict[str, Any]] = [_text_message("user", scenario.user_text)]
            await asyncio.sleep(0)
            if scenario.tool_steps:
                messages += self._model_then_tools(scenario, messages)
                await asyncio.sleep(0)
            answer = self._final_model_call(scenario, messages)
            await asyncio.sleep(0)
            agent_span.set_attribute(semconv.GEN_AI_OUTPUT_MESSAGES, _json([_text_message("assistant", answer)]))
            return answer

    def _invocation(self, scenario: Scenario, conversation_id: str | None) -> Any:
        attributes: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: "invoke_agent",
            semconv.GEN_AI_AGENT_NAME: AGENT_NAME,
            semconv.GEN_AI_PROVIDER_NAME: PROVIDER,
            semconv.GEN_AI_REQUEST_MODEL: MODEL,
            semconv.GEN_AI_INPUT_MESSAGES: _json([_text_message("user", scenario.user_text)]),
            semconv.GEN_AI_TOOL_DEFINITIONS: _json(TOOL_DEFINITIONS),
        }
        if conversation_id:
            attributes[semconv.GEN_AI_CONVERSATION_ID] = conversation_id
        return self.tracer.start_as_current_span(
            f"invoke_agent {AGENT_NAME}", kind=SpanKind.INTERNAL, attributes=attributes
        )

    def _chat_span(self, messages: Sequence[dict[str, Any]], output: list[dict[str, Any]], scenario: Scenario) -> None:
        with self.tracer.start_as_current_span(
            f"chat {MODEL}",
            kind=SpanKind.CLIENT,
            attributes={
                semconv.GEN_AI_OPERATION_NAME: "chat",
                semconv.GEN_AI_PROVIDER_NAME: PROVIDER,
                semconv.GEN_AI_REQUEST_MODEL: MODEL,
                semconv.GEN_AI_RESPONSE_MODEL: MODEL,
                semconv.GEN_AI_INPUT_MESSAGES: _json(list(messages)),
                semconv.GEN_AI_OUTPUT_MESSAGES: _json(output),
                semconv.GEN_AI_USAGE_INPUT_TOKENS: scenario.input_tokens,
                semconv.GEN_AI_USAGE_OUTPUT_TOKENS: scenario.output_tokens,
            },
        ):
            if self.model_latency_seconds > 0:
                time.sleep(self.model_latency_seconds)

    def _model_then_tools(self, scenario: Scenario, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        calls = [
            {"type": "tool_call", "id": f"call_{index}", "name": step.name, "arguments": step.arguments}
            for index, step in enumerate(scenario.tool_steps)
        ]
        self._chat_span(messages, [{"role": "assistant", "parts": calls, "finish_reason": "tool_call"}], scenario)
        if self._pool is not None:
            futures = [
                self._pool.submit(contextvars.copy_context().run, self._tool_span, f"call_{index}", step)
                for index, step in enumerate(scenario.tool_steps)
            ]
            results = [future.result() for future in futures]
        else:
            results = [self._tool_span(f"call_{index}", step) for index, step in enumerate(scenario.tool_steps)]
        responses = [
            {"type": "tool_call_response", "id": f"call_{index}", "response": result}
            for index, result in enumerate(results)
        ]
        return [{"role": "assistant", "parts": calls}, {"role": "tool", "parts": responses}]

    def _tool_span(self, call_id: str, step: ToolStep) -> dict[str, Any]:
        with self.tracer.start_as_current_span(
            f"execute_tool {step.name}",
            kind=SpanKind.INTERNAL,
            attributes={
                semconv.GEN_AI_OPERATION_NAME: "execute_tool",
                semconv.GEN_AI_TOOL_NAME: step.name,
                semconv.GEN_AI_TOOL_CALL_ID: call_id,
                semconv.GEN_AI_TOOL_TYPE: "function",
                semconv.GEN_AI_TOOL_CALL_ARGUMENTS: _json(step.arguments),
            },
        ) as span:
            try:
                result = TOOLS[step.name](**step.arguments)
            except (
                TypeError,
                ValueError,
                KeyError,
            ) as exc:  # a bad tool call is recorded on the span, as frameworks do
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                span.set_attribute(semconv.ERROR_TYPE, type(exc).__name__)
                return {"error": str(exc)}
            span.set_attribute(semconv.GEN_AI_TOOL_CALL_RESULT, _json(result))
            return result

    def _final_model_call(self, scenario: Scenario, messages: list[dict[str, Any]]) -> str:
        output = [{**_text_message("assistant", scenario.answer), "finish_reason": "stop"}]
        self._chat_span(messages, output, scenario)
        return scenario.answer
