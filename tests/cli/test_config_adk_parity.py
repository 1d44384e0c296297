"""Every eval config ADK 2.13 runs, run as ADK runs it; every config ADK refuses, refused.

Each minimal config is read by ADK's own code (``EvalConfig`` as ADK reads the file, ``get_eval_metrics_from_config``,
then its evaluator registry building every evaluator, as its run start does) and by ``otel-eval validate`` and
``otel-eval run --config`` on the same file: both accept it with the same metrics, or both refuse it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
from google.adk.evaluation.eval_config import get_eval_metrics_from_config
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY

from otel_eval.metrics import default_registry
from otel_eval.metrics.base import logger as metrics_logger
from otel_eval.model import BaseCriterion
from tests.cli.conftest import AGENTEVALS, CliResult

EVAL_SET = AGENTEVALS.parent.parent / "evalsets" / "eval_set_helm.json"
EFFICIENCY = ["tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"]

ACCEPTED: dict[str, Any] = {
    "threshold above the range": {"criteria": {"safety_v1": 7}},
    "threshold below the range": {"criteria": {"response_match_score": -3}},
    "no criteria key": {},
    "empty criteria": {"criteria": {}},
    "ignored judge options, 0 samples": {
        "criteria": {"safety_v1": {"threshold": 0.5, "judgeModelOptions": {"numSamples": 0}}}
    },
    "ignored judge options, 2.5 samples": {
        "criteria": {"response_evaluation_score": {"threshold": 3, "judge_model_options": {"num_samples": 2.5}}}
    },
    "ignored judge options, empty model": {
        "criteria": {"multi_turn_task_success_v1": {"threshold": 0.5, "judgeModelOptions": {"judgeModel": ""}}}
    },
    "judge options beside a deterministic metric": {
        "criteria": {"response_match_score": {"threshold": 0.5, "judgeModelOptions": {"numSamples": 0}}}
    },
    "legacy user simulator config": {"criteria": {}, "userSimulatorConfig": {"max_allowed_invocations": 5}},
    "audio user simulator config": {"user_simulator_config": {"type": "llm_audio", "model": "gemini-2.5-flash"}},
    "live model config": {"criteria": {"response_match_score": 0.5}, "liveModelConfig": {"timeoutSeconds": 30}},
}

REFUSED: dict[str, Any] = {
    "unknown simulator type": {"userSimulatorConfig": {"type": "bogus"}},
    "simulator invocations not an integer": {"user_simulator_config": {"max_allowed_invocations": "many"}},
    "simulator instructions without placeholders": {"userSimulatorConfig": {"customInstructions": "be terse"}},
    "live timeout not an integer": {"live_model_config": {"timeout_seconds": "soon"}},
    "empty judge model": {
        "criteria": {"final_response_match_v2": {"threshold": 0.5, "judgeModelOptions": {"judgeModel": ""}}}
    },
    # Refused by ADK only when its run starts; refused here already by validate (earlier is better).
    "threshold on an informational metric": {"criteria": {"tool_call_count_v1": 1}},
    "unknown metric": {"criteria": {"no_such_metric_v1": 0.5}},
    "criterion of the wrong class": {
        "criteria": {"final_response_match_v2": {"threshold": 0.5, "judgeModelOptions": {"numSamples": 0}}}
    },
}

STRICTER: dict[str, tuple[Any, str]] = {
    # ADK's EvalConfig ignores unknown top-level keys: a misspelled `criteria` runs with no criteria, only the
    # informational metrics, so a gate on it can never fail. Refused here, naming the file and the key.
    "misspelled criteria": (
        {"critera": {"tool_trajectory_avg_score": 1.0}},
        "unknown key 'critera' (did you mean 'criteria'?)",
    ),
    "an unknown key beside the criteria": (
        {"criteria": {"response_match_score": 0.5}, "threshold": 0.9},
        "unknown key 'threshold'; an eval config has criteria, custom_metrics",
    ),
}


def adk_metrics(text: str) -> list[str] | None:
    """The metrics ADK 2.13 runs for the config ``text``, or None when ADK refuses it."""
    try:
        metrics = get_eval_metrics_from_config(AdkEvalConfig.model_validate_json(text))
        for metric in metrics:
            DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(metric)
    except Exception:
        return None
    return [metric.metric_name for metric in metrics]


@pytest.fixture(autouse=True)
def _no_judge(clean_genai_env: None) -> Iterator[None]:
    yield


def _write(tmp_path: Path, payload: Any) -> Path:
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps(payload))
    return path


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_what_adk_runs_otel_eval_runs_with_the_same_metrics(
    name: str, cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    path = _write(tmp_path, ACCEPTED[name])
    expected = adk_metrics(path.read_text())
    assert expected is not None, f"ADK refuses {name}"
    validated = cli("validate", path)
    assert validated.exit_code == 0, validated.stdout
    assert validated.stdout.splitlines()[-1] == f"{path}: valid eval config"
    run = cli("run", AGENTEVALS / "helm.json", "--eval-set", EVAL_SET, "--config", path, "--output", "json",
              "--allow-not-evaluated")  # fmt: skip
    assert run.exit_code in (0, 1), run.stderr
    [conversation] = run.json()["results"]
    assert [metric["metric_name"] for metric in conversation["metrics"]] == expected


@pytest.mark.parametrize("name", list(REFUSED))
def test_what_adk_refuses_otel_eval_refuses(name: str, cli: Callable[..., CliResult], tmp_path: Path) -> None:
    path = _write(tmp_path, REFUSED[name])
    assert adk_metrics(path.read_text()) is None, f"ADK runs {name}"
    validated = cli("validate", path)
    assert validated.exit_code == 1
    assert "valid eval config" not in validated.stdout
    run = cli("run", AGENTEVALS / "helm.json", "--config", path, "--output", "json")
    assert run.exit_code == 2, run.stdout


@pytest.mark.parametrize("name", list(STRICTER))
def test_what_adk_reads_as_no_criteria_otel_eval_refuses_naming_the_key(
    name: str, cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    payload, problem = STRICTER[name]
    path = _write(tmp_path, payload)
    assert adk_metrics(path.read_text()) is not None, f"ADK refuses {name}"
    validated = cli("validate", path)
    assert validated.exit_code == 1
    assert f"{path}: $: {problem}" in validated.stdout
    run = cli("run", AGENTEVALS / "helm.json", "--eval-set", EVAL_SET, "--config", path)
    assert run.exit_code == 2, run.stdout
    assert run.stdout == ""
    assert run.stderr.startswith(f"error: {path}: {problem}")
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize(
    ("config", "kind"), [(EVAL_SET, "an ADK eval set"), (AGENTEVALS / "helm.json", "a trace file")]
)
def test_an_eval_set_or_a_trace_file_given_as_the_config_is_refused(
    config: Path, kind: str, cli: Callable[..., CliResult]
) -> None:
    assert adk_metrics(config.read_text()) == EFFICIENCY  # ADK would run it with no criteria
    run = cli("run", AGENTEVALS / "helm.json", "--eval-set", EVAL_SET, "--config", config)
    assert (run.exit_code, run.stdout) == (2, "")
    assert run.stderr == f"error: {config}: this is {kind}, not an eval config\n"


def test_validate_says_which_kind_it_checked_a_file_with_neither_kinds_keys_as(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    path = _write(tmp_path, {"metrics": {"response_match_score": 0.5}})
    result = cli("validate", path)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == (
        f"{path}: $: has neither an eval set's keys (eval_set_id, eval_cases) nor an eval config's (criteria, "
        "custom_metrics, user_simulator_config, live_model_config): checked as an eval set"
    )
    trace = cli("validate", AGENTEVALS / "helm.json")
    assert (
        trace.stdout
        == f"{AGENTEVALS / 'helm.json'}: a trace file, not an eval set or eval config (otel-eval convert reads it)\n"
    )


def test_empty_criteria_add_no_defaults_but_no_config_at_all_does(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """ADK's default criteria (trajectory 1.0, response match 0.8) apply only when there is no config file."""
    empty = _write(tmp_path, {"criteria": {}})
    assert adk_metrics(empty.read_text()) == EFFICIENCY
    run = cli("run", AGENTEVALS / "helm.json", "--eval-set", EVAL_SET, "--config", empty, "--output", "json")
    assert [m["metric_name"] for m in run.json()["results"][0]["metrics"]] == EFFICIENCY
    defaults = cli("run", AGENTEVALS / "helm.json", "--eval-set", EVAL_SET, "--output", "json")
    names = [m["metric_name"] for m in defaults.json()["results"][0]["metrics"]]
    assert names == ["tool_trajectory_avg_score", "response_match_score", *EFFICIENCY]


