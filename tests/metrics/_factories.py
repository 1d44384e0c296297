"""Builders shared by the metric tests: the same invocation JSON as otel-eval and as ADK 2.13 objects."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from google.adk.evaluation import eval_case as adk_eval_case

from otel_eval.metrics import Evaluator, default_registry
from otel_eval.model import BaseCriterion, EvaluationResult, Invocation, TracedInvocation

Json = dict[str, Any]
REGISTRY = default_registry()


def call(name: str, args: Json | None = None, *, call_id: str | None = None) -> Json:
    """A FunctionCall as JSON."""
    data: Json = {"name": name}
    if args is not None:
        data["args"] = args
    if call_id is not None:
        data["id"] = call_id
    return data


def invocation(
    calls: Sequence[Json] = (),
    text: str | None = "done",
    *,
    events: bool = False,
    user: str = "hi",
    **extra: Any,
) -> Json:
    """An Invocation as JSON: ``calls`` as ``IntermediateData.tool_uses`` or, with ``events``, as InvocationEvents."""
    data: Json = {"user_content": {"role": "user", "parts": [{"text": user}]}, **extra}
    if text is not None:
        data["final_response"] = {"role": "model", "parts": [{"text": text}]}
    if events:
        data["intermediate_data"] = {
            "invocation_events": [
                {"author": "agent", "content": {"role": "model", "parts": [{"function_call": c}]}} for c in calls
            ]
        }
    else:
        data["intermediate_data"] = {"tool_uses": list(calls)}
    return data


def traced(data: Json, **meta: Any) -> TracedInvocation:
    """Our TracedInvocation around the Invocation ``data``."""
    meta.setdefault("trace_id", "0" * 31 + "1")
    meta.setdefault("span_id", "0" * 15 + "1")
    meta.setdefault("convention", "adk")
    return TracedInvocation(invocation=Invocation.model_validate(data), **meta)


def ours(data: Json) -> Invocation:
    """Our Invocation of ``data``."""
    return Invocation.model_validate(data)


def adk(data: Json) -> adk_eval_case.Invocation:
    """ADK 2.13's Invocation of ``data``."""
    return adk_eval_case.Invocation.model_validate(data)


def evaluator(metric: str, criterion: Json | float | None = None) -> Evaluator:
    """Our evaluator of ``metric`` from a criterion given as JSON (or a bare threshold, as in an eval config)."""
    if criterion is None:
        return REGISTRY.create(metric)
    if isinstance(criterion, int | float):
        return REGISTRY.create(metric, BaseCriterion(threshold=float(criterion)))
    return REGISTRY.create(metric, BaseCriterion.model_validate(criterion))


def evaluate(
    metric: Evaluator, actual: Sequence[Json | TracedInvocation], expected: Sequence[Json] | None
) -> EvaluationResult:
    """Runs our evaluator synchronously on JSON invocations."""
    actual_traced = [a if isinstance(a, TracedInvocation) else traced(a) for a in actual]
    expected_ours = None if expected is None else [ours(e) for e in expected]
    return asyncio.run(metric.evaluate(actual_traced, expected_ours))


def scores(result: EvaluationResult) -> list[float | None]:
    """The per-invocation scores."""
    return [r.score for r in result.per_invocation_results]


def statuses(result: EvaluationResult) -> list[str]:
    """The per-invocation status names."""
    return [r.eval_status.name for r in result.per_invocation_results]
