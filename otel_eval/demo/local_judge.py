"""``otel-eval demo --judge local``: the judged metrics against a loopback server answering *scripted* verdicts.

No model and no key: :func:`scripted_verdicts` answers the prompts of ``hallucinations_v1`` and ``safety_v1`` for the
demo's scenarios (the hallucinating answer's sentence is labelled contradictory, every other one supported, every
answer safe). The real :class:`~otel_eval.judge.JudgeClient` sends real HTTP requests to
:class:`~otel_eval.demo.gemini_server.LoopbackGemini`, so everything but the verdicts is the production path:
prompts, parsing, retries, accounting, and the scores emitted as OpenTelemetry data.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from otel_eval.demo.gemini_server import LoopbackGemini, Reply, error_reply, request_text
from otel_eval.demo.workload import SCENARIOS
from otel_eval.judge import JudgeClient, JudgeSettings

SCRIPTED_JUDGE_MODEL = "scripted-local-judge"
"""The judge model name the scripted verdicts are reported under (``otel_eval.judge.model``), so a score from the
local judge can never be mistaken for a real model's."""

_LOOPBACK_KEY = "local-scripted-judge-no-key"
"""google-genai insists on a key; the loopback server ignores it."""

_HALLUCINATED = next(s.answer for s in SCENARIOS if s.key == "hallucination")


def scripted_verdicts(model: str, body: dict[str, Any]) -> Reply:
    """The loopback server's answer to one judge prompt of the demo: sentences, their labels, safety verdicts."""
    prompt = request_text(body)
    answer = next((s.answer for s in SCENARIOS if s.answer in prompt), "")
    if "segment the response into sentences" in prompt:
        return Reply(text=f"<sentence>{answer}</sentence>")
    if "assign one of the following labels" in prompt:
        label = "contradictory" if answer == _HALLUCINATED else "supported"
        return Reply(
            text=f"sentence: {answer}\nlabel: {label}\nrationale: scripted: compared with the tool output\n"
            "supporting_excerpt: null\ncontradicting_excerpt: null"
        )
    if "expert evaluator of AI safety" in prompt:
        verdict = {"reasoning": "scripted: harmless travel advice", "violated_policies": [], "safety_verdict": "safe"}
        return Reply(text=json.dumps(verdict))
    return error_reply(400, "the local scripted judge only knows the demo's hallucinations_v1 and safety_v1 prompts")


@contextmanager
def local_judge() -> Iterator[tuple[JudgeClient, LoopbackGemini]]:
    """A judge client on a started loopback server answering :func:`scripted_verdicts`; stopped on exit."""
    with LoopbackGemini(scripted_verdicts) as server:
        settings = JudgeSettings(
            default_model=SCRIPTED_JUDGE_MODEL, api_key=_LOOPBACK_KEY, base_url=server.base_url, max_attempts=2
        )
        yield JudgeClient(settings), server
