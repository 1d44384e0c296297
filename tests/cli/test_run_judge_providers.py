"""``otel-eval run`` judged by every provider ADK resolves (OpenAI, Claude on Vertex AI, the LiteLLM routes), each
through its real SDK to the loopback server speaking its protocol, with only that provider's own variables set; and a
judge model that cannot be served never passes the run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import AGENTEVALS, CliResult
from tests.cli.test_run_judge import HELM, _final_text, _script_contradicted
from tests.judge.fake_gemini import FakeGemini, error_reply, malformed_reply, request_text
from tests.judge.providers_env import MODELS, OPENAI_TEST_KEY, PROTOCOLS, use_provider_env

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")


@pytest.mark.parametrize("model", MODELS)
def test_hallucinations_judged_by_each_provider(
    cli: Callable[..., CliResult], fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, model: str
) -> None:
    use_provider_env(monkeypatch, fake_gemini.base_url, tmp_path)  # no Google key: Gemini is not configured
    _script_contradicted(fake_gemini, _final_text())
    result = cli("run", HELM, "-m", "hallucinations_v1", "--judge-model", model, "--output", "json")
    assert result.exit_code == 1, result.stdout + result.stderr  # judged, and contradicted: FAILED
    [conversation] = result.json()["results"]
    [metric] = conversation["metrics"]
    assert metric["eval_status"] == "FAILED" and metric["score"] == 0.0
    assert {request.protocol for request in fake_gemini.generate_requests()} == {PROTOCOLS[model]}
    assert OPENAI_TEST_KEY not in result.stdout + result.stderr


def test_a_judge_model_without_its_providers_credentials_fails_the_run(
    cli: Callable[..., CliResult], fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "AIzaSyTEST-not-a-real-key-0000000000000")  # a Google key is no help
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    result = cli("run", HELM, "-m", "hallucinations_v1", "--judge-model", "gpt-4o-mini")
    assert result.exit_code == 3, result.stdout + result.stderr
    assert "OPENAI_API_KEY" in result.stderr  # said at start-up
    assert fake_gemini.generate_requests() == []  # never sent to Gemini


@pytest.mark.parametrize("model", ["gpt-4o-mini", "gemini-2.5-flash", "ollama/llama3.1", "ollama_chat/llama3.1"])
def test_a_model_the_provider_does_not_serve_fails_the_run(
    cli: Callable[..., CliResult],
    fake_gemini: FakeGemini,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    model: str,
) -> None:
    """A 404 (no such model) is a configuration problem: the run exits 3, never 0 with nothing judged (a 400 on every
    call too: test_run_strict). Ollama's 404 for a model not pulled was "judge unreachable" (LiteLLM wraps it in a
    connection error), retried as if the server were down."""
    use_provider_env(monkeypatch, fake_gemini.base_url, tmp_path)
    monkeypatch.setenv("GOOGLE_API_KEY", "AIzaSyTEST-not-a-real-key-0000000000000")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    fake_gemini.set_responder(lambda model, body: error_reply(404, "The model does not exist"))
    result = cli("run", HELM, "-m", "hallucinations_v1", "--judge-model", model)
    assert result.exit_code == 3, result.stdout + result.stderr
    assert "judge_not_configured" in result.stderr
    assert "--allow-not-evaluated" in result.stderr


@pytest.mark.parametrize(
    "model", ["gpt-4o-mini", "claude-sonnet-4-5", "anthropic/claude-sonnet-4-5", "ollama/llama3.1"]
)
def test_final_response_match_v2_judged_by_each_provider(
    cli: Callable[..., CliResult], fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, model: str
) -> None:
    use_provider_env(monkeypatch, fake_gemini.base_url, tmp_path)
    fake_gemini.set_responder(lambda m, body: '{"reasoning": "same answer", "is_the_agent_response_valid": "valid"}')
    result = cli(
        "run", HELM, "--eval-set", AGENTEVALS / "eval_set_helm.json", "-m", "final_response_match_v2",
        "--judge-model", model, "--output", "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    [conversation] = result.json()["results"]
    [metric] = [m for m in conversation["metrics"] if m["metric_name"] == "final_response_match_v2"]
    assert (metric["eval_status"], metric["score"]) == ("PASSED", 1.0)
    requests = fake_gemini.generate_requests()
    assert len(requests) == 5 and {r.protocol for r in requests} == {PROTOCOLS[model]}  # ADK's 5 samples


RUBRICS = [
    {"rubric_id": "concise", "rubric_content": {"text_property": "The response is concise."}},
    {"rubric_id": "grounded", "rubric_content": {"text_property": "The response uses the tool results."}},
]


def _rubric_config(directory: Path, model: str) -> Path:
    criterion = {"threshold": 0.8, "judge_model_options": {"judge_model": model, "num_samples": 1}, "rubrics": RUBRICS}
    path = directory / "config.json"
    path.write_text(json.dumps({"criteria": {"rubric_based_final_response_quality_v1": criterion}}))
    return path


def _rubric_verdicts(model: str, body: dict[str, Any]) -> str:
    prompt = request_text(body)
    return "".join(
        f"Property: {rubric['rubric_content']['text_property']}\nEvidence: e\nRationale: r\nVerdict: yes\n\n"
        for rubric in RUBRICS
        if rubric["rubric_content"]["text_property"] in prompt
    )


def test_a_criterions_own_judge_model_is_the_one_checked_at_start_up(
    cli: Callable[..., CliResult], fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Before, the start-up check asked about the default judge (Gemini) whatever the criterion's ``judge_model``:
    a config judging with ``gpt-4o-mini`` and only OpenAI's variables set was told "set GOOGLE_API_KEY", then
    judged fine."""
    use_provider_env(monkeypatch, fake_gemini.base_url, tmp_path)  # OpenAI's variables, no Google key
    fake_gemini.set_responder(_rubric_verdicts)
    result = cli("run", HELM, "--config", _rubric_config(tmp_path, "gpt-4o-mini"), "--output", "json")
    assert result.exit_code == 0, result.stdout + result.stderr
    [conversation] = result.json()["results"]
    [metric] = [m for m in conversation["metrics"] if m["metric_name"] == "rubric_based_final_response_quality_v1"]
    assert (metric["eval_status"], metric["score"]) == ("PASSED", 1.0)
    assert "judge not configured" not in result.stderr, result.stderr
    assert "GOOGLE_API_KEY" not in result.stderr


