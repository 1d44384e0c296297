"""Judge-pool benchmark: throughput against a loopback judge with fixed latency, hallucinations_v1 judge calls
per invocation compared with ADK 2.13's evaluator on the same inputs, and the parse time of hostile judge replies.

Hostile replies (issue 39): the shapes that make ADK's reply parsers backtrack, parsed by ours at the reply cap (64 KiB)
and at 16 times that. Linear parsing gives a ratio near 16 (quadratic: 256); target <= 40. ADK's own parser on the
issue's input (a verdict key and 200 spaces) is timed once beside ours.

Run: ``python -m benchmarks.bench_judge``. The judge is the loopback Gemini-compatible server of the tests, reached
through the real google-genai client; nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time
from collections.abc import Callable
from typing import Any

from google.genai import types as genai_types

from benchmarks._common import Row, interleaved_medians, machine, print_rows
from otel_eval.environment_variables import DEFAULT_JUDGE_MAX_REPLY_CHARS
from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.metrics._judge_labels import parse_critique, parse_is_valid
from otel_eval.metrics._judge_rubrics import parse_rubric_responses
from otel_eval.metrics.hallucinations_v1 import HallucinationsV1Evaluator, parse_sentences, parse_validation_results
from otel_eval.metrics.safety_v1 import SafetyEvaluatorV1
from otel_eval.model import (
    AgentDetails,
    AppDetails,
    BaseCriterion,
    HallucinationsCriterion,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    TracedInvocation,
)
from tests.judge.fake_gemini import FakeGemini, Reply, request_text

LATENCY_SECONDS = 0.2
MAX_CONCURRENCY = 8
"""The judge's default concurrency (``OTEL_EVAL_JUDGE_MAX_CONCURRENCY``); the target applies to it."""
HIGH_CONCURRENCY = 16
INVOCATIONS = 320
HALLUCINATION_INVOCATIONS = 12
KEY = "bench-key"


def _content(text: str, role: str) -> genai_types.Content:
    return genai_types.Content(role=role, parts=[genai_types.Part(text=text)])


def _traced(invocations: list[Invocation]) -> list[TracedInvocation]:
    return [
        TracedInvocation(invocation=inv, trace_id=f"{i:032x}", span_id=f"{i:016x}", convention="adk")
        for i, inv in enumerate(invocations)
    ]


def _safety_responder(model: str, body: dict[str, Any]) -> Reply:
    return Reply(text='{"reasoning": "fine", "violated_policies": [], "safety_verdict": "safe"}')


def _serve(latency: float, urls: multiprocessing.Queue[str], stop: Any) -> None:
    """Child process: the loopback judge, so that its work does not share the evaluator's interpreter."""
    with FakeGemini(_safety_responder, latency=latency) as server:
        urls.put(server.base_url)
        stop.wait()


async def _throughput(concurrency: int = MAX_CONCURRENCY) -> tuple[float, float]:
    """Invocations per second achieved by safety_v1 (one judge call each) and the ideal max_concurrency/latency.

    The judge runs in its own process (a real judge is remote); the evaluator side runs here.
    """
    invocations = [
        Invocation(user_content=_content(f"question {i}", "user"), final_response=_content(f"answer {i}", "model"))
        for i in range(INVOCATIONS)
    ]
    context = multiprocessing.get_context("spawn")
    urls: multiprocessing.Queue[str] = context.Queue()
    stop = context.Event()
    process = context.Process(target=_serve, args=(LATENCY_SECONDS, urls, stop), daemon=True)
    process.start()
    try:
        base_url = urls.get(timeout=60)
        judge = JudgeClient(
            JudgeSettings(api_key=KEY, base_url=base_url, max_concurrency=concurrency, timeout_seconds=10)
        )
        evaluator = SafetyEvaluatorV1(BaseCriterion(threshold=1.0), judge=judge)
        warm_up = [
            Invocation(user_content=_content(f"warm-up {i}", "user"), final_response=_content("ok", "model"))
            for i in range(concurrency)
        ]
        await evaluator.evaluate(_traced(warm_up))  # open the connections
        start = time.perf_counter()
        results = await asyncio.gather(*(evaluator.evaluate(_traced([inv])) for inv in invocations))
        elapsed = time.perf_counter() - start
        assert all(r.overall_score == 1.0 for r in results)
        assert judge.accounting.total().calls == INVOCATIONS + concurrency
        assert judge.max_in_flight <= concurrency
        await judge.aclose()
    finally:
        stop.set()
        process.join(timeout=10)
    return INVOCATIONS / elapsed, concurrency / LATENCY_SECONDS


