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


def test_a_golden_case_the_pairing_rule_never_reaches_is_said_by_golden_validate_and_run(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """helm.json and k8s.json ask the same question: made golden together, a re-run of k8s.json is compared with
    helm's case (the first with that user message) and FAILS, its own case never used. Each command now says so."""
    output = tmp_path / "golden.evalset.json"
    made = cli("golden", AGENTEVALS / "helm.json", AGENTEVALS / "k8s.json", "-o", output)
    assert made.exit_code == 0, made.stderr
    cases = [case["eval_id"] for case in json.loads(output.read_text())["eval_cases"]]
    assert len(cases) == 2
    warning = (
        f"case {cases[1]!r} is never paired: a conversation whose first user message is 'list all Helm releases' "
        f"pairs with the earlier case {cases[0]!r} (--eval-id chooses a case)"
    )
    assert f"warning: {output}: {warning}" in made.stderr
    checked = cli("validate", output)
    assert checked.exit_code == 0, checked.stdout
    assert checked.stdout.splitlines() == [f"{output}: warning: {warning}", f"{output}: valid eval set"]
    rerun = cli("run", AGENTEVALS / "k8s.json", "--eval-set", output, "-m", "tool_trajectory_avg_score")
    assert f"warning: {output}: {warning}" in rerun.stderr
    chosen = cli("run", AGENTEVALS / "k8s.json", "--eval-set", output, "--eval-id", cases[1])
    assert chosen.exit_code == 0, chosen.stdout + chosen.stderr
    assert "never paired" not in chosen.stderr
    assert "never paired" not in cli("validate", EVALSETS / "eval_set_helm.json").stdout


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


def test_list_metrics_shows_the_threshold_a_metric_is_gated_on_without_a_criterion(
    cli: Callable[..., CliResult],
) -> None:
    """`run -m safety_v1` gates on 0.8, `-m response_evaluation_score` on 3.5: said by neither list-metrics nor the
    Metrics page, only by the run's own table."""
    table = cli("list-metrics")
    assert table.exit_code == 0
    assert "threshold" in table.stdout.splitlines()[1]
    rows = {line.split("│")[1].strip(): line.split("│")[3].strip() for line in table.stdout.splitlines() if "│" in line}
    assert rows["safety_v1"] == "0.8"
    assert rows["response_evaluation_score"] == "3.5"
    assert rows["tool_trajectory_avg_score"] == "1"
    assert rows["token_usage_v1"] == "—"
    run = cli(
        "run", AGENTEVALS / "helm.json", "-m", "tool_call_count_v1", "-m", "response_match_score", "--output", "json"
    )
    [conversation] = run.json()["results"]
    thresholds = {m["metric_name"]: m["threshold"] for m in conversation["metrics"]}
    assert thresholds == {"tool_call_count_v1": None, "response_match_score": 0.8}
