"""A conversation paired with a ``conversation_scenario`` eval case (the user simulator's cases: a starting prompt and a
plan, no expected conversation) cannot be scored by the metrics comparing with expected invocations; ADK 2.13's
evaluators raise on it (``LocalEvalService`` records NOT_EVALUATED). ``run`` says so, in the result and the exit-3 line,
instead of reporting that no case paired."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import EvalMetric
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

from tests.cli.conftest import CliResult

TRACE = Path(__file__).resolve().parents[2] / "examples" / "traces" / "helm.json"
REFERENCE_METRICS = ("tool_trajectory_avg_score", "response_match_score")


def _scenario_eval_set(tmp_path: Path) -> Path:
    path = tmp_path / "simulated.evalset.json"
    case = {
        "eval_id": "helm_simulated",
        "conversation_scenario": {"starting_prompt": "list all Helm releases", "conversation_plan": "Then stop."},
    }
    path.write_text(json.dumps({"eval_set_id": "simulated", "eval_cases": [case]}))
    return path


def test_adk_does_not_evaluate_its_default_metrics_on_a_scenario_case() -> None:
    actual = AdkInvocation.model_validate({"user_content": {"role": "user", "parts": [{"text": "list all Helm"}]}})
    for evaluator in (
        TrajectoryEvaluator(eval_metric=EvalMetric(metric_name="tool_trajectory_avg_score", threshold=1.0)),
        RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.8)),
    ):
        with pytest.raises(ValueError, match=r"expected_invocations is (needed|required)"):
            evaluator.evaluate_invocations([actual], None)


def test_run_names_the_scenario_case_the_reference_metrics_cannot_compare_with(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    result = cli("run", TRACE, "--eval-set", _scenario_eval_set(tmp_path), "--output", "json")
    assert result.exit_code == 3, result.stderr
    (conversation,) = result.json()["results"]
    assert conversation["eval_id"] == "helm_simulated"
    metrics = {metric["metric_name"]: metric for metric in conversation["metrics"]}
    for name in REFERENCE_METRICS:
        assert metrics[name]["eval_status"] == "NOT_EVALUATED"
        assert "its eval case is a conversation_scenario case" in metrics[name]["explanation"]
        line = next(line for line in result.stderr.splitlines() if line.startswith(f"error: {name} "))
        assert "paired with conversation_scenario cases" in line, line
        assert "none of its cases paired" not in line
