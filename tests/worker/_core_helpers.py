"""Builders for the worker-core and embedded-transport tests: traced invocations and metrics that hang or raise."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from google.genai import types as genai_types

from otel_eval.metrics import Evaluator, MetricInfo, MetricRegistry, default_registry
from otel_eval.model import (
    BaseCriterion,
    ConversationScenario,
    EvaluationResult,
    IntermediateData,
    Invocation,
    PerInvocationResult,
    TokenUsage,
    TracedInvocation,
)
from otel_eval.model.messages import EvaluationRequest


def traced(
    user: str = "What's the weather like in Paris today?",
    answer: str = "It is sunny and 18°C in Paris today.",
    tools: Sequence[tuple[str, dict[str, Any]]] = (("get_weather", {"city": "Paris"}),),
    *,
    index: int = 1,
    agent: str = "travel_assistant",
) -> TracedInvocation:
    """A rebuilt invocation with ids, one model call per tool plus one, and token usage."""
    return TracedInvocation(
        invocation=Invocation(
            invocation_id=f"inv-{index}",
            user_content=genai_types.Content(role="user", parts=[genai_types.Part(text=user)]),
            final_response=genai_types.Content(role="model", parts=[genai_types.Part(text=answer)]),
            intermediate_data=IntermediateData(
                tool_uses=[genai_types.FunctionCall(name=name, args=args) for name, args in tools]
            ),
        ),
        trace_id=f"{index:032x}",
        span_id=f"{index:016x}",
        session_id="session-1",
        convention="genai",
        agent_name=agent,
        model="scripted-flash-1",
        start_time_ns=1_000_000_000,
        end_time_ns=1_250_000_000,
        model_call_count=len(tools) + 1,
        token_usage=TokenUsage(input_tokens=100, output_tokens=20),
    )


def request(*invocations: TracedInvocation, **fields: Any) -> EvaluationRequest:
    return EvaluationRequest(invocations=list(invocations) or [traced()], **fields)


class HangingEvaluator(Evaluator):
    """A metric whose evaluation waits until ``release`` is set (a judge that does not answer)."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="hanging_v1", description="waits", criterion_type=BaseCriterion, default_threshold=0.5
    )
    release = threading.Event()
    started = threading.Event()

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        type(self).started.set()
        # Released from the test's thread (a threading.Event): an asyncio.Event cannot be set across loops, and a
        # waiting executor thread would outlive a cancelled evaluation and hold up the loop's shutdown.
        while not type(self).release.is_set():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        return self.mean_result([PerInvocationResult(score=1.0, eval_status=self.status_of(1.0)) for _ in actual])


class RaisingEvaluator(Evaluator):
    """A metric with a bug."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="raising_v1", description="raises", criterion_type=BaseCriterion, default_threshold=0.5
    )

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        raise ZeroDivisionError("division by zero in a metric")


def registry_with(*evaluators: type[Evaluator]) -> MetricRegistry:
    registry = default_registry()
    for evaluator in evaluators:
        registry.register(evaluator)
    return registry
