"""ADK 2.13's whole metric set: every ``PrebuiltMetrics`` name in ``list-metrics``, and every config ADK 2.13 accepts
(each prebuilt metric with its criterion, custom metrics with and without ``metric_info``) passes ``validate``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
from google.adk.evaluation.eval_config import get_eval_metrics_from_config
from google.adk.evaluation.eval_metrics import PrebuiltMetrics
from google.adk.evaluation.metric_evaluator_registry import (
    DEFAULT_METRIC_EVALUATOR_REGISTRY,
    register_custom_metrics_from_config,
)

from tests.cli.conftest import CliResult

JUDGE = {"judge_model": "gemini-2.5-flash", "num_samples": 3}
RUBRICS = [{"rubric_id": "r1", "rubric_content": {"text_property": "The agent is polite."}}]
INFORMATIONAL = {"tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"}


def adk_criterion(name: str) -> Any:
    """A criterion ADK 2.13 accepts for ``name`` (None: ADK takes no criterion, its efficiency metrics)."""
    if name in INFORMATIONAL:
        return None
    if name.startswith("rubric_based"):
        return {"threshold": 0.7, "judge_model_options": JUDGE, "rubrics": RUBRICS}
    if name == "tool_trajectory_avg_score":
        return {"threshold": 1.0, "match_type": "IN_ORDER"}
    if name == "hallucinations_v1":
        return {"threshold": 0.8, "judge_model_options": JUDGE, "evaluate_intermediate_nl_responses": True}
    if name == "per_turn_user_simulator_quality_v1":
        return {"threshold": 0.8, "judge_model_options": JUDGE, "stop_signal": "</done>"}
    if name in ("final_response_match_v2", "safety_v1") or name.startswith("multi_turn"):
        return {"threshold": 0.6, "judge_model_options": JUDGE}
    return 0.8 if name != "response_evaluation_score" else 3.5


def adk_configs() -> list[tuple[str, dict[str, Any]]]:
    configs = [
        (m.value, {"criteria": {m.value: adk_criterion(m.value)}})
        for m in PrebuiltMetrics
        if m.value not in INFORMATIONAL
    ]
    configs.append(
        (
            "every metric as a threshold",
            {
                "criteria": {
                    m.value: 0.5
                    for m in PrebuiltMetrics
                    if m.value not in INFORMATIONAL and m.value != "response_evaluation_score"
                }
            },
        )
    )
    configs.append(
        (
            "custom metrics",
            {
                "criteria": {"my_metric": 0.5, "stars": {"threshold": 3}},
                "custom_metrics": {
                    "my_metric": {"code_config": {"name": "mypkg.metrics.my_metric"}, "description": "Mine."},
                    "stars": {
                        "codeConfig": {"name": "mypkg.metrics.stars"},
                        "metricInfo": {
                            "metricName": "ignored",
                            "description": "Stars.",
                            "metricValueInfo": {"interval": {"minValue": 1, "maxValue": 5}},
                        },
                    },
                },
            },
        )
    )
    return configs


def test_list_metrics_has_every_prebuilt_metric(cli: Callable[..., CliResult]) -> None:
    result = cli("list-metrics", "--output", "json")
    assert result.exit_code == 0
    metrics = {m["name"]: m for m in result.json()["metrics"]}
    assert {m.value for m in PrebuiltMetrics} <= set(metrics)
    conversation_level = {name for name, m in metrics.items() if m["conversation_level"]}
    assert conversation_level == {
        "rubric_based_multi_turn_trajectory_quality_v1",
        "multi_turn_task_success_v1",
        "multi_turn_trajectory_quality_v1",
        "multi_turn_tool_use_quality_v1",
        "per_turn_user_simulator_quality_v1",
    }
    table = cli("list-metrics")
    for metric in PrebuiltMetrics:
        assert metric.value in table.stdout


@pytest.mark.parametrize(("label", "config"), adk_configs(), ids=[label for label, _ in adk_configs()])
def test_every_config_adk_accepts_validates(
    cli: Callable[..., CliResult], tmp_path: Path, label: str, config: dict[str, Any]
) -> None:
    adk_config = AdkEvalConfig.model_validate(config)  # ADK accepts it ...
    registry = register_custom_metrics_from_config(adk_config, DEFAULT_METRIC_EVALUATOR_REGISTRY.fork())
    known = {str(info.metric_name) for info in registry.get_registered_metrics()}
    assert {m.metric_name for m in get_eval_metrics_from_config(adk_config)} <= known
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = cli("validate", path)  # ... and so do we
    assert result.exit_code == 0, result.stdout
    assert "valid eval config" in result.stdout


def test_a_custom_threshold_outside_metric_info_is_reported(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    config = {
        "criteria": {"stars": 9},
        "custom_metrics": {
            "stars": {
                "code_config": {"name": "mypkg.metrics.stars"},
                "metric_info": {
                    "metric_name": "stars",
                    "metric_value_info": {"interval": {"min_value": 1, "max_value": 5}},
                },
            }
        },
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = cli("validate", path)  # ADK's threshold has no bounds: accepted, with a warning that it never passes
    assert result.exit_code == 0
    assert "warning: criteria.stars.threshold" in result.stdout and "[1, 5]" in result.stdout


def test_a_custom_metric_left_out_of_criteria_is_reported_as_never_running(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """ADK runs only the metrics named in ``criteria``: a custom metric defined but not named there gives no score,
    which validate says (the file stays valid, as ADK accepts it)."""
    config = {
        "criteria": {"stars": 0.5},
        "customMetrics": {name: {"codeConfig": {"name": f"mypkg.metrics.{name}"}} for name in ("stars", "forgotten")},
    }
    adk_config = AdkEvalConfig.model_validate(config)
    adk_runs = [m.metric_name for m in get_eval_metrics_from_config(adk_config)]
    assert "stars" in adk_runs and "forgotten" not in adk_runs
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = cli("validate", path)
    assert result.exit_code == 0 and f"{path}: valid eval config" in result.stdout
    assert (
        f"{path}: warning: custom_metrics.forgotten: not in criteria, so it never runs (as in ADK): give it a "
        "threshold under criteria.forgotten"
    ) in result.stdout
    assert "custom_metrics.stars" not in result.stdout
