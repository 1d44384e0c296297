"""hallucinations_v1 against the loopback judge: segmenter + validator, labels, steps, calls, ADK parity."""

from __future__ import annotations

import pytest
from google.genai import types as genai_types

from otel_eval.judge import JUDGE_SERVER_ERROR, JUDGE_UNPARSEABLE
from otel_eval.metrics.hallucinations_v1 import HallucinationsV1Evaluator, parse_validation_results
from otel_eval.model import (
    AgentDetails,
    AppDetails,
    EvalStatus,
    HallucinationsCriterion,
    InvocationEvent,
    InvocationEvents,
)
from tests.judge.fake_gemini import FakeGemini, Reply, error_reply
from tests.judge.helpers import adk_invocations, adk_metric, invocation, keyed_sequences, make_judge, traced

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")

FINAL = "It is sunny in Paris. Enjoy your day!"
INTERMEDIATE = "Let me check the weather tool."


def segments(*sentences: str) -> str:
    return "\n".join(f"<sentence>{s}</sentence>" for s in sentences)


def labels(*pairs: tuple[str, str]) -> str:
    return "\n\n".join(
        f"sentence: {s}\nlabel: {label}\nrationale: r\nsupporting_excerpt: null\ncontradicting_excerpt: null"
        for s, label in pairs
    )


def weather_invocation(final: str = FINAL) -> object:
    call = genai_types.FunctionCall(id="c1", name="get_weather", args={"city": "Paris"})
    response = genai_types.FunctionResponse(id="c1", name="get_weather", response={"sky": "sunny"})
    events = InvocationEvents(
        invocation_events=[
            InvocationEvent(
                author="weather_agent",
                content=genai_types.Content(
                    role="model", parts=[genai_types.Part(text=INTERMEDIATE), genai_types.Part(function_call=call)]
                ),
            ),
            InvocationEvent(
                author="weather_agent",
                content=genai_types.Content(role="user", parts=[genai_types.Part(function_response=response)]),
            ),
        ]
    )
    app = AppDetails(agent_details={"weather_agent": AgentDetails(name="weather_agent", instructions="Be factual.")})
    return invocation("Weather in Paris?", final, intermediate_data=events, app_details=app)


# Segmenter prompts carry "**Response Begin**"; validator prompts carry "**Sentences Begin**".
def script(final_labels: str) -> dict[str, list[Reply | str]]:
    return {
        "<sentence>It is sunny in Paris.</sentence>": [final_labels],
        f"<sentence>{INTERMEDIATE}</sentence>": [labels((INTERMEDIATE, "not_applicable"))],
        FINAL: [segments("It is sunny in Paris.", "Enjoy your day!")],
        INTERMEDIATE: [segments(INTERMEDIATE)],
    }


def criterion(intermediate: bool = False) -> HallucinationsCriterion:
    return HallucinationsCriterion(threshold=0.8, evaluate_intermediate_nl_responses=intermediate)


