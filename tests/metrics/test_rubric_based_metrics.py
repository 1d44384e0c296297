"""Rubric-based metrics against the loopback judge: parsing, id/text matching, votes, pooled mean, ADK parity."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import types as genai_types

from otel_eval.judge import JUDGE_UNPARSEABLE
from otel_eval.judge.retry import INCOMPLETE_CONTEXT
from otel_eval.metrics._judge_rubrics import normalize_rubric_text, parse_rubric_responses
from otel_eval.metrics.rubric_based_final_response_quality_v1 import RubricBasedFinalResponseQualityV1Evaluator
from otel_eval.metrics.rubric_based_tool_use_quality_v1 import RubricBasedToolUseV1Evaluator
from otel_eval.model import (
    EvalStatus,
    IntermediateData,
    Rubric,
    RubricContent,
    RubricsBasedCriterion,
)
from tests.judge.fake_gemini import FakeGemini
from tests.judge.helpers import adk_invocations, adk_metric, invocation, keyed_sequences, make_judge, traced

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")

CONCISE = "The agent's response is direct and to the point."
POLITE = "The response is polite."
CITED = "The response cites the weather tool."


def block(rubric_id: str | None, prop: str, verdict: str, rationale: str = "because") -> str:
    id_line = f"ID: {rubric_id}\n" if rubric_id is not None else ""
    return f"{id_line}Property: {prop}\nEvidence: none\nRationale: {rationale}\nVerdict: {verdict}\n"


def rubric(rubric_id: str, text: str, rubric_type: str | None = None) -> Rubric:
    return Rubric(rubric_id=rubric_id, rubric_content=RubricContent(text_property=text), type=rubric_type)


def criterion_spec(num_samples: int, rubrics: list[Rubric]) -> dict[str, Any]:
    return {
        "threshold": 0.6,
        "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": num_samples},
        "rubrics": [r.model_dump(mode="json", exclude_none=True) for r in rubrics],
    }


CRITERION_RUBRICS = [rubric("concise", CONCISE), rubric("polite", POLITE)]


def conversation() -> list:
    return [
        invocation("Weather in Paris?", "Sunny, 21C in Paris.", invocation_id="a"),
        invocation(
            "And Rome?",
            "Rome is rainy today, as the tool said.",
            invocation_id="b",
            rubrics=[rubric("cited", CITED, "FINAL_RESPONSE_QUALITY"), rubric("ignored", "untyped rubric")],
        ),
    ]


SCRIPT = {
    "Sunny, 21C in Paris.": [
        block("concise", CONCISE, "yes") + "\n" + block("polite", POLITE, "no"),
        # the judge rewords the id: matched by (normalised) property text instead
        block("concise-1", f"**{CONCISE}**", "yes") + "\n" + block("polite", POLITE, "yes"),
        block("concise", CONCISE, "no") + "\n" + block("polite", POLITE, "no"),
    ],
    "Rome is rainy today": [
        block("concise", CONCISE, "yes") + block("polite", POLITE, "yes") + block("cited", CITED, "yes"),
        block("concise", CONCISE, "yes") + block("polite", POLITE, "yes") + block("cited", CITED, "no"),
        "I cannot follow the format.",
    ],
}


async def test_votes_per_rubric_and_pooled_overall(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(keyed_sequences(SCRIPT))
    criterion = RubricsBasedCriterion.model_validate(criterion_spec(3, CRITERION_RUBRICS))
    evaluator = RubricBasedFinalResponseQualityV1Evaluator(criterion, judge=make_judge(fake_gemini))
    result = await evaluator.evaluate(traced(*conversation()))
    first, second = result.per_invocation_results
    # invocation a: concise yes,yes,no -> yes; polite no,yes,no -> no
    assert {s.rubric_id: s.score for s in first.rubric_scores or []} == {"concise": 1.0, "polite": 0.0}
    assert first.score == 0.5
    # invocation b: the unparseable sample does not vote; cited yes,no -> tie -> no
    assert {s.rubric_id: s.score for s in second.rubric_scores or []} == {"concise": 1.0, "polite": 1.0, "cited": 0.0}
    assert second.score == pytest.approx(2 / 3)
    # pooled over 5 voted rubric scores (3 yes) = 0.6, not the mean of invocation means (0.5833)
    assert result.overall_score == pytest.approx(0.6)
    assert result.overall_eval_status is EvalStatus.PASSED
    overall = {s.rubric_id: s.score for s in result.overall_rubric_scores or []}
    assert overall == {"concise": 1.0, "polite": 0.5, "cited": 0.0}
    prompt = fake_gemini.requests[0].prompt
    assert f"*  [id: concise] {CONCISE}" in prompt and "untyped rubric" not in prompt


async def test_unparseable_answers_make_invocation_not_evaluated(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(lambda model, body: "Property: x\nVerdict: yes\n")  # no Rationale: counts differ
    criterion = RubricsBasedCriterion.model_validate(criterion_spec(2, CRITERION_RUBRICS))
    evaluator = RubricBasedFinalResponseQualityV1Evaluator(criterion, judge=make_judge(fake_gemini))
    result = await evaluator.evaluate(traced(conversation()[0]))
    [only] = result.per_invocation_results
    assert only.score is None and only.eval_status is EvalStatus.NOT_EVALUATED and only.error_type == JUDGE_UNPARSEABLE
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED


async def test_missing_rubrics_is_not_evaluated_without_calls(fake_gemini: FakeGemini) -> None:
    evaluator = RubricBasedFinalResponseQualityV1Evaluator(
        RubricsBasedCriterion(threshold=0.5), judge=make_judge(fake_gemini)
    )
    result = await evaluator.evaluate(traced(conversation()[0]))
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED
    assert "Rubrics are required" in (result.explanation or "")
    assert fake_gemini.requests == []


async def test_tool_use_prompt_and_no_final_response(fake_gemini: FakeGemini) -> None:
    call = genai_types.FunctionCall(id="c1", name="get_weather", args={"city": "Paris"})
    reply = genai_types.FunctionResponse(id="c1", name="get_weather", response={"sky": "sunny"})
    data = IntermediateData(tool_uses=[call], tool_responses=[reply])
    fake_gemini.set_responder(lambda model, body: block("called", "Calls get_weather.", "yes"))
    criterion = RubricsBasedCriterion.model_validate(criterion_spec(1, [rubric("called", "Calls get_weather.")]))
    evaluator = RubricBasedToolUseV1Evaluator(criterion, judge=make_judge(fake_gemini))
    result = await evaluator.evaluate(traced(invocation("Weather?", "Sunny.", intermediate_data=data)))
    assert result.overall_score == 1.0
    prompt = fake_gemini.requests[0].prompt
    assert '"name": "get_weather"' in prompt and '"sky": "sunny"' in prompt
    # A deliberate difference from ADK 2.13, which judges an invocation without a final response: it is incomplete
    # context here, NOT_EVALUATED without a judge call.
    fake_gemini.reset()
    result = await evaluator.evaluate(traced(invocation("Weather?", None, intermediate_data=data)))
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED and result.error_type == INCOMPLETE_CONTEXT
    assert fake_gemini.requests == []


def test_parser_and_normalisation_equal_adk() -> None:
    from google.adk.evaluation.rubric_based_evaluator import DefaultAutoRaterResponseParser, _normalize_text

    samples = [
        block("1", CONCISE, "yes") + block(None, POLITE, "No.") + block("3", CITED, "unknown"),
        block("1", CONCISE, "maybe"),
        "Property: a\nRationale: r\n",
        "  ID: 7\n  Property: indented\nRationale: r\nVerdict: YES\n",
    ]
    for text in samples:
        ours = [(r.rubric_id, r.property_text, r.rationale, r.score) for r in parse_rubric_responses(text)]
        theirs = [
            (r.rubric_id, r.property_text, r.rationale, r.score) for r in DefaultAutoRaterResponseParser().parse(text)
        ]
        assert ours == theirs
    for text in ["**“Quoted” — text**", "  > * The  agent\u2019s  reply ", None]:
        assert normalize_rubric_text(text) == _normalize_text(text)


@pytest.mark.parametrize("metric", ["rubric_based_final_response_quality_v1", "rubric_based_tool_use_quality_v1"])
async def test_parity_with_adk_evaluator(adk_env: FakeGemini, metric: str) -> None:
    """Same judge answers -> same per-invocation and overall scores as ADK 2.13's evaluator."""
    from google.adk.evaluation.rubric_based_final_response_quality_v1 import (
        RubricBasedFinalResponseQualityV1Evaluator as AdkFinal,
    )
    from google.adk.evaluation.rubric_based_tool_use_quality_v1 import RubricBasedToolUseV1Evaluator as AdkToolUse

    adk_class, our_class = {
        "rubric_based_final_response_quality_v1": (AdkFinal, RubricBasedFinalResponseQualityV1Evaluator),
        "rubric_based_tool_use_quality_v1": (AdkToolUse, RubricBasedToolUseV1Evaluator),
    }[metric]
    rubrics = [rubric("concise", CONCISE), rubric("polite", POLITE), rubric("cited", CITED)]
    script = {
        "Weather in Paris?": [
            block("concise", CONCISE, "yes") + block("polite", POLITE, "no") + block("cited", CITED, "yes"),
            block("concise", CONCISE, "yes") + block("x", POLITE, "yes") + block("cited", CITED, "no"),
            block("concise", CONCISE, "no") + block("polite", POLITE, "no") + block("cited", CITED, "no"),
        ],
        "And Rome?": [
            block("concise", CONCISE, "yes") + block("polite", f"“{POLITE}”", "yes") + block("cited", CITED, "yes"),
            "not the format",
            block("concise", CONCISE, "no") + block("polite", POLITE, "yes"),
        ],
    }
    invocations = [conversation()[0], invocation("And Rome?", "Rainy.", invocation_id="b")]
    spec = criterion_spec(3, rubrics)
    adk_env.set_responder(keyed_sequences(script))
    theirs = await adk_class(adk_metric(metric, spec)).evaluate_invocations(adk_invocations(invocations))
    adk_env.reset()
    adk_env.set_responder(keyed_sequences(script))
    criterion = RubricsBasedCriterion.model_validate(spec)
    ours = await our_class(criterion, judge=make_judge(adk_env)).evaluate(traced(*invocations))
    assert [r.score for r in ours.per_invocation_results] == [r.score for r in theirs.per_invocation_results]
    for mine, adk in zip(ours.per_invocation_results, theirs.per_invocation_results, strict=True):
        assert {(s.rubric_id, s.score) for s in mine.rubric_scores or []} == {
            (s.rubric_id, s.score) for s in adk.rubric_scores or []
        }
    assert ours.overall_score is not None
    assert ours.overall_score == pytest.approx(theirs.overall_score)
    assert ours.overall_eval_status.value == theirs.overall_eval_status.value
    assert {(s.rubric_id, s.score) for s in ours.overall_rubric_scores or []} == {
        (s.rubric_id, s.score) for s in theirs.overall_rubric_scores or []
    }
