"""``otel-eval golden``, ``validate`` and ``list-metrics``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

from tests.cli.conftest import AGENTEVALS, CliResult

EVALSETS = AGENTEVALS.parent.parent / "evalsets"


def test_golden_writes_an_eval_set_adk_accepts_and_the_trace_passes_it(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    output = tmp_path / "helm_golden.evalset.json"
    result = cli("golden", AGENTEVALS / "helm_3.json", "-o", output)
    assert result.exit_code == 0, result.stderr
    eval_set = AdkEvalSet.model_validate_json(output.read_text())
    assert eval_set.eval_set_id == "helm_golden"
    [case] = eval_set.eval_cases
    [invocation] = case.conversation or []
    [call] = invocation.intermediate_data.tool_uses  # type: ignore[union-attr]
    assert call.name == "helm_list_releases"
    assert call.args == {"all_namespaces": "true", "output": "json"}
    rerun = cli(
        "run", AGENTEVALS / "helm_3.json", "--eval-set", output, "-m", "tool_trajectory_avg_score", "--output", "json"
    )
    assert rerun.exit_code == 0, rerun.stdout
    assert rerun.json()["results"][0]["metrics"][0]["eval_status"] == "PASSED"


def test_validate_accepts_shipped_eval_sets(cli: Callable[..., CliResult]) -> None:
    result = cli("validate", *sorted(EVALSETS.glob("*.json")))
    assert result.exit_code == 0, result.stdout
    assert result.stdout.count("valid eval set") == 3


def test_validate_prints_each_problem_with_its_json_path(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    bad_set = tmp_path / "bad_set.json"
    bad_set.write_text(
        json.dumps({"eval_set_id": "x", "eval_cases": [{"eval_id": "a"}, {"eval_id": 3, "conversation": []}]})
    )
    bad_config = tmp_path / "bad_config.json"
    bad_config.write_text(
        json.dumps(
            {
                "criteria": {
                    "no_such_metric": 0.5,
                    "tool_trajectory_avg_score": {"threshold": 1, "match_type": "SOMETIMES"},
                }
            }
        )
    )
    good = EVALSETS / "eval_set_helm.json"
    result = cli("validate", bad_set, bad_config, good)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert any(line.startswith(f"{bad_set}: eval_cases[0]") and "Exactly one of conversation" in line for line in lines)
    assert any(line.startswith(f"{bad_set}: eval_cases[1].eval_id") for line in lines)
    assert any(line.startswith(f"{bad_config}: criteria.no_such_metric") for line in lines)
    assert any(
        line.startswith(f"{bad_config}: criteria.tool_trajectory_avg_score") and "match_type" in line for line in lines
    )
    assert f"{good}: valid eval set" in lines


def test_validate_reports_invalid_json_with_position(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"eval_set_id": "x",\n  "eval_cases": [}')
    result = cli("validate", broken)
    assert result.exit_code == 1
    assert "line 2" in result.stdout


def test_list_metrics_json_describes_every_metric(cli: Callable[..., CliResult]) -> None:
    result = cli("list-metrics", "--output", "json")
    assert result.exit_code == 0
    metrics = {m["name"]: m for m in result.json()["metrics"]}
    assert metrics["tool_trajectory_avg_score"]["requires_reference"] is True
    assert metrics["tool_trajectory_avg_score"]["requires_judge"] is False
    assert metrics["token_usage_v1"]["informational"] is True
    assert {"response_match_score", "tool_parameter_match", "tool_trajectory_f1"} <= set(metrics)
