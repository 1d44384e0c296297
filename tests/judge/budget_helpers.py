"""Builders for the judge-budget tests: invocations with unique answers, a hallucinations judge script that reports
honest token counts, a judge on a frozen clock, and per-invocation call counts from the loopback server."""

from __future__ import annotations

import math
import re
from typing import Any

from google.genai import types as genai_types

from otel_eval.judge import JudgeClient, PriceTable
from otel_eval.judge.budget import BudgetSpec, CallEstimate, JudgeBudget
from otel_eval.judge.output_estimate import OUTPUT_TOKEN_ALLOWANCE, OutputEstimates
from otel_eval.metrics.hallucinations_v1 import call_sizes, steps_to_evaluate
from otel_eval.model import Invocation, TracedInvocation
from tests.judge.fake_gemini import FakeGemini, Reply, Responder, request_text
from tests.judge.helpers import make_judge

MODEL = "judge-test"
_ANSWER = re.compile(r"Answer (\d{3}) is fine\.")
_SENTENCE = re.compile(r"<sentence>(Answer \d{3} is fine\.)</sentence>")


class Clock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def answer(index: int) -> str:
    return f"Answer {index:03d} is fine."


def traced_invocation(index: int, **fields: Any) -> TracedInvocation:
    """An invocation whose final answer names ``index`` (same length for every index below 1000)."""
    invocation = Invocation(
        invocation_id=f"inv-{index}",
        user_content=genai_types.Content(role="user", parts=[genai_types.Part(text="Is it fine?")]),
        final_response=genai_types.Content(role="model", parts=[genai_types.Part(text=answer(index))]),
    )
    return TracedInvocation(
        invocation=invocation,
        trace_id=f"{index + 1:032x}",
        span_id=f"{index + 1:016x}",
        convention="genai",
        **fields,
    )


def hallucination_judge(model: str, body: dict[str, Any]) -> Reply:
    """Segments the answer into one sentence and labels it supported; reports the prompt's estimated tokens and the
    whole output allowance, so the real cost of a segmenter call is exactly its estimate and a validator's at most."""
    text, tokens = _hallucination_verdict(body)
    return Reply(text=text, prompt_tokens=tokens, output_tokens=OUTPUT_TOKEN_ALLOWANCE)


def thinking_hallucination_judge(candidates: int, thoughts: int) -> Responder:
    """:func:`hallucination_judge` whose replies report ``candidates`` answer and ``thoughts`` thinking tokens."""

    def respond(model: str, body: dict[str, Any]) -> Reply:
        text, tokens = _hallucination_verdict(body)
        usage = {
            "promptTokenCount": tokens,
            "candidatesTokenCount": candidates,
            "thoughtsTokenCount": thoughts,
            "totalTokenCount": tokens + candidates + thoughts,
        }
        candidate = {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}
        return Reply(json_body={"candidates": [candidate], "usageMetadata": usage, "modelVersion": model})

    return respond


def _hallucination_verdict(body: dict[str, Any]) -> tuple[str, int]:
    """The verdict text for a segmenter or validator request, and the request's estimated prompt tokens."""
    prompt = request_text(body)
    system = "\n".join(p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts") or [])
    tokens = math.ceil((len(prompt) + len(system)) / 4)
    sentence = _SENTENCE.search(prompt)
    if sentence is not None:
        text = (
            f"sentence: {sentence.group(1)}\nlabel: supported\nrationale: r\n"
            "supporting_excerpt: null\ncontradicting_excerpt: null"
        )
    else:
        found = _ANSWER.search(prompt)
        text = f"<sentence>{found.group(0)}</sentence>" if found else ""
    return text, tokens


def budgeted_judge(
    server: FakeGemini,
    budget: str,
    clock: Clock,
    *,
    input_price: float = 1.0,
    output_price: float = 4.0,
    outputs: OutputEstimates | None = None,
) -> JudgeClient:
    """A judge on ``server`` priced at ``input_price`` / ``output_price`` USD per million tokens, with ``budget``
    (``OTEL_EVAL_JUDGE_BUDGET`` syntax) on ``clock`` and ``outputs`` estimates (default: learned)."""
    prices = PriceTable({MODEL: (input_price, output_price)})
    spec = BudgetSpec.parse(budget)
    judge = make_judge(server, default_model=MODEL, prices=prices, budget=spec, max_concurrency=8)
    assert spec is not None
    judge.budget = JudgeBudget(spec, prices, clock=clock, outputs=outputs)
    return judge


def estimated_cost(judge: JudgeClient, traced: TracedInvocation) -> float:
    """What the budget reserves for judging ``traced`` with hallucinations_v1."""
    assert judge.budget is not None
    steps = steps_to_evaluate(traced.invocation, intermediate=False)
    cost = judge.budget.estimate([CallEstimate(MODEL, size) for step in steps for size in call_sizes(step)])
    assert cost is not None
    return cost


def calls_by_answer(server: FakeGemini) -> dict[str, tuple[int, int]]:
    """Answer text -> (segmenter calls, validator calls) the server received for it."""
    counts: dict[str, list[int]] = {}
    for request in server.generate_requests():
        sentence = _SENTENCE.search(request.prompt)
        if sentence is not None:
            counts.setdefault(sentence.group(1), [0, 0])[1] += 1
            continue
        found = _ANSWER.search(request.prompt)
        if found is not None:
            counts.setdefault(found.group(0), [0, 0])[0] += 1
    return {key: (value[0], value[1]) for key, value in counts.items()}