async def test_accuracy_counts_supported_and_not_applicable(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(
        keyed_sequences(script(labels(("It is sunny in Paris.", "supported"), ("Enjoy your day!", "not_applicable"))))
    )
    result = await HallucinationsV1Evaluator(criterion(), judge=make_judge(fake_gemini)).evaluate(
        traced(weather_invocation())
    )
    assert result.overall_score == 1.0 and result.overall_eval_status is EvalStatus.PASSED
    assert len(fake_gemini.requests) == 2  # one segmenter + one validator call for the one step
    validator_prompt = fake_gemini.requests[1].prompt
    for part in ("Developer instructions:", "weather_agent:\nBe factual.", "tool_calls:", '"sky": "sunny"'):
        assert part in validator_prompt


async def test_unsupported_and_contradictory_lower_the_score(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(
        keyed_sequences(script(labels(("It is sunny in Paris.", "contradictory"), ("Enjoy your day!", "supported"))))
    )
    result = await HallucinationsV1Evaluator(criterion(), judge=make_judge(fake_gemini)).evaluate(
        traced(weather_invocation())
    )
    assert result.overall_score == 0.5 and result.overall_eval_status is EvalStatus.FAILED
    assert "contradictory: It is sunny in Paris." in (result.per_invocation_results[0].explanation or "")


async def test_intermediate_steps_and_multi_invocation_mean(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(
        keyed_sequences(script(labels(("It is sunny in Paris.", "unsupported"), ("Enjoy your day!", "unsupported"))))
    )
    evaluator = HallucinationsV1Evaluator(criterion(intermediate=True), judge=make_judge(fake_gemini))
    result = await evaluator.evaluate(traced(weather_invocation(), invocation("Hi", None)))
    first, second = result.per_invocation_results
    assert first.score == 0.5  # mean of steps: intermediate 1.0, final 0.0
    assert second.score is None and second.eval_status is EvalStatus.NOT_EVALUATED  # no text to check
    assert result.overall_score == 0.5
    assert len(fake_gemini.requests) == 4
    intermediate_validator = next(r.prompt for r in fake_gemini.requests if f"<sentence>{INTERMEDIATE}" in r.prompt)
    assert "tool_calls:" not in intermediate_validator  # the call in the same event is not context for the text


async def test_unparseable_segmenter_and_failed_validator(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(keyed_sequences({FINAL: ["no tags at all"]}))
    evaluator = HallucinationsV1Evaluator(criterion(), judge=make_judge(fake_gemini, max_attempts=1))
    result = await evaluator.evaluate(traced(weather_invocation()))
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED
    assert result.per_invocation_results[0].error_type == JUDGE_UNPARSEABLE
    fake_gemini.set_responder(
        keyed_sequences({"**Sentences Begin**": [error_reply(503)], FINAL: [segments("It is sunny in Paris.")]})
    )
    evaluator = HallucinationsV1Evaluator(criterion(), judge=make_judge(fake_gemini, max_attempts=1))  # empty cache
    result = await evaluator.evaluate(traced(weather_invocation()))
    assert result.per_invocation_results[0].error_type == JUDGE_SERVER_ERROR


def test_validation_parser_equals_adk() -> None:
    from google.adk.evaluation.hallucinations_v1 import _parse_validation_results

    text = (
        labels(("A.", "supported"), ("B.", "Disputed"))
        + "\nSENTENCE: C.\nLABEL: weird\nrationale: x\nsupporting_excerpt: NULL\ncontradicting_excerpt: y"
    )
    assert parse_validation_results(text) == _parse_validation_results(text)


async def test_parity_and_call_count_with_adk(adk_env: FakeGemini) -> None:
    from google.adk.evaluation.hallucinations_v1 import HallucinationsV1Evaluator as AdkEvaluator

    table = script(labels(("It is sunny in Paris.", "supported"), ("Enjoy your day!", "disputed")))
    invocations = [weather_invocation(), weather_invocation("It is sunny in Paris.")]
    spec = {"threshold": 0.8, "evaluate_intermediate_nl_responses": True}
    adk_env.set_responder(keyed_sequences(table))
    theirs = await AdkEvaluator(adk_metric("hallucinations_v1", spec)).evaluate_invocations(
        adk_invocations(invocations)
    )
    adk_calls = len(adk_env.requests)
    adk_env.reset()
    adk_env.set_responder(keyed_sequences(table))
    ours = await HallucinationsV1Evaluator(
        HallucinationsCriterion.model_validate(spec), judge=make_judge(adk_env, cache_size=0)
    ).evaluate(traced(*invocations))
    assert [r.score for r in ours.per_invocation_results] == [r.score for r in theirs.per_invocation_results]
    assert ours.overall_score == pytest.approx(theirs.overall_score)
    assert ours.overall_eval_status.value == theirs.overall_eval_status.value
    assert ours.per_invocation_results[0].score is not None
    assert len(adk_env.requests) <= adk_calls