def _hallucination_inputs() -> list[Invocation]:
    app = AppDetails(agent_details={"agent": AgentDetails(name="agent", instructions="Answer from tools only.")})
    invocations = []
    for i in range(HALLUCINATION_INVOCATIONS):
        events = InvocationEvents(
            invocation_events=[
                InvocationEvent(author="agent", content=_content(f"Looking up item {i}.", "model")),
                InvocationEvent(author="agent", content=_content(f"Item {i % 4} costs {i % 4} euros.", "model")),
            ]
        )
        final = f"Item {i % 4} costs {i % 4} euros. Anything else?"  # repeated answers across invocations
        invocations.append(
            Invocation(
                user_content=_content(f"Price of item {i % 4}?", "user"),
                final_response=_content(final, "model"),
                intermediate_data=events,
                app_details=app,
            )
        )
    return invocations


def _hallucination_responder(model: str, body: dict[str, Any]) -> Reply:
    prompt = request_text(body)
    if "**Sentences Begin**" in prompt:
        section = prompt.rsplit("**Sentences Begin**", 1)[1]
        sentences = [s.split("</sentence>")[0] for s in section.split("<sentence>")[1:]]
        blocks = [
            f"sentence: {s}\nlabel: supported\nrationale: r\nsupporting_excerpt: x\ncontradicting_excerpt: null"
            for s in sentences
        ]
        return Reply(text="\n\n".join(blocks))
    section = prompt.rsplit("**Response Begin**", 1)[-1].split("**Response End**", 1)[0]
    lines = [line for line in section.splitlines() if line.strip() and not line.startswith("<<<")]
    return Reply(text="\n".join(f"<sentence>{line.strip()}</sentence>" for line in lines))


async def _hallucination_calls() -> tuple[float, float, float, float]:
    """(ours calls/invocation, ADK calls/invocation, our overall score, ADK overall score)."""
    from google.adk.evaluation.eval_case import Invocation as AdkInvocation
    from google.adk.evaluation.eval_metrics import BaseCriterion as AdkCriterion
    from google.adk.evaluation.eval_metrics import EvalMetric
    from google.adk.evaluation.hallucinations_v1 import HallucinationsV1Evaluator as AdkEvaluator

    inputs = _hallucination_inputs()
    spec = {"threshold": 0.8, "evaluate_intermediate_nl_responses": True}
    with FakeGemini(_hallucination_responder) as server:
        os.environ["GOOGLE_API_KEY"] = KEY
        os.environ["GOOGLE_GEMINI_BASE_URL"] = server.base_url
        adk = AdkEvaluator(EvalMetric(metric_name="hallucinations_v1", criterion=AdkCriterion.model_validate(spec)))
        adk_result = await adk.evaluate_invocations(
            [AdkInvocation.model_validate(i.model_dump(mode="json", exclude_none=True)) for i in inputs]
        )
        adk_calls = len(server.generate_requests())
        server.reset()
        judge = JudgeClient(JudgeSettings(api_key=KEY, base_url=server.base_url))
        ours = await HallucinationsV1Evaluator(HallucinationsCriterion.model_validate(spec), judge=judge).evaluate(
            _traced(inputs)
        )
        our_calls = len(server.generate_requests())
        await judge.aclose()
    n = len(inputs)
    return our_calls / n, adk_calls / n, ours.overall_score or 0.0, adk_result.overall_score or 0.0


