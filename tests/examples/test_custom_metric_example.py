"""The shipped custom metric (examples/custom_metric.py + custom_metric_config.json) runs in ``otel-eval run`` as ADK
runs it, and a config naming code that cannot be imported stops the run at start-up, naming the metric and path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from otel_eval.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def test_the_example_custom_metric_scores_recorded_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))  # as PYTHONPATH=examples
    traces = [str(EXAMPLES / "traces" / name) for name in ("helm.json", "k8s.json")]
    config = str(EXAMPLES / "custom_metric_config.json")
    result = CliRunner().invoke(main, ["run", *traces, "--config", config, "--output", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    scores = {
        conversation["trace_ids"][0]: metric
        for conversation in json.loads(result.stdout)["results"]
        for metric in conversation["metrics"]
        if metric["metric_name"] == "tool_result_in_answer"
    }
    assert sorted((m["eval_status"], m["score"]) for m in scores.values()) == [
        ("NOT_EVALUATED", None),  # k8s.json: no tool was called
        ("PASSED", 1.0),  # helm.json: the answer lists the releases the tool returned
    ]


def test_code_that_cannot_be_imported_stops_the_run(tmp_path: Path) -> None:
    config = json.loads((EXAMPLES / "custom_metric_config.json").read_text())
    config["custom_metrics"]["tool_result_in_answer"]["code_config"]["name"] = "not_installed.metrics.scorer"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    trace = str(EXAMPLES / "traces" / "helm.json")
    result = CliRunner().invoke(main, ["run", trace, "--config", str(path)], catch_exceptions=False)
    assert result.exit_code == 2
    assert "custom metric 'tool_result_in_answer' (not_installed.metrics.scorer)" in result.stderr


def test_a_judge_budget_may_name_the_configs_custom_metric(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget's names are checked against the registry the run uses, the config's custom metrics included."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    trace, config = str(EXAMPLES / "traces" / "helm.json"), str(EXAMPLES / "custom_metric_config.json")
    known = CliRunner().invoke(main, ["run", trace, "--config", config, "--budget", "tool_result_in_answer=1"])
    assert known.exit_code == 0, known.output
    typo = CliRunner().invoke(main, ["run", trace, "--config", config, "--budget", "tool_result_in_answr=1"])
    assert typo.exit_code == 2, typo.output
    assert "--budget: unknown metric 'tool_result_in_answr'; did you mean tool_result_in_answer?" in typo.output
