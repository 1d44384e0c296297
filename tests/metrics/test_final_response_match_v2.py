"""final_response_match_v2 against the loopback judge: hand-worked votes, failures, and ADK 2.13 parity."""

from __future__ import annotations

import pytest

from otel_eval.judge import JUDGE_NOT_CONFIGURED, JUDGE_SERVER_ERROR, JUDGE_UNPARSEABLE, JudgeClient, JudgeSettings
from otel_eval.judge.retry import INCOMPLETE_CONTEXT
from otel_eval.metrics._judge_labels import Label, parse_critique
from otel_eval.metrics.final_response_match_v2 import FinalResponseMatchV2Evaluator
from otel_eval.model import EvalStatus, LlmAsAJudgeCriterion
from tests.judge.fake_gemini import FakeGemini, Reply, error_reply
from tests.judge.helpers import adk_invocations, adk_metric, invocation, keyed_sequences, make_judge, traced

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")

VALID = '{\n  "reasoning": "same city",\n  "is_the_agent_response_valid": "valid"\n}'
INVALID = '{\n  "reasoning": "wrong city",\n  "is_the_agent_response_valid": "invalid"\n}'
CAPITALISED = '{"reasoning": "x", "is_the_agent_response_valid": "Valid"}'


def criterion(num_samples: int, threshold: float = 0.5) -> LlmAsAJudgeCriterion:
    return LlmAsAJudgeCriterion.model_validate(
        {"threshold": threshold, "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": num_samples}}
    )


def conversation() -> tuple[list, list]:
    actual = [
        invocation("Capital of France?", "Paris, of course.", invocation_id="a"),
        invocation("Capital of Spain?", "Lisbon.", invocation_id="b"),
        invocation("Capital of Italy?", "Rome it is.", invocation_id="c"),
    ]
    expected = [
        invocation("Capital of France?", "Paris"),
        invocation("Capital of Spain?", "Madrid"),
        invocation("Capital of Italy?", "Rome"),
    ]
    return actual, expected


SCRIPT: dict[str, list[Reply | str]] = {
    "Paris, of course.": [VALID, INVALID, VALID],  # majority valid
    "Lisbon.": [INVALID, VALID, INVALID],  # majority invalid
    "Rome it is.": [CAPITALISED],  # 'Valid' is not ADK's label -> unparseable
}


