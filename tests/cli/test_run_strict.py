"""``otel-eval run`` for a CI gate and a folder glob: exit 3 when the judge could not score a requested metric at
all (``--allow-not-evaluated`` opts out), eval sets and configs among the trace files skipped with a warning, and no
judge summary line when nothing reached the judge."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from otel_eval.cli._common import EXIT_FAILED, EXIT_NOT_EVALUATED
from tests.cli.conftest import AGENTEVALS, CliResult
from tests.judge.fake_gemini import FakeGemini, error_reply
from tests.judge.helpers import TEST_KEY

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"
HELM = AGENTEVALS / "helm.json"


def test_a_judged_metric_without_credentials_exits_3_naming_it(cli: Callable[..., CliResult]) -> None:
    result = cli("run", HELM, "-m", "hallucinations_v1", "-m", "tool_call_count_v1")
    assert result.exit_code == EXIT_NOT_EVALUATED == 3, result.stderr
    assert "hallucinations_v1 was evaluated on no invocation" in result.stderr
    assert "judge_not_configured" in result.stderr and "--allow-not-evaluated" in result.stderr
    assert "tool_call_count_v1 was evaluated" not in result.stderr
    assert "judge:" not in result.stderr  # no call was made: no summary line

    allowed = cli("run", HELM, "-m", "hallucinations_v1", "--allow-not-evaluated")
    assert allowed.exit_code == 0, allowed.stderr
    assert "NOT_EVALUATED" in allowed.stdout


def test_an_unreachable_judge_exits_3(cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeGemini().start()
    base_url = server.base_url
    server.stop()  # a port nothing listens on any more
    monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", base_url)
    monkeypatch.setenv("OTEL_EVAL_JUDGE_MAX_ATTEMPTS", "1")
    result = cli("run", HELM, "-m", "safety_v1")
    assert result.exit_code == EXIT_NOT_EVALUATED, result.stdout + result.stderr
    assert "safety_v1 was evaluated on no invocation" in result.stderr
    assert "judge_connection_error" in result.stderr
    assert "judge: " in result.stderr  # the failed call is accounted for
    assert TEST_KEY not in result.stdout + result.stderr


def test_an_unreachable_judge_base_url_is_shown_without_its_password(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeGemini().start()
    address = server.base_url.removeprefix("http://")
    server.stop()
    monkeypatch.setenv("OTEL_EVAL_JUDGE_BASE_URL", f"http://admin:pw123@{address}/v1?key=q-secret")
    monkeypatch.setenv("OTEL_EVAL_JUDGE_API_KEY", TEST_KEY)
    monkeypatch.setenv("OTEL_EVAL_JUDGE_MAX_ATTEMPTS", "1")
    for output in ("table", "json"):
        # a subprocess: the warning goes through the CLI's logging to the real stderr
        command = [sys.executable, "-c", "from otel_eval.cli import main; main()"]
        result = subprocess.run(
            [*command, "run", str(HELM), "-m", "hallucinations_v1", "--output", output],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert result.returncode == EXIT_NOT_EVALUATED, result.stdout + result.stderr
        printed = result.stdout + result.stderr
        assert f"judge unreachable at http://{address}/v1 (" in printed
        for secret in ("pw123", "admin:", "q-secret", TEST_KEY):
            assert secret not in printed


@pytest.mark.parametrize("gateway", [False, True], ids=["gemini", "judge-base-url"])
def test_a_judge_that_answers_400_to_every_call_exits_3(
    cli: Callable[..., CliResult], fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch, gateway: bool
) -> None:
    """A gateway (a LiteLLM proxy) answers 400 for a model name it does not know: every call fails, nothing is judged,
    and the gate must not pass."""
    if gateway:
        monkeypatch.setenv("OTEL_EVAL_JUDGE_BASE_URL", fake_gemini.base_url)
        monkeypatch.setenv("OTEL_EVAL_JUDGE_API_KEY", "x")
    else:
        monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    fake_gemini.set_responder(lambda model, body: error_reply(400, "Invalid model name passed in model=nope"))
    result = cli("run", HELM, "-m", "hallucinations_v1")
    assert result.exit_code == EXIT_NOT_EVALUATED, result.stdout + result.stderr
    assert "hallucinations_v1 was evaluated on no invocation" in result.stderr
    assert "judge_bad_request" in result.stderr and "--allow-not-evaluated" in result.stderr
    assert fake_gemini.generate_requests()  # the judge was really called, over HTTP

    allowed = cli("run", HELM, "-m", "hallucinations_v1", "--allow-not-evaluated")
    assert allowed.exit_code == 0, allowed.stderr
    assert "NOT_EVALUATED" in allowed.stdout


def test_deterministic_metrics_print_no_judge_line(cli: Callable[..., CliResult]) -> None:
    result = cli("run", HELM, "--eval-set", AGENTEVALS / "eval_set_helm.json")
    assert result.exit_code == 0, result.stderr
    assert "judge:" not in result.stderr


def test_a_missing_file_prints_no_judge_line(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    result = cli("run", tmp_path / "missing.json", "-m", "hallucinations_v1")
    assert result.exit_code == 2
    assert "judge:" not in result.stderr


def test_a_glob_over_the_examples_skips_the_eval_set_and_the_config(cli: Callable[..., CliResult]) -> None:
    files = sorted(EXAMPLES.glob("*.json"))
    assert {"eval_set_helm.json", "test_config.json"} <= {f.name for f in files}
    result = cli("run", *files, "-m", "tool_call_count_v1", "--output", "json")
    assert result.exit_code == 0, result.stderr
    assert f"warning: skipped {EXAMPLES / 'eval_set_helm.json'}: an ADK eval set, not a trace file" in result.stderr
    assert f"warning: skipped {EXAMPLES / 'test_config.json'}: an ADK eval config, not a trace file" in result.stderr
    assert "error" not in result.stderr
    assert len(result.json()["results"]) >= 4


def test_a_legacy_test_json_among_traces_is_skipped_too(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    legacy = tmp_path / "weather.test.json"
    legacy.write_text(json.dumps([{"query": "hi", "expected_tool_use": [], "reference": "hello"}]))
    result = cli("run", HELM, legacy, "-m", "tool_call_count_v1")
    assert result.exit_code == 0, result.stderr
    assert f"skipped {legacy}: an ADK eval set" in result.stderr


def test_a_broken_trace_file_is_still_an_error(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"something": "else"}))
    result = cli("run", HELM, bad, "-m", "tool_call_count_v1")
    assert result.exit_code == 2 and f"error: {bad}" in result.stderr


def test_the_shipped_config_beside_the_eval_set_is_used(cli: Callable[..., CliResult]) -> None:
    result = cli("run", EXAMPLES / "helm.json", "--eval-set", EXAMPLES / "eval_set_helm.json", "--output", "json")
    assert result.exit_code in (0, EXIT_FAILED), result.stderr
    assert f"note: criteria from {EXAMPLES / 'test_config.json'}" in result.stderr
    names = {m["metric_name"] for r in result.json()["results"] for m in r["metrics"]}
    assert "tool_trajectory_f1" in names  # only test_config.json asks for it


@pytest.mark.parametrize("value", ["0", "many"])
def test_a_bad_max_concurrency_variable_is_refused_at_start_up(
    cli: Callable[..., CliResult], fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """Without --max-concurrency the variable applies (the flag has no default of its own to override it with)."""
    monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    monkeypatch.setenv("OTEL_EVAL_JUDGE_MAX_CONCURRENCY", value)
    result = cli("run", HELM, "-m", "hallucinations_v1")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert f"OTEL_EVAL_JUDGE_MAX_CONCURRENCY={value!r}: expected an integer >= 1" in result.stderr
    assert fake_gemini.generate_requests() == []
    monkeypatch.setenv("OTEL_EVAL_JUDGE_MAX_CONCURRENCY", "1")
    good = cli("run", HELM, "-m", "hallucinations_v1", "--allow-not-evaluated")  # the fake judge's empty replies
    assert good.exit_code in (0, 1), good.stdout + good.stderr
    assert fake_gemini.generate_requests()


def test_a_rubric_based_metric_without_rubrics_exits_3(
    cli: Callable[..., CliResult], fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-m rubric_based_final_response_quality_v1` gives the metric no rubrics: every invocation was NOT_EVALUATED
    ("Rubrics are required.", invalid_input) and the run exited 0, a gate that checked nothing."""
    monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    result = cli("run", HELM, AGENTEVALS / "k8s.json", "-m", "rubric_based_final_response_quality_v1")
    assert result.exit_code == EXIT_NOT_EVALUATED, result.stdout + result.stderr
    assert (
        "error: rubric_based_final_response_quality_v1 was evaluated on no invocation: Rubrics are required, so its "
        "threshold checked nothing (invalid_input); pass --allow-not-evaluated to accept this"
    ) in result.stderr
    assert fake_gemini.generate_requests() == []
    allowed = cli("run", HELM, "-m", "rubric_based_final_response_quality_v1", "--allow-not-evaluated")
    assert allowed.exit_code == 0, allowed.stderr


def test_a_custom_metric_that_raises_on_every_invocation_exits_3(
    cli: Callable[..., CliResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_metric.py").write_text(
        "def score(eval_metric, actual_invocations, expected_invocations, conversation_scenario=None):\n"
        "    raise RuntimeError('lost the tool results')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    config = {
        "criteria": {"broken": 0.5},
        "custom_metrics": {"broken": {"code_config": {"name": "broken_metric.score"}}},
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = cli("run", HELM, "--config", tmp_path / "config.json")
    assert result.exit_code == EXIT_NOT_EVALUATED, result.stdout + result.stderr
    assert "error: broken was evaluated on no invocation: " in result.stderr
    assert "(custom_metric_error); pass --allow-not-evaluated" in result.stderr
