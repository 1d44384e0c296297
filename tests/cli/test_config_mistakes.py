"""Config mistakes of a metric author that ADK 2.13 accepts and then only fails on, or silently ignores, are said
where the config is checked: ``otel-eval validate``, ``otel-eval run``, the processor (``OTEL_EVAL_CRITERIA`` and
``criteria=``) and the Kafka worker (``--criteria``), each naming the file (or setting) and the field."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google.adk.evaluation import local_eval_service
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
from google.adk.evaluation.eval_config import get_eval_metrics_from_config
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY

from otel_eval import EvaluationSpanProcessor
from otel_eval.errors import ConfigurationError
from otel_eval.worker.service import build_core
from otel_eval.worker.settings import WorkerSettings
from otel_eval.worker.telemetry import WorkerTelemetry
from tests.cli.conftest import AGENTEVALS, CliResult

RUBRIC_METRIC = "rubric_based_final_response_quality_v1"
REPEATED = "rubrics[2].rubric_id: 'r1' repeats rubrics[0]"


def _rubric(rubric_id: str, text: str, rubric_type: str | None = None) -> dict[str, Any]:
    rubric: dict[str, Any] = {"rubric_id": rubric_id, "rubric_content": {"text_property": text}}
    if rubric_type is not None:
        rubric["type"] = rubric_type
    return rubric


REPEATED_RUBRICS: dict[str, Any] = {
    "criteria": {
        RUBRIC_METRIC: {
            "threshold": 0.8,
            "rubrics": [_rubric("r1", "Is polite."), _rubric("r2", "Is short."), _rubric("r1", "Answers.")],
        }
    }
}


def _write(tmp_path: Path, payload: Any, name: str = "test_config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(payload))
    return path


def test_adk_takes_a_criterion_repeating_a_rubric_id_and_fails_only_when_it_evaluates() -> None:
    metrics = get_eval_metrics_from_config(AdkEvalConfig.model_validate(REPEATED_RUBRICS))
    evaluator: Any = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(metrics[0])  # accepted ...
    with pytest.raises(ValueError, match="Rubric with rubric_id 'r1' already exists"):
        evaluator.create_effective_rubrics_list(None)  # ... and refused per invocation, naming no file


def test_validate_and_run_refuse_a_criterion_repeating_a_rubric_id_naming_file_and_field(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    path = _write(tmp_path, REPEATED_RUBRICS)
    validated = cli("validate", path)
    assert validated.exit_code == 1
    assert validated.stdout.splitlines() == [f"{path}: criteria.{RUBRIC_METRIC}.{REPEATED}"]
    run = cli("run", AGENTEVALS / "helm.json", "--config", path)
    assert run.exit_code == 2 and run.stdout == ""
    assert run.stderr.startswith(f"error: {path}: criteria.{RUBRIC_METRIC}: ")
    assert REPEATED in run.stderr and "Traceback" not in run.stderr


def test_the_processor_and_the_worker_refuse_a_criterion_repeating_a_rubric_id(tmp_path: Path) -> None:
    path = _write(tmp_path, REPEATED_RUBRICS)
    named = rf"^OTEL_EVAL_CRITERIA file {re.escape(str(path))}: criteria\.{RUBRIC_METRIC}: .*"
    with pytest.raises(ConfigurationError, match=named + re.escape(REPEATED)) as raised:
        EvaluationSpanProcessor.from_env({"OTEL_EVAL_CRITERIA": str(path)}, sinks=[lambda records: None])
    with pytest.raises(ConfigurationError) as in_code:
        EvaluationSpanProcessor(criteria=REPEATED_RUBRICS, sinks=[lambda records: None])
    with pytest.raises(ConfigurationError) as worker:
        build_core(WorkerSettings(criteria=str(path)), WorkerTelemetry())
    for error in (raised, in_code, worker):
        assert f"metric '{RUBRIC_METRIC}': {REPEATED}" in str(error.value)


def _eval_set_repeating_rubric_ids() -> dict[str, Any]:
    turn = {
        "invocation_id": "t1",
        "user_content": {"role": "user", "parts": [{"text": "Hi"}]},
        "rubrics": [_rubric("shared", "Greets back.", "FINAL_RESPONSE_QUALITY"), _rubric("own", "Is short.")],
    }
    case_rubrics = [_rubric("shared", "Is polite.", "FINAL_RESPONSE_QUALITY")]
    fine = {"eval_id": "fine", "conversation": [{**turn, "rubrics": [_rubric("own", "Is short.")]}]}
    return {
        "eval_set_id": "greetings",
        "eval_cases": [fine, {"eval_id": "greet", "rubrics": case_rubrics, "conversation": [turn]}],
    }


def test_adk_loads_an_eval_set_repeating_a_rubric_id_and_fails_only_when_it_evaluates_the_case() -> None:
    adk_set = AdkEvalSet.model_validate(_eval_set_repeating_rubric_ids())  # accepted ...
    case = adk_set.eval_cases[1]
    actual = [AdkInvocation(user_content=case.conversation[0].user_content)]
    local_eval_service._copy_eval_case_rubrics_to_actual_invocations(case, actual)
    with pytest.raises(ValueError, match="Rubric with rubric_id 'shared' already exists"):  # ... and refused later
        local_eval_service._copy_invocation_rubrics_to_actual_invocations(case.conversation, actual)


def test_validate_and_run_refuse_an_eval_set_repeating_a_rubric_id_naming_file_case_and_field(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    payload = _eval_set_repeating_rubric_ids()
    payload["eval_cases"][1]["rubrics"].append(_rubric("shared", "Is kind."))
    path = _write(tmp_path, payload, "greetings.evalset.json")
    validated = cli("validate", path)
    assert validated.exit_code == 1
    assert validated.stdout.splitlines() == [
        f"{path}: eval_cases[1].rubrics[1].rubric_id: 'shared' repeats rubrics[0] (case 'greet')",
        f"{path}: eval_cases[1].conversation[0].rubrics[0].rubric_id: 'shared' repeats the case's rubrics[0] "
        "(case 'greet')",
    ]
    run = cli("run", AGENTEVALS / "helm.json", "--eval-set", path)
    assert run.exit_code == 2
    assert run.stderr.startswith(
        f"error: {path}: invalid eval set: eval_cases[1].rubrics[1].rubric_id: 'shared' repeats rubrics[0] "
        "(case 'greet') (+1 more"
    )


NEVER_RUN = "custom_metrics.forgotten: not in criteria, so it never runs (as in ADK): give it a threshold under " \
    "criteria.forgotten"  # fmt: skip
CUSTOM = {
    "criteria": {"answer_has_digit": 0.5},
    "custom_metrics": {
        name: {"code_config": {"name": "tests.metrics.custom_metrics_fixture.answer_has_digit"}}
        for name in ("answer_has_digit", "forgotten")
    },
}


def test_run_warns_of_a_custom_metric_its_criteria_leave_out(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    path = _write(tmp_path, CUSTOM)
    run = cli("run", AGENTEVALS / "helm.json", "--config", path, "--output", "json")
    assert run.exit_code in (0, 1), run.stderr
    assert f"warning: {path}: {NEVER_RUN}" in run.stderr.splitlines()
    assert "answer_has_digit: not in criteria" not in run.stderr
    chosen = cli("run", AGENTEVALS / "helm.json", "--config", path, "-m", "answer_has_digit", "--output", "json")
    assert "not in criteria" not in chosen.stderr  # -m chose the metrics: the others are left out on purpose


def test_the_processor_and_the_worker_warn_of_a_custom_metric_their_criteria_leave_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    path = _write(tmp_path, CUSTOM)
    EvaluationSpanProcessor.from_env({"OTEL_EVAL_CRITERIA": str(path)}, sinks=[lambda records: None]).shutdown()
    assert f"EvaluationSpanProcessor: {NEVER_RUN}" in caplog.messages
    caplog.clear()
    build_core(WorkerSettings.from_flags({"criteria": ("--criteria", str(path))}), WorkerTelemetry())
    assert f"--criteria file {path}: {NEVER_RUN}" in caplog.messages
    caplog.clear()
    named = {**CUSTOM, "custom_metrics": {"answer_has_digit": CUSTOM["custom_metrics"]["answer_has_digit"]}}
    EvaluationSpanProcessor(criteria=named, sinks=[lambda records: None]).shutdown()
    assert not [message for message in caplog.messages if "not in criteria" in message]


MISSPELLED = {"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_typ": "IN_ORDER"}}}
MISSPELLED_PROBLEM = "match_typ: not an option of this metric (did you mean 'match_type'?); ADK would ignore it"


def test_adk_ignores_a_misspelled_criterion_option_leaving_the_option_at_its_default() -> None:
    metrics = get_eval_metrics_from_config(AdkEvalConfig.model_validate(MISSPELLED))
    [metric] = [m for m in metrics if m.metric_name == "tool_trajectory_avg_score"]
    evaluator: Any = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(metric)
    assert evaluator._match_type.name == "EXACT"  # the IN_ORDER meant is silently not applied


def test_a_misspelled_criterion_option_is_refused_everywhere_naming_the_option_meant(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    path = _write(tmp_path, MISSPELLED)
    validated = cli("validate", path)
    assert validated.exit_code == 1
    assert validated.stdout.splitlines() == [f"{path}: criteria.tool_trajectory_avg_score.{MISSPELLED_PROBLEM}"]
    run = cli("run", AGENTEVALS / "helm.json", "--config", path)
    assert run.exit_code == 2
    assert run.stderr.startswith(f"error: {path}: criteria.tool_trajectory_avg_score: ")
    with pytest.raises(ConfigurationError) as from_env:
        EvaluationSpanProcessor.from_env({"OTEL_EVAL_CRITERIA": str(path)}, sinks=[lambda records: None])
    with pytest.raises(ConfigurationError) as worker:
        build_core(WorkerSettings(criteria=str(path)), WorkerTelemetry())
    for error in (from_env, worker):
        assert str(error.value).endswith(f"metric 'tool_trajectory_avg_score': {MISSPELLED_PROBLEM}")
    assert run.stderr.rstrip().endswith(MISSPELLED_PROBLEM)


def test_an_unknown_criterion_option_far_from_any_is_kept_as_adk_keeps_it(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    path = _write(tmp_path, {"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "note": "from the wiki"}}})
    assert cli("validate", path).stdout == f"{path}: valid eval config\n"