async def test_votes_and_overall_valid_over_evaluated(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(keyed_sequences(SCRIPT))
    actual, expected = conversation()
    evaluator = FinalResponseMatchV2Evaluator(criterion(3), judge=make_judge(fake_gemini))
    result = await evaluator.evaluate(traced(*actual), expected)
    scores = [r.score for r in result.per_invocation_results]
    assert scores == [1.0, 0.0, None]
    third = result.per_invocation_results[2]
    assert third.eval_status is EvalStatus.NOT_EVALUATED and third.error_type == JUDGE_UNPARSEABLE
    assert result.overall_score == 0.5  # 1 valid of 2 evaluated; the unparseable one is skipped
    assert result.overall_eval_status is EvalStatus.PASSED
    assert result.per_invocation_results[0].explanation == "same city"
    assert len(fake_gemini.requests) == 9


async def test_tie_is_invalid(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(keyed_sequences({"Paris, of course.": [VALID, INVALID]}))
    actual, expected = conversation()
    evaluator = FinalResponseMatchV2Evaluator(criterion(2), judge=make_judge(fake_gemini))
    result = await evaluator.evaluate(traced(actual[0]), expected[:1])
    assert result.per_invocation_results[0].score == 0.0
    assert result.overall_eval_status is EvalStatus.FAILED


async def test_unparseable_samples_do_not_vote(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(keyed_sequences({"Paris, of course.": ["no verdict here", "garbage", VALID]}))
    actual, expected = conversation()
    evaluator = FinalResponseMatchV2Evaluator(criterion(3), judge=make_judge(fake_gemini))
    result = await evaluator.evaluate(traced(actual[0]), expected[:1])
    assert result.overall_score == 1.0


async def test_no_final_response_is_not_judged_unlike_adk(fake_gemini: FakeGemini) -> None:
    """A deliberate difference from ADK 2.13, which judges the empty response (and scores it invalid): an invocation
    without a final response is incomplete context, NOT_EVALUATED, and the judge is not asked."""
    fake_gemini.set_responder(lambda model, body: INVALID)
    evaluator = FinalResponseMatchV2Evaluator(criterion(1), judge=make_judge(fake_gemini))
    result = await evaluator.evaluate(traced(invocation("Hi?", None)), [invocation("Hi?", "Hello")])
    assert result.overall_score is None and result.overall_eval_status is EvalStatus.NOT_EVALUATED
    assert result.error_type == INCOMPLETE_CONTEXT and "no final response" in (result.explanation or "")
    assert fake_gemini.requests == []


async def test_judge_failure_marks_only_that_invocation(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(keyed_sequences({"Lisbon.": [error_reply(500)], "Paris, of course.": [VALID]}))
    actual, expected = conversation()
    evaluator = FinalResponseMatchV2Evaluator(criterion(1), judge=make_judge(fake_gemini, max_attempts=2))
    result = await evaluator.evaluate(traced(*actual[:2]), expected[:2])
    first, second = result.per_invocation_results
    assert first.score == 1.0
    assert second.eval_status is EvalStatus.NOT_EVALUATED and second.error_type == JUDGE_SERVER_ERROR
    assert result.overall_score == 1.0


async def test_no_expected_or_no_judge_is_not_evaluated(fake_gemini: FakeGemini) -> None:
    actual, expected = conversation()
    no_judge = FinalResponseMatchV2Evaluator(criterion(1), judge=JudgeClient(JudgeSettings()))
    result = await no_judge.evaluate(traced(*actual), expected)
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED and result.error_type == JUDGE_NOT_CONFIGURED
    assert {r.error_type for r in result.per_invocation_results} == {JUDGE_NOT_CONFIGURED}
    with_judge = FinalResponseMatchV2Evaluator(criterion(1), judge=make_judge(fake_gemini))
    assert (await with_judge.evaluate(traced(*actual), None)).error_type == "no_reference"
    assert fake_gemini.requests == []


async def test_default_judge_from_environment(fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "env-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    monkeypatch.setenv("OTEL_EVAL_JUDGE_MODEL", "gemini-env-model")
    fake_gemini.set_responder(lambda model, body: VALID)
    evaluator = FinalResponseMatchV2Evaluator(LlmAsAJudgeCriterion(threshold=0.5))  # no judge given
    actual, expected = conversation()
    result = await evaluator.evaluate(traced(actual[0]), expected[:1])
    assert result.overall_score == 1.0
    assert fake_gemini.requests[0].model == "gemini-env-model"  # criterion names no model -> the env default
    assert len(fake_gemini.requests) == 5  # ADK's default num_samples


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ('"is_the_agent_response_valid": "valid",', Label.VALID),
        ('"is_the_agent_response_valid": ["valid"]\n}', Label.VALID),
        ('"is_the_agent_response_valid": true}', Label.VALID),
        ('"is_the_agent_response_valid": "partially_valid"}', Label.INVALID),
        ('"is_the_agent_response_valid": "VALID"}', Label.NOT_FOUND),
        ('"is_the_agent_response_valid": "valid"', Label.NOT_FOUND),
        ('"is_the_agent_response_invalid": "false"}', Label.VALID),
        ('"is_the_agent_response_invalid": true,', Label.INVALID),
        ("nothing", Label.NOT_FOUND),
    ],
)
def test_parse_critique_equals_adk(text: str, label: Label) -> None:
    from google.adk.evaluation.final_response_match_v2 import _parse_critique

    assert parse_critique(text) is label
    assert _parse_critique(text).value == label.value


async def test_parity_with_adk_evaluator(adk_env: FakeGemini) -> None:
    """The same scripted judge answers, fed to ADK 2.13's evaluator and ours, give the same scores."""
    from google.adk.evaluation.final_response_match_v2 import FinalResponseMatchV2Evaluator as AdkEvaluator

    actual, expected = conversation()
    adk_env.set_responder(keyed_sequences(SCRIPT))
    spec = {"threshold": 0.5, "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": 3}}
    adk_result = await AdkEvaluator(adk_metric("final_response_match_v2", spec)).evaluate_invocations(
        adk_invocations(actual), adk_invocations(expected)
    )
    adk_requests = len(adk_env.requests)
    adk_env.reset()
    adk_env.set_responder(keyed_sequences(SCRIPT))
    ours = await FinalResponseMatchV2Evaluator(criterion(3), judge=make_judge(adk_env)).evaluate(
        traced(*actual), expected
    )
    assert adk_requests == 9
    assert [r.score for r in ours.per_invocation_results] == [r.score for r in adk_result.per_invocation_results]
    assert [r.eval_status.value for r in ours.per_invocation_results] == [
        r.eval_status.value for r in adk_result.per_invocation_results
    ]
    assert ours.overall_score == adk_result.overall_score
    assert ours.overall_eval_status.value == adk_result.overall_eval_status.value
