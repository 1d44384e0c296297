"""``otel-eval validate`` reports every problem of a file in one run, each with its JSON path."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.cli.conftest import CliResult

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"


def _write(tmp_path: Path, payload: object) -> Path:
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps(payload))
    return path


def test_three_problems_in_three_criteria_come_out_together(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "criteria": {
                "hallucination_v1": 0.8,
                "final_response_match_v2": {"threshold": 0.5, "judgeModelOptions": {"judgeModel": " "}},
                "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "SOMETIMES"},
            }
        },
    )
    result = cli("validate", path)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{path}: criteria.hallucination_v1: unknown metric 'hallucination_v1'; did you mean hallucinations_v1?",
        f"{path}: criteria.final_response_match_v2.judgeModelOptions.judge_model: Value error, judge_model must name a "
        "model (ADK's model registry resolves no empty name)",
        f"{path}: criteria.tool_trajectory_avg_score.match_type: 'SOMETIMES' is not one of EXACT, IN_ORDER, ANY_ORDER",
    ]


def test_problems_within_one_criterion_and_beside_schema_errors_all_come_out(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    path = _write(
        tmp_path,
        {
            "criteria": {
                "tool_trajectory_avg_score": {"threshold": 1.5, "matchType": "SOMETIMES", "ignore_args": "maybe"},
                "safety_v1": 2,
                "tool_call_count_v1": 0.5,
            },
            "user_simulator_config": 5,
        },
    )
    lines = [line.removeprefix(f"{path}: ") for line in cli("validate", path).stdout.splitlines()]
    warnings = [line.removeprefix("warning: ") for line in lines if line.startswith("warning: ")]
    problems = [line for line in lines if not line.startswith("warning: ")]
    assert [line.split(":")[0] for line in problems] == [
        "user_simulator_config",
        "criteria.tool_trajectory_avg_score.matchType",
        "criteria.tool_trajectory_avg_score.ignore_args",
        "criteria.tool_call_count_v1",
    ]
    assert "informational and takes no threshold" in problems[-1]
    # Thresholds outside the range are accepted as ADK accepts them, each with a warning.
    assert [line.split(":")[0] for line in warnings] == [
        "criteria.tool_trajectory_avg_score.threshold",
        "criteria.safety_v1.threshold",
    ]


def test_the_shipped_examples_are_valid(cli: Callable[..., CliResult]) -> None:
    result = cli("validate", EXAMPLES / "eval_set_helm.json", EXAMPLES / "test_config.json")
    assert result.exit_code == 0, result.stdout
    assert result.stdout.splitlines() == [
        f"{EXAMPLES / 'eval_set_helm.json'}: valid eval set",
        f"{EXAMPLES / 'test_config.json'}: valid eval config",
    ]
