"""A Google ADK agent with the EvaluationSpanProcessor attached, printing its scores. Runs offline.

    python examples/adk_agent.py

Everything is real google-adk (``LlmAgent``, a function tool, ``InMemoryRunner``) except the model: a scripted
``BaseLlm`` replays fixed responses, so no key and no network are needed. To run it on Gemini, replace
``ScriptedModel(...)`` by ``"gemini-2.5-flash"`` and set ``GOOGLE_API_KEY``; judged metrics (``hallucinations_v1``,
``safety_v1``) then run too, on the same key.

ADK emits its spans on the *global* tracer provider, so the provider carrying the processor is set globally before
the agent runs. The scores are printed one line each by ``ConsoleRecordSink`` (``OTEL_EVAL_CONSOLE=true`` does the
same with ``EvaluationSpanProcessor.from_env()``); see the README for sending them to an OTLP endpoint instead.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.emit.console import ConsoleRecordSink
from otel_eval.model import EvalCase, EvalSet, IntermediateData, Invocation

# ADK's v2 telemetry (the default) puts message content on spans only with this; without it the spans carry no
# text and the content metrics report NOT_EVALUATED (content_not_captured).
os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")

QUESTION = "What's the weather in Paris?"


def get_weather(city: str) -> dict[str, Any]:
    """Returns the current weather of a city."""
    return {"city": city, "sky": "sunny", "temperature_c": 21}


class ScriptedModel(BaseLlm):
    """Stands in for Gemini: answers each model call with the next scripted response."""

    responses: list[LlmResponse]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield self.responses.pop(0)


def model_turn(*parts: types.Part) -> LlmResponse:
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=120, candidates_token_count=15, total_token_count=135
    )
    return LlmResponse(content=types.Content(role="model", parts=list(parts)), usage_metadata=usage)


# What the agent should do for QUESTION: ADK's eval-set form. Live invocations with this user text also get the
# reference metrics (tool trajectory, ROUGE); every invocation gets the efficiency metrics.
GOLDEN = EvalSet(
    eval_set_id="weather_golden",
    eval_cases=[
        EvalCase(
            eval_id="paris",
            conversation=[
                Invocation(
                    user_content=types.Content(role="user", parts=[types.Part(text=QUESTION)]),
                    final_response=types.Content(
                        role="model", parts=[types.Part(text="It is sunny and 21°C in Paris.")]
                    ),
                    intermediate_data=IntermediateData(
                        tool_uses=[types.FunctionCall(name="get_weather", args={"city": "Paris"})]
                    ),
                )
            ],
        )
    ],
)


async def main() -> None:
    provider = TracerProvider()
    processor = EvaluationSpanProcessor(
        criteria={"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8},
        settings=ProcessorSettings(eval_set=GOLDEN),
        sinks=[ConsoleRecordSink()],
    )
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)  # ADK's tracer is a proxy of the global provider

    model = ScriptedModel(
        model="scripted-gemini",
        responses=[
            model_turn(types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": "Paris"}))),
            model_turn(types.Part(text="It is sunny and 21°C in Paris.")),
            model_turn(types.Part(text="You're welcome! Enjoy Paris.")),
        ],
    )
    agent = LlmAgent(
        name="weather_agent", model=model, instruction="Answer weather questions with get_weather.", tools=[get_weather]
    )
    runner = InMemoryRunner(agent=agent, app_name="weather_app")
    session = await runner.session_service.create_session(app_name="weather_app", user_id="user")
    for text in (QUESTION, "Thanks!"):
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
            if event.is_final_response() and event.content and event.content.parts:
                print(f"agent: {event.content.parts[0].text}")
    provider.shutdown()  # evaluates what is still buffered; the console sink prints each score


if __name__ == "__main__":
    asyncio.run(main())