def test_a_criterions_judge_model_without_its_providers_credentials_is_said_at_start_up(
    cli: Callable[..., CliResult], fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "AIzaSyTEST-not-a-real-key-0000000000000")  # the default judge is served
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    result = cli("run", HELM, "--config", _rubric_config(tmp_path, "gpt-4o-mini"))
    assert result.exit_code == 3, result.stdout + result.stderr
    assert "warning: rubric_based_final_response_quality_v1: judge not configured: judge model 'gpt-4o-mini'" in (
        result.stderr
    )
    assert "OPENAI_API_KEY" in result.stderr
    assert fake_gemini.generate_requests() == []


@pytest.mark.parametrize("model", ["gpt4o-mini", "openrouterx/llama-3.1-8b"])
def test_a_judge_model_adk_does_not_know_is_named_in_the_problem(
    cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    """A mistyped name matches none of ADK's patterns and goes to google-genai (a gateway's own model name). Before,
    the problem said only "set GOOGLE_API_KEY ... (Gemini, the default judge), or set OTEL_EVAL_JUDGE_MODEL", to a
    user who had set OTEL_EVAL_JUDGE_MODEL, naming neither the model nor why it went to Gemini."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_TEST_KEY)
    monkeypatch.setenv("OTEL_EVAL_JUDGE_MODEL", model)
    result = cli("run", HELM, "-m", "hallucinations_v1")
    assert result.exit_code == 3, result.stdout + result.stderr
    warning = next(line for line in result.stderr.splitlines() if line.startswith("warning: hallucinations_v1"))
    assert f"judge model {model!r} matches none of ADK's model names" in warning, warning
    assert "GOOGLE_GEMINI_BASE_URL" in warning  # where a gateway serving that name is set


@pytest.mark.parametrize("model", ["gpt-4o-mini", "claude-sonnet-4-5", "anthropic/claude-sonnet-4-5", "ollama/llama3"])
def test_a_body_that_is_not_the_providers_api_answer_says_so(
    cli: Callable[..., CliResult], fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, model: str
) -> None:
    """A 200 whose body is not JSON (a proxy's page, a base URL pointing at a web server): the SDK hands back the raw
    text. Before, the reason was "AttributeError: 'str' object has no attribute 'choices'"; through LiteLLM (its
    ``anthropic/`` and ``ollama/`` routes) it was an unreachable judge (``judge_connection_error``), retried, its
    reason quoting the body."""
    use_provider_env(monkeypatch, fake_gemini.base_url, tmp_path)
    fake_gemini.set_responder(lambda m, body: malformed_reply())
    result = cli("run", HELM, "-m", "hallucinations_v1", "--judge-model", model, "--output", "json")
    assert result.exit_code == 3, result.stdout + result.stderr
    [conversation] = result.json()["results"]
    [metric] = conversation["metrics"]
    assert metric["error_type"] == "judge_bad_response"
    assert "not the provider's API answer" in metric["explanation"], metric["explanation"]
    assert "AttributeError" not in metric["explanation"]
