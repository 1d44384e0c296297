"""``OTEL_EVAL_JUDGE_INPUT_LIMITS``: the judge models' input windows, merged over the published defaults, decide
through the judge a metric was given whether a prompt is sent (the real client, against the loopback Gemini server);
a bad table stops start-up naming the variable and the model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from otel_eval.cli import main
from otel_eval.errors import ConfigurationError
from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.judge.budget import CHARS_PER_TOKEN
from otel_eval.judge.retry import CONTEXT_OVERFLOW
from otel_eval.judge.settings import UNKNOWN_MODEL_INPUT_TOKEN_LIMIT
from otel_eval.metrics import default_registry
from otel_eval.metrics.provenance import provenance_of
from otel_eval.model import BaseCriterion, EvalStatus, EvaluationResult
from tests.judge.fake_gemini import FakeGemini, Reply
from tests.judge.helpers import TEST_KEY, invocation, traced

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")

VARIABLE = "OTEL_EVAL_JUDGE_INPUT_LIMITS"
SAFE = Reply(text=json.dumps({"reasoning": "ok", "violated_policies": [], "safety_verdict": "safe"}))


def judge(server: FakeGemini, limits: dict[str, Any] | None) -> JudgeClient:
    """A judge configured as the worker and ``otel-eval run`` configure theirs: from the environment."""
    environ = {VARIABLE: json.dumps(limits)} if limits is not None else {}
    settings = JudgeSettings.from_env(environ, api_key=TEST_KEY, base_url=server.base_url, max_attempts=1)
    return JudgeClient(settings)


async def safety(server: FakeGemini, limits: dict[str, Any] | None, model: str, user: str) -> EvaluationResult:
    server.set_responder(lambda _model, _body: SAFE)
    criterion = BaseCriterion.model_validate(
        {"threshold": 0.5, "judge_model_options": {"judge_model": model, "num_samples": 1}}
    )
    evaluator = default_registry().create("safety_v1", criterion, judge=judge(server, limits))
    return await evaluator.evaluate(traced(invocation(user, "It is sunny.")))


async def test_a_lowered_limit_refuses_an_otherwise_fine_prompt_without_a_request(fake_gemini: FakeGemini) -> None:
    fine = await safety(fake_gemini, None, "gemini-2.5-flash", "Weather in Paris?")
    assert fine.overall_eval_status is EvalStatus.PASSED and len(fake_gemini.requests) == 1
    lowered = await safety(fake_gemini, {"gemini-2.5-flash": 100}, "gemini-2.5-flash", "Weather in Paris?")
    (entry,) = lowered.per_invocation_results
    assert entry.error_type == CONTEXT_OVERFLOW and entry.score is None
    assert "input limit of gemini-2.5-flash (100 tokens)" in (entry.explanation or "")
    assert len(fake_gemini.requests) == 1  # the refused prompt was never sent


async def test_a_raised_limit_lets_a_prompt_over_the_unknown_model_default_through(fake_gemini: FakeGemini) -> None:
    huge = "It is sunny. " * (UNKNOWN_MODEL_INPUT_TOKEN_LIMIT * CHARS_PER_TOKEN // 13 + 1)
    refused = await safety(fake_gemini, None, "gateway-judge", huge)
    assert refused.per_invocation_results[0].error_type == CONTEXT_OVERFLOW and fake_gemini.requests == []
    raised = await safety(fake_gemini, {"gateway-judge": 1_000_000}, "gateway-judge", huge)
    assert raised.overall_eval_status is EvalStatus.PASSED
    (sent,) = fake_gemini.requests
    assert sent.model == "gateway-judge" and huge in sent.prompt


async def test_a_prefix_entry_covers_dated_variants_and_the_longest_prefix_wins(fake_gemini: FakeGemini) -> None:
    limits = {"models/gateway-judge": 100, "gemini-2.5-flash": 100}  # "models/" is dropped, as from model names
    dated = await safety(fake_gemini, limits, "gateway-judge-2025-06-01", "Weather in Paris?")
    assert dated.per_invocation_results[0].error_type == CONTEXT_OVERFLOW
    preview = await safety(fake_gemini, limits, "gemini-2.5-flash-preview-05-20", "Weather in Paris?")
    assert preview.per_invocation_results[0].error_type == CONTEXT_OVERFLOW
    assert fake_gemini.requests == []
    lite = await safety(fake_gemini, limits, "gemini-2.5-flash-lite", "Weather in Paris?")  # its own default entry
    assert lite.overall_eval_status is EvalStatus.PASSED and len(fake_gemini.requests) == 1
    client = judge(fake_gemini, limits)
    assert client.input_token_limit("gemini-2.5-flash-lite-001") == 1_048_576
    assert client.input_token_limit("gemini-1.5-pro") == 2_097_152  # defaults not named stay
    assert client.input_token_limit("other") == UNKNOWN_MODEL_INPUT_TOKEN_LIMIT


def test_the_limits_are_not_part_of_the_evaluator_version(fake_gemini: FakeGemini) -> None:
    """They decide whether an invocation is judged, never the score a judged one gets."""
    criterion = BaseCriterion(threshold=0.5)
    versions = {
        provenance_of(default_registry().create("safety_v1", criterion, judge=judge(fake_gemini, limits))).version
        for limits in (None, {"gemini-2.5-flash": 100})
    }
    assert len(versions) == 1


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("{nope", f"{VARIABLE}: invalid JSON"),
        ('["gemini-2.5-flash", 1000]', f"{VARIABLE}: expected an object of model name or prefix -> tokens"),
        ('{"my-judge": 0}', f"{VARIABLE}: model 'my-judge': input limit 0 is not a positive integer"),
        ('{"my-judge": -5}', f"{VARIABLE}: model 'my-judge': input limit -5 is not a positive integer"),
        ('{"my-judge": 1.5}', f"{VARIABLE}: model 'my-judge': input limit 1.5 is not a positive integer"),
        ('{"my-judge": "32000"}', f"{VARIABLE}: model 'my-judge': input limit '32000' is not a positive integer"),
        ('{"my-judge": true}', f"{VARIABLE}: model 'my-judge': input limit True is not a positive integer"),
        ('{" ": 1000}', f"{VARIABLE}: model ' ': expected a model name or prefix"),
    ],
)
def test_a_bad_table_is_a_clear_configuration_error(value: str, problem: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        JudgeSettings.from_env({VARIABLE: value})
    assert str(caught.value).startswith(problem)


def test_a_bad_table_stops_the_worker_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VARIABLE, '{"my-judge": 0}')
    result = CliRunner().invoke(main, ["worker", "--telemetry", "none"])
    assert result.exit_code == 2
    assert f"{VARIABLE}: model 'my-judge': input limit 0 is not a positive integer" in result.output
