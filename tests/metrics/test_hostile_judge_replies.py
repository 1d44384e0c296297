"""Hostile judge replies through the real judge path: the loopback Gemini server answers what makes ADK's parsers
backtrack (just under the reply cap) or a megabyte (over it), google-genai carries it, and the judged metrics turn it
into NOT_EVALUATED with the right ``error.type`` while the event loop keeps running other tasks.

The ticker is a liveness check, not a speed target: its longest pause must stay under what fails the worker's
``/healthz`` (:data:`otel_eval.worker.health.LOOP_STALL_SECONDS`); ADK's regexes would hold the loop for hours on
these replies. How fast the parsers are is measured in the property tests' linear-time cases and the report.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from otel_eval import environment_variables as env
from otel_eval import semconv
from otel_eval.judge import JUDGE_UNPARSEABLE
from otel_eval.metrics import _llm_judge
from otel_eval.metrics._llm_judge import max_reply_characters
from otel_eval.metrics.final_response_match_v2 import FinalResponseMatchV2Evaluator
from otel_eval.metrics.hallucinations_v1 import HallucinationsV1Evaluator
from otel_eval.metrics.rubric_based_final_response_quality_v1 import RubricBasedFinalResponseQualityV1Evaluator
from otel_eval.model import EvalStatus, EvaluationResult, LlmAsAJudgeCriterion, RubricsBasedCriterion
from otel_eval.worker.health import LOOP_STALL_SECONDS
from tests.judge.fake_gemini import FakeGemini
from tests.judge.helpers import invocation, keyed_sequences, make_judge, traced
from tests.metrics.test_hallucinations_v1 import FINAL, criterion, segments, weather_invocation
from tests.metrics.test_rubric_based_metrics import CONCISE, rubric

pytest_plugins = ("tests.judge.plugin",)
pytestmark = [pytest.mark.usefixtures("clean_genai_env"), pytest.mark.timeout(120)]

CAP = env.DEFAULT_JUDGE_MAX_REPLY_CHARS
MEGABYTE = 1 << 20


def under_cap(unit: str, tail: str = "") -> str:
    """``unit`` repeated to just under the default cap, then ``tail``."""
    return unit * ((CAP - len(tail) - 64) // len(unit)) + tail


# Replies that make ADK's regexes backtrack, each a little under the cap (so they are parsed).
VERDICT_KEY_AND_SPACES = under_cap(" ", "x").replace(" ", '"is_the_agent_response_valid":', 1)
UNCLOSED_SENTENCES = under_cap("<sentence>")
UNFINISHED_VALIDATIONS = under_cap("sentence: It is sunny in Paris.\nlabel: supported\n")
LINE_STARTS_IN_WHITESPACE = under_cap(" \n", "ID: x")


class Ticker:
    """A task that sleeps 10 ms at a time on the loop under test and records its longest pause."""

    def __init__(self) -> None:
        self.ticks = 0
        self.longest_pause = 0.0
        self._stop = asyncio.Event()

    async def run(self) -> None:
        last = time.monotonic()
        while not self._stop.is_set():
            await asyncio.sleep(0.01)
            now = time.monotonic()
            self.longest_pause = max(self.longest_pause, now - last)
            self.ticks += 1
            last = now

    async def during(self, work: Awaitable[EvaluationResult]) -> EvaluationResult:
        task = asyncio.create_task(self.run())
        try:
            return await work
        finally:
            self._stop.set()
            await task


async def judged(fake_gemini: FakeGemini, table: dict[str, list[Any]], evaluate: Callable[..., Any]) -> Any:
    """Runs ``evaluate(judge)`` against the server answering by ``table``, with a ticker on the same loop."""
    fake_gemini.set_responder(keyed_sequences(table))
    ticker = Ticker()
    result = await ticker.during(evaluate(make_judge(fake_gemini, max_attempts=1)))
    assert ticker.ticks > 0 and ticker.longest_pause < LOOP_STALL_SECONDS
    return result


def not_evaluated(result: EvaluationResult, error_type: str) -> str:
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED and result.overall_score is None
    (only,) = result.per_invocation_results
    assert only.eval_status is EvalStatus.NOT_EVALUATED and only.error_type == error_type
    return only.explanation or ""


def test_the_fixtures_are_pathological_and_under_the_cap() -> None:
    assert max_reply_characters({}) == CAP == 64 * 1024
    for reply in (VERDICT_KEY_AND_SPACES, UNCLOSED_SENTENCES, UNFINISHED_VALIDATIONS, LINE_STARTS_IN_WHITESPACE):
        assert CAP - 200 < len(reply) <= CAP
    assert VERDICT_KEY_AND_SPACES.startswith('"is_the_agent_response_valid":   ')


async def test_hallucinations_segmenter_of_unclosed_tags(fake_gemini: FakeGemini) -> None:
    result = await judged(
        fake_gemini,
        {FINAL: [UNCLOSED_SENTENCES]},
        lambda judge: HallucinationsV1Evaluator(criterion(), judge=judge).evaluate(traced(weather_invocation())),
    )
    assert "No sentences produced by segmenter" in not_evaluated(result, JUDGE_UNPARSEABLE)
    assert len(fake_gemini.requests) == 1  # no validator call after an unusable segmentation


async def test_hallucinations_validator_of_unfinished_blocks(fake_gemini: FakeGemini) -> None:
    table = {
        "<sentence>It is sunny in Paris.</sentence>": [UNFINISHED_VALIDATIONS],
        FINAL: [segments("It is sunny in Paris.", "Enjoy your day!")],
    }
    result = await judged(
        fake_gemini,
        table,
        lambda judge: HallucinationsV1Evaluator(criterion(), judge=judge).evaluate(traced(weather_invocation())),
    )
    assert "validator labelled no sentence" in not_evaluated(result, JUDGE_UNPARSEABLE)
    assert len(fake_gemini.requests) == 2


RUBRIC_CRITERION = RubricsBasedCriterion.model_validate(
    {
        "threshold": 0.5,
        "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": 1},
        "rubrics": [rubric("concise", CONCISE).model_dump(mode="json", exclude_none=True)],
    }
)


async def test_rubric_reply_of_line_starts_in_one_whitespace_run(fake_gemini: FakeGemini) -> None:
    result = await judged(
        fake_gemini,
        {"Sunny, 21C.": [LINE_STARTS_IN_WHITESPACE]},
        lambda judge: RubricBasedFinalResponseQualityV1Evaluator(RUBRIC_CRITERION, judge=judge).evaluate(
            traced(invocation("Weather?", "Sunny, 21C."))
        ),
    )
    assert "Property/Rationale/Verdict" in not_evaluated(result, JUDGE_UNPARSEABLE)


async def test_final_response_verdict_key_then_spaces(fake_gemini: FakeGemini) -> None:
    result = await judged(
        fake_gemini,
        {"Paris, of course.": [VERDICT_KEY_AND_SPACES]},
        lambda judge: FinalResponseMatchV2Evaluator(
            LlmAsAJudgeCriterion.model_validate(
                {"threshold": 0.5, "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": 1}}
            ),
            judge=judge,
        ).evaluate(traced(invocation("Capital?", "Paris, of course.")), [invocation("Capital?", "Paris")]),
    )
    assert "verdict not found" in not_evaluated(result, JUDGE_UNPARSEABLE)


MEGABYTE_REPLY = '"is_valid":' + " " * MEGABYTE + "x"


async def test_replies_over_the_cap_are_not_parsed_and_said_once(
    fake_gemini: FakeGemini, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_llm_judge, "_said_too_long", False)  # as in a fresh process
    caplog.set_level(logging.DEBUG, logger="otel_eval.metrics._llm_judge")
    hallucinations = await judged(
        fake_gemini,
        {FINAL: [MEGABYTE_REPLY]},
        lambda judge: HallucinationsV1Evaluator(criterion(), judge=judge).evaluate(traced(weather_invocation())),
    )
    explanation = not_evaluated(hallucinations, semconv.ERROR_TYPE_JUDGE_REPLY_TOO_LONG)
    assert f"{len(MEGABYTE_REPLY)} characters is over the {CAP} read" in explanation
    rubrics = await judged(
        fake_gemini,
        {"Sunny, 21C.": [MEGABYTE_REPLY]},
        lambda judge: RubricBasedFinalResponseQualityV1Evaluator(RUBRIC_CRITERION, judge=judge).evaluate(
            traced(invocation("Weather?", "Sunny, 21C."))
        ),
    )
    not_evaluated(rubrics, semconv.ERROR_TYPE_JUDGE_REPLY_TOO_LONG)
    warnings = [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "not parsed" in r.getMessage()
    ]
    assert len(warnings) == 1 and env.OTEL_EVAL_JUDGE_MAX_REPLY_CHARS in warnings[0]  # two replies, said once


async def test_the_cap_is_a_setting(fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> None:
    """A larger cap lets the megabyte through, parsed (linear): the verdict is simply not found."""
    monkeypatch.setenv(env.OTEL_EVAL_JUDGE_MAX_REPLY_CHARS, str(2 * MEGABYTE))
    result = await judged(
        fake_gemini,
        {"Sunny, 21C.": [MEGABYTE_REPLY]},
        lambda judge: RubricBasedFinalResponseQualityV1Evaluator(RUBRIC_CRITERION, judge=judge).evaluate(
            traced(invocation("Weather?", "Sunny, 21C."))
        ),
    )
    not_evaluated(result, JUDGE_UNPARSEABLE)


def test_a_bad_cap_names_the_variable() -> None:
    from otel_eval.errors import ConfigurationError

    for bad in ("lots", "512", "-1"):
        with pytest.raises(ConfigurationError, match=env.OTEL_EVAL_JUDGE_MAX_REPLY_CHARS):
            max_reply_characters({env.OTEL_EVAL_JUDGE_MAX_REPLY_CHARS: bad})
    assert max_reply_characters({env.OTEL_EVAL_JUDGE_MAX_REPLY_CHARS: "4096"}) == 4096


def test_segment_coverage_reads_the_response_a_bounded_number_of_times() -> None:
    """A sentence not found where the previous one ended costs a pass over the response, and at most
    ``_COVERAGE_PASSES`` passes are read: a segmenter reply of thousands of invented sentences costs that many, not one
    per sentence, and what comes after them is not counted. Sentences copied in order cost one pass in all; reworded
    or reordered ones, a pass each."""
    from otel_eval.metrics.hallucinations_v1 import _COVERAGE_PASSES, _coverage

    copied = [f"Sentence {i} is copied." for i in range(50)]
    response = " ".join(copied)
    assert _coverage(copied, response) == 1.0
    assert _coverage(copied[25:] + copied[:25], response) == 1.0  # halves swapped
    reworded = [f"Invented claim {i}." for i in range(_COVERAGE_PASSES // 2)]
    assert _coverage(reworded + copied, response) == 1.0
    invented = [f"Invented claim {i}." for i in range(_COVERAGE_PASSES + 1)]
    assert _coverage(invented + copied, response) == 0.0  # the passes are spent before the copied ones
