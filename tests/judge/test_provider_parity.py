"""Per judge provider, ADK 2.13's own evaluators and ours give the same scores and statuses with the same judge
answers: both judge through the provider's real SDK (ADK's ``OpenAILlm``, ``Claude`` and ``LiteLlm``; our providers)
over HTTP to the same loopback server speaking that provider's protocol, answering by the same scripted rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.metrics.final_response_match_v2 import FinalResponseMatchV2Evaluator
from otel_eval.metrics.hallucinations_v1 import HallucinationsV1Evaluator
from otel_eval.model import HallucinationsCriterion, LlmAsAJudgeCriterion
from tests.judge.fake_gemini import FakeGemini
from tests.judge.helpers import adk_invocations, adk_metric, keyed_sequences, traced
from tests.judge.providers_env import MODELS, PROTOCOLS, use_provider_env
from tests.metrics.test_final_response_match_v2 import SCRIPT, conversation
from tests.metrics.test_hallucinations_v1 import labels, script, weather_invocation

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env", "quiet_adk")


@pytest.fixture
def providers(monkeypatch: pytest.MonkeyPatch, fake_gemini: FakeGemini, tmp_path: Path) -> FakeGemini:
    use_provider_env(monkeypatch, fake_gemini.base_url, tmp_path)
    return fake_gemini


def our_judge() -> JudgeClient:
    return JudgeClient(
        JudgeSettings(cache_size=0, timeout_seconds=5.0, initial_backoff_seconds=0.01, max_backoff_seconds=0.05)
    )


async def _close_adk_client(evaluator: Any) -> None:
    """ADK never closes the SDK client its model made."""
    llm = getattr(evaluator, "_judge_model", None)
    for cached in ("_openai_client", "_anthropic_client"):
        client = getattr(llm, "__dict__", {}).get(cached)
        if client is not None:
            await client.close()


@pytest.mark.parametrize("model", MODELS)
async def test_hallucinations_v1_equals_adks_with_each_provider(providers: FakeGemini, model: str) -> None:
    from google.adk.evaluation.hallucinations_v1 import HallucinationsV1Evaluator as AdkEvaluator

    table = script(labels(("It is sunny in Paris.", "supported"), ("Enjoy your day!", "disputed")))
    invocations = [weather_invocation(), weather_invocation("It is sunny in Paris.")]
    spec = {
        "threshold": 0.8,
        "evaluate_intermediate_nl_responses": True,
        "judge_model_options": {"judge_model": model},
    }
    providers.set_responder(keyed_sequences(table))
    adk = AdkEvaluator(adk_metric("hallucinations_v1", spec))
    theirs = await adk.evaluate_invocations(adk_invocations(invocations))
    await _close_adk_client(adk)
    assert {request.protocol for request in providers.generate_requests()} == {PROTOCOLS[model]}
    providers.reset()
    providers.set_responder(keyed_sequences(table))
    judge = our_judge()
    ours = await HallucinationsV1Evaluator(HallucinationsCriterion.model_validate(spec), judge=judge).evaluate(
        traced(*invocations)
    )
    await judge.aclose()
    assert {request.protocol for request in providers.generate_requests()} == {PROTOCOLS[model]}
    assert [r.score for r in ours.per_invocation_results] == [r.score for r in theirs.per_invocation_results]
    assert ours.overall_score == pytest.approx(theirs.overall_score)
    assert ours.overall_eval_status.value == theirs.overall_eval_status.value
    assert ours.per_invocation_results[0].score is not None


@pytest.mark.parametrize("model", MODELS)
async def test_final_response_match_v2_equals_adks_with_each_provider(providers: FakeGemini, model: str) -> None:
    from google.adk.evaluation.final_response_match_v2 import FinalResponseMatchV2Evaluator as AdkEvaluator

    spec = {"threshold": 0.5, "judge_model_options": {"judge_model": model, "num_samples": 3}}
    actual, expected = conversation()
    providers.set_responder(keyed_sequences(SCRIPT))
    adk = AdkEvaluator(adk_metric("final_response_match_v2", spec))
    theirs = await adk.evaluate_invocations(adk_invocations(actual), adk_invocations(expected))
    await _close_adk_client(adk)
    assert len(providers.generate_requests()) == 9
    providers.reset()
    providers.set_responder(keyed_sequences(SCRIPT))
    judge = our_judge()
    ours = await FinalResponseMatchV2Evaluator(LlmAsAJudgeCriterion.model_validate(spec), judge=judge).evaluate(
        traced(*actual), expected
    )
    await judge.aclose()
    assert {request.protocol for request in providers.generate_requests()} == {PROTOCOLS[model]}
    assert [r.score for r in ours.per_invocation_results] == [r.score for r in theirs.per_invocation_results]
    assert [r.eval_status.value for r in ours.per_invocation_results] == [
        r.eval_status.value for r in theirs.per_invocation_results
    ]
    assert ours.overall_score == theirs.overall_score
    assert ours.overall_eval_status.value == theirs.overall_eval_status.value