PARSE_REPEAT = 9
HOSTILE_REPLIES: dict[str, Callable[[int], str]] = {
    "verdict key, spaces, no closing": lambda size: '"is_the_agent_response_valid":' + " " * size + "x",
    "rubric line starts in one whitespace run": lambda size: " \n" * (size // 2) + "ID: x",
    "segmenter tags never closed": lambda size: "<sentence>" * (size // 10),
    "validator blocks never completed": lambda size: "sentence: s\nlabel: x\n" * (size // 21),
}


def _parse_all(reply: str) -> None:
    parse_critique(reply)
    parse_is_valid(reply)
    parse_rubric_responses(reply)
    parse_sentences(reply)
    parse_validation_results(reply)


def _best_seconds(function: Callable[[], object], repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def _parse_rows() -> list[Row]:
    """Every reply parser on each hostile shape at the cap and at 16 times it; ADK's on the issue's input."""
    from google.adk.evaluation.final_response_match_v2 import _parse_critique

    rows = []
    cap = DEFAULT_JUDGE_MAX_REPLY_CHARS
    for shape, build in HOSTILE_REPLIES.items():
        small, large = build(cap), build(16 * cap)
        small_s, large_s = interleaved_medians(
            [lambda reply=small: _parse_all(reply), lambda reply=large: _parse_all(reply)], PARSE_REPEAT
        )
        ratio = large_s / small_s
        rows.append(
            Row(
                f"parse hostile reply: {shape}",
                f"{small_s * 1000:.2f} ms at 64 KiB",
                f"{large_s * 1000:.1f} ms at 1 MiB",
                ratio,
                "<= 40 (linear: 16)",
                ratio <= 40,
            )
        )
    issue_input = '"is_the_agent_response_valid":' + " " * 200 + "x"
    adk_s = _best_seconds(lambda: _parse_critique(issue_input), repeat=1)
    ours_s = _best_seconds(lambda: parse_critique(issue_input))
    rows.append(
        Row(
            "verdict key + 200 spaces (issue 39)",
            f"{ours_s * 1e6:.0f} us",
            f"{adk_s:.2f} s ADK",
            ours_s / adk_s,
            "info",
            True,
        )
    )
    return rows


def main(argv: list[str] | None = None) -> list[Row]:
    """Runs both benchmarks, prints the table and returns its rows."""
    print(f"# judge benchmark on {machine()}")
    achieved, ideal = asyncio.run(_throughput())
    achieved_high, ideal_high = asyncio.run(_throughput(HIGH_CONCURRENCY))
    ours_per_inv, adk_per_inv, our_score, adk_score = asyncio.run(_hallucination_calls())
    efficiency = achieved / ideal
    call_ratio = ours_per_inv / adk_per_inv
    rows = [
        Row(
            f"judge pool inv/s (c={MAX_CONCURRENCY}, {LATENCY_SECONDS * 1000:.0f} ms)",
            f"{achieved:.1f}/s",
            f"{ideal:.1f}/s ideal",
            efficiency,
            ">= 0.9",
            efficiency >= 0.9,
        ),
        Row(
            f"judge pool inv/s (c={HIGH_CONCURRENCY}, {LATENCY_SECONDS * 1000:.0f} ms)",
            f"{achieved_high:.1f}/s",
            f"{ideal_high:.1f}/s ideal",
            achieved_high / ideal_high,
            "info",
            True,
        ),
        Row(
            "hallucinations_v1 judge calls per invocation",
            f"{ours_per_inv:.2f}",
            f"{adk_per_inv:.2f} ADK",
            call_ratio,
            "<= 1.0",
            call_ratio <= 1.0,
        ),
    ]
    rows.extend(_parse_rows())
    print_rows("judge", rows)
    print(f"\nhallucinations_v1 overall score: ours {our_score:.3f}, ADK {adk_score:.3f}")
    return rows


if __name__ == "__main__":
    main()
