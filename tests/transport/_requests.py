"""Evaluation requests for transport tests: real ``TracedInvocation``s with tool calls."""

from __future__ import annotations

import uuid

from google.genai import types as genai_types

from otel_eval.model import IntermediateData, Invocation, TracedInvocation
from otel_eval.model.messages import EvaluationRequest


def traced_invocation(
    n: int = 0, *, trace_id: str | None = None, text: str = "What is the weather in Paris?"
) -> TracedInvocation:
    """A one-tool-call invocation with distinct ids."""
    trace_id = trace_id or uuid.uuid4().hex
    invocation = Invocation(
        invocation_id=f"e-{n}",
        user_content=genai_types.Content(role="user", parts=[genai_types.Part(text=f"{text} #{n}")]),
        final_response=genai_types.Content(role="model", parts=[genai_types.Part(text="Sunny, 21 degrees.")]),
        intermediate_data=IntermediateData(
            tool_uses=[genai_types.FunctionCall(id=f"c{n}", name="get_weather", args={"city": "Paris"})],
            tool_responses=[
                genai_types.FunctionResponse(id=f"c{n}", name="get_weather", response={"forecast": "sunny"})
            ],
        ),
    )
    return TracedInvocation(
        invocation=invocation,
        trace_id=trace_id,
        span_id=uuid.uuid4().hex[:16],
        convention="adk",
        agent_name="weather_agent",
        model="gemini-2.5-flash",
        start_time_ns=1_700_000_000_000_000_000 + n,
        end_time_ns=1_700_000_001_000_000_000 + n,
        model_call_count=2,
    )


def request(n: int = 0, **kwargs: object) -> EvaluationRequest:
    """An evaluation request for one fresh invocation."""
    return EvaluationRequest(invocations=[traced_invocation(n, **kwargs)])  # type: ignore[arg-type]