def test_a_threshold_outside_the_range_warns_once_and_decides_as_adk_would(
    cli: Callable[..., CliResult], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _write(tmp_path, {"criteria": {"response_match_score": 1.25}})
    validated = cli("validate", path)
    assert validated.stdout.splitlines() == [
        f"{path}: warning: criteria.response_match_score.threshold: threshold 1.25 of metric 'response_match_score' "
        "is above its range [0, 1]: it can never pass",
        f"{path}: valid eval config",
    ]
    with caplog.at_level(logging.WARNING, logger=metrics_logger.name):
        run = cli("run", AGENTEVALS / "helm.json", "--eval-set", EVAL_SET, "--config", path, "--output", "json")
        for _ in range(3):
            default_registry().create("response_match_score", BaseCriterion(threshold=1.25))
    assert run.exit_code == 1  # a ROUGE score of at most 1 never reaches 1.25: FAILED, as in ADK
    metric = next(m for m in run.json()["results"][0]["metrics"] if m["metric_name"] == "response_match_score")
    assert (metric["eval_status"], metric["threshold"]) == ("FAILED", 1.25)
    # run says it as validate does (file, JSON path, problem), once; it was a bare log line naming neither
    said = [line for line in run.stderr.splitlines() if "can never pass" in line]
    assert said == [
        f"warning: {path}: criteria.response_match_score.threshold: threshold 1.25 of metric 'response_match_score' "
        "is above its range [0, 1]: it can never pass"
    ]
    logged = [r for r in caplog.records if "1.25" in r.getMessage() and "can never pass" in r.getMessage()]
    assert logged == []  # once per process: validate printed its own, run said it, the evaluators made after log none


def test_run_names_the_test_config_beside_the_eval_set_in_a_threshold_warning(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    eval_set = tmp_path / "helm.evalset.json"
    eval_set.write_bytes(EVAL_SET.read_bytes())
    beside = _write(tmp_path, {"criteria": {"tool_trajectory_avg_score": 1.5}})
    run = cli("run", AGENTEVALS / "helm.json", "--eval-set", eval_set, "--output", "json")
    assert run.exit_code == 1
    said = [line for line in run.stderr.splitlines() if "can never pass" in line]
    assert said == [
        f"warning: {beside}: criteria.tool_trajectory_avg_score.threshold: threshold 1.5 of metric "
        "'tool_trajectory_avg_score' is above its range [0, 1]: it can never pass"
    ]


def test_judge_model_flag_keeps_the_configs_custom_metrics(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "criteria": {"answer_has_digit": 0.5, "final_response_match_v2": 0.5},
            "custom_metrics": {
                "answer_has_digit": {"code_config": {"name": "tests.metrics.custom_metrics_fixture.answer_has_digit"}}
            },
        },
    )
    run = cli("run", AGENTEVALS / "helm.json", "--eval-set", EVAL_SET, "--config", path, "--judge-model",
              "gemini-2.5-pro", "--output", "json", "--allow-not-evaluated")  # fmt: skip
    assert run.exit_code in (0, 1), run.stderr
    names = [m["metric_name"] for m in run.json()["results"][0]["metrics"]]
    assert names[:2] == ["answer_has_digit", "final_response_match_v2"]


def test_a_config_asking_more_samples_than_the_request_cap_runs_as_adk_runs_it(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    path = _write(
        tmp_path, {"criteria": {"final_response_match_v2": {"threshold": 0.5, "judgeModelOptions": {"numSamples": 21}}}}
    )
    expected = adk_metrics(path.read_text())
    assert expected is not None and "final_response_match_v2" in expected
    run = cli("run", AGENTEVALS / "helm.json", "--eval-set", EVAL_SET, "--config", path, "--output", "json",
              "--allow-not-evaluated")  # fmt: skip
    assert run.exit_code in (0, 1), run.stderr
    assert [m["metric_name"] for m in run.json()["results"][0]["metrics"]] == expected
