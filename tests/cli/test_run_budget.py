"""``otel-eval run --budget``: the judge budget offline, end to end on the command line against the loopback judge."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from otel_eval.model import content_text
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import read_trace_file
from tests.cli.conftest import AGENTEVALS, CliResult
from tests.judge.fake_gemini import FakeGemini
from tests.judge.helpers import TEST_KEY, keyed_sequences

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")

TRACES = [AGENTEVALS / name for name in ("helm.json", "helm_2.json", "helm_3.json", "k8s.json")]


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch, fake_gemini: FakeGemini) -> FakeGemini:
    monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    return fake_gemini


def test_an_exhausted_budget_judges_nothing_and_scores_the_deterministic_metrics(
    cli: Callable[..., CliResult], judge_env: FakeGemini
) -> None:
    result = cli(
        "run", *TRACES, "-m", "hallucinations_v1", "-m", "tool_call_count_v1", "--budget", "0", "--output", "json"
    )
    assert result.exit_code == 0, result.stderr  # refused by the budget is not "the judge is unusable"
    conversations = result.json()["results"]
    assert len(conversations) == len(TRACES)
    for conversation in conversations:
        metrics = {m["metric_name"]: m for m in conversation["metrics"]}
        judged = metrics["hallucinations_v1"]
        assert judged["eval_status"] == "NOT_EVALUATED" and judged["error_type"] == "budget_exhausted"
        assert "judge budget exhausted" in judged["explanation"]
        assert metrics["tool_call_count_v1"]["eval_status"] == "INFORMATIONAL"
    assert judge_env.generate_requests() == []
    assert f"{len(TRACES)} evaluation(s) refused by the judge budget" in result.stderr


def test_a_budget_that_covers_the_evaluation_judges_it(cli: Callable[..., CliResult], judge_env: FakeGemini) -> None:
    [trace] = rebuild_traces(read_trace_file(TRACES[0]).spans)
    sentences = [s.strip() for s in content_text(trace.invocations[0].invocation.final_response).splitlines()]
    sentences = [s for s in sentences if s]
    verdicts = "\n\n".join(
        f"sentence: {s}\nlabel: supported\nrationale: r\nsupporting_excerpt: null\ncontradicting_excerpt: null"
        for s in sentences
    )
    segmented = "\n".join(f"<sentence>{s}</sentence>" for s in sentences)
    judge_env.set_responder(
        keyed_sequences({f"<sentence>{sentences[0]}</sentence>": [verdicts], sentences[0]: [segmented]})
    )
    result = cli("run", TRACES[0], "-m", "hallucinations_v1", "--budget", "hallucinations_v1=5", "--output", "json")
    assert result.exit_code == 0, result.stderr
    [conversation] = result.json()["results"]
    [metric] = conversation["metrics"]
    assert metric["eval_status"] == "PASSED" and metric["score"] == 1.0
    assert len(judge_env.generate_requests()) == 2  # the segmenter and the validator call, both admitted at once


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (("--budget", "lots"), {}, "error: --budget='lots': entry 'lots': expected a USD-per-hour amount >= 0"),
        ((), {"OTEL_EVAL_JUDGE_BUDGET": "safety_v1=-2"}, "error: OTEL_EVAL_JUDGE_BUDGET='safety_v1=-2': entry"),
        (
            ("--budget", "1", "--judge-model", "judge-x"),
            {"OTEL_EVAL_JUDGE_BUDGET": "2"},  # overridden by --budget, so not the one to blame
            "error: --budget is set but judge model 'judge-x' has no price; add it to OTEL_EVAL_JUDGE_PRICES",
        ),
        (
            ("--judge-model", "judge-x"),
            {"OTEL_EVAL_JUDGE_BUDGET": "1"},
            "error: OTEL_EVAL_JUDGE_BUDGET is set but judge model 'judge-x' has no price",
        ),
    ],
)
def test_a_bad_budget_stops_the_run_before_any_work(
    cli: Callable[..., CliResult],
    judge_env: FakeGemini,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    env: dict[str, str],
    message: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = cli("run", TRACES[0], "-m", "hallucinations_v1", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == "" and judge_env.generate_requests() == []


def test_a_budget_naming_an_unknown_metric_is_refused_before_any_call(
    cli: Callable[..., CliResult], judge_env: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A typo would leave the real metric without a limit: refused at start-up, naming the setting as given."""
    result = cli("run", AGENTEVALS / "helm.json", "-m", "hallucinations_v1", "--budget", "halucinations_v1=0")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "--budget: unknown metric 'halucinations_v1'; did you mean hallucinations_v1?" in result.stderr
    monkeypatch.setenv("OTEL_EVAL_JUDGE_BUDGET", "halucinations_v1=0")
    result = cli("run", AGENTEVALS / "helm.json", "-m", "hallucinations_v1")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "OTEL_EVAL_JUDGE_BUDGET: unknown metric 'halucinations_v1'" in result.stderr
    assert judge_env.generate_requests() == []
    monkeypatch.delenv("OTEL_EVAL_JUDGE_BUDGET")
    result = cli("run", AGENTEVALS / "helm.json", "-m", "hallucinations_v1", "--budget", "hallucinations_v1=0,*=1")
    assert result.exit_code == 0, result.stdout + result.stderr  # known names (and '*') are accepted
