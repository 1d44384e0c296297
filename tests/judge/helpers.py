"""Builders shared by the judge and judged-metric tests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from google.genai import types as genai_types

from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.model import Invocation, TracedInvocation
from tests.judge.fake_gemini import FakeGemini, Reply, Responder, request_text

TEST_KEY = "AIzaSyTEST-not-a-real-key-0000000000000"


def make_judge(server: FakeGemini, **settings: Any) -> JudgeClient:
    """A judge on the fake server with short timeouts and backoffs (overridable)."""
    values: dict[str, Any] = {
        "api_key": TEST_KEY,
        "base_url": server.base_url,
        "timeout_seconds": 2.0,
        "max_attempts": 3,
        "initial_backoff_seconds": 0.01,
        "max_backoff_seconds": 0.05,
        "max_total_seconds": 10.0,
    }
    values.update(settings)
    return JudgeClient(JudgeSettings(**values))


def text(value: str, role: str = "user") -> genai_types.Content:
    return genai_types.Content(role=role, parts=[genai_types.Part(text=value)])


def invocation(user: str, response: str | None, **fields: Any) -> Invocation:
    return Invocation(
        invocation_id=fields.pop("invocation_id", "inv"),
        user_content=text(user),
        final_response=text(response, "model") if response is not None else None,
        **fields,
    )


def traced(*invocations: Invocation) -> list[TracedInvocation]:
    return [
        TracedInvocation(invocation=inv, trace_id="0" * 31 + str(i % 10), span_id="0" * 15 + "1", convention="adk")
        for i, inv in enumerate(invocations)
    ]


def keyed_sequences(
    table: dict[str, Sequence[Reply | str]],
    default: Reply | str | None = None,
    *,
    section: Callable[[str], str] | None = None,
) -> Responder:
    """For the n-th request whose prompt contains a key, the key's n-th reply (the last one repeats).

    Keys are tried in order; prompts of our evaluators and of ADK's both contain the evaluated text, so the same
    table drives both. ``section`` narrows the prompt text that keys are looked for in.
    """
    counters: dict[str, int] = {}
    lock = threading.Lock()

    def respond(model: str, body: dict[str, Any]) -> Reply | str | None:
        prompt = request_text(body)
        if section is not None:
            prompt = section(prompt)
        for key, replies in table.items():
            if key in prompt:
                with lock:
                    index = counters.get(key, 0)
                    counters[key] = index + 1
                return replies[min(index, len(replies) - 1)]
        return default

    return respond


def adk_metric(name: str, criterion: dict[str, Any]) -> Any:
    """An ADK ``EvalMetric`` with a criterion given as JSON."""
    from google.adk.evaluation.eval_metrics import BaseCriterion, EvalMetric

    return EvalMetric(metric_name=name, criterion=BaseCriterion.model_validate(criterion))


def adk_invocations(invocations: Sequence[Invocation]) -> list[Any]:
    """Our invocations as ADK ``Invocation`` objects (same JSON)."""
    from google.adk.evaluation.eval_case import Invocation as AdkInvocation

    return [AdkInvocation.model_validate(inv.model_dump(mode="json", exclude_none=True)) for inv in invocations]
