"""The scripted local judge: ``otel-eval demo --judge local`` and ``otel-eval judge-server``, judged metrics against a
loopback server answering *scripted* verdicts.

No model and no key: :func:`scripted_verdicts` answers the prompts of ``hallucinations_v1`` and ``safety_v1``, for
the demo's scenarios and for any other agent's: the segmenter gets the response back as one sentence, the validator
labels every sentence supported (except the demo's hallucinating answer, labelled contradictory), every answer is
safe. The real :class:`~otel_eval.judge.JudgeClient` sends real HTTP requests to
:class:`~otel_eval.demo.gemini_server.LoopbackGemini`, so everything but the verdicts is the production path:
prompts, parsing, retries, accounting, and the scores emitted as OpenTelemetry data. The server says every answer
came from :data:`SCRIPTED_JUDGE_MODEL` (``modelVersion``, hence ``gen_ai.response.model``), a name no backend prices.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from otel_eval import environment_variables as env
from otel_eval.demo.gemini_server import LoopbackGemini, Reply, error_reply, request_text
from otel_eval.demo.workload import SCENARIOS
from otel_eval.judge import JudgeClient, JudgeSettings

SCRIPTED_JUDGE_MODEL = "scripted-local-judge"
"""The judge model name the scripted verdicts are reported under (``otel_eval.judge.model`` and
``gen_ai.response.model``), so a score from the local judge can never be mistaken for a real model's, and no backend
prices its calls."""

LOOPBACK_KEY = "local-scripted-judge-no-key"
"""google-genai insists on a key; the loopback server ignores it."""

SCRIPTED_METRICS = ("hallucinations_v1", "safety_v1")
"""The judged metrics whose prompts the scripted judge answers; any other judge prompt is answered 400."""

_HALLUCINATED = next(s.answer for s in SCENARIOS if s.key == "hallucination")
_DATA_MARKER = re.compile(r"^<<<(?:END )?DATA [^\n]*>>>$", re.MULTILINE)
_SENTENCE = re.compile(r"<sentence>(.*?)</sentence>", re.DOTALL)


def _section(prompt: str, begin: str, end: str) -> str:
    """The prompt's text between the last ``begin`` and the ``end`` after it, without data-block marker lines."""
    start = prompt.rfind(begin)
    if start < 0:
        return ""
    stop = prompt.find(end, start)
    text = prompt[start + len(begin) : stop if stop >= 0 else len(prompt)]
    return _DATA_MARKER.sub("", text).strip()


def scripted_verdicts(model: str, body: dict[str, Any]) -> Reply:
    """The loopback server's answer to one judge prompt: sentences, their labels, safety verdicts."""
    prompt = request_text(body)
    if "segment the response into sentences" in prompt:
        response = _section(prompt, "**Response Begin**", "**Response End**")
        return Reply(text=f"<sentence>{response}</sentence>")
    if "assign one of the following labels" in prompt:
        sentences = _SENTENCE.findall(_section(prompt, "**Sentences Begin**", "**Sentences End**"))
        return Reply(
            text="\n\n".join(
                f"sentence: {sentence}\nlabel: {'contradictory' if sentence.strip() == _HALLUCINATED else 'supported'}"
                "\nrationale: scripted: not judged by a model\nsupporting_excerpt: null\ncontradicting_excerpt: null"
                for sentence in sentences
            )
        )
    if "expert evaluator of AI safety" in prompt:
        verdict = {"reasoning": "scripted: not judged by a model", "violated_policies": [], "safety_verdict": "safe"}
        return Reply(text=json.dumps(verdict))
    return error_reply(400, f"the local scripted judge only answers the prompts of {' and '.join(SCRIPTED_METRICS)}")


def scripted_judge_server(port: int = 0) -> LoopbackGemini:
    """The scripted judge's server (not started): :func:`scripted_verdicts` on 127.0.0.1:``port`` (0: a free one),
    answering as :data:`SCRIPTED_JUDGE_MODEL`."""
    return LoopbackGemini(scripted_verdicts, model_version=SCRIPTED_JUDGE_MODEL, port=port)


@contextmanager
def local_judge() -> Iterator[tuple[JudgeClient, LoopbackGemini]]:
    """A judge client on a started scripted judge server (where its spans go: ``OTEL_EVAL_JUDGE_OWN_TRACE``);
    stopped on exit."""
    with scripted_judge_server() as server:
        settings = JudgeSettings(
            default_model=SCRIPTED_JUDGE_MODEL,
            api_key=LOOPBACK_KEY,
            base_url=server.base_url,
            max_attempts=2,
            own_trace=env.flag_setting(os.environ, env.OTEL_EVAL_JUDGE_OWN_TRACE, env.DEFAULT_JUDGE_OWN_TRACE),
        )
        yield JudgeClient(settings), server
