"""Eval-set mistakes ADK 2.13 loads without a word are said by ``otel-eval validate`` and ``otel-eval run``, naming the
file and the case: a case key close to an eval case's field (``rubric`` for ``rubrics``: ADK's ``EvalCase`` keeps
unknown keys as extras, so the case's rubrics are silently absent), and an ``eval_id`` repeated (ADK loads the file,
then ``adk eval`` and ``AgentEvaluator`` refuse to add the second case; ``run`` would report two results by one id).
An eval set loaded online (``OTEL_EVAL_EVAL_SET``: the span processor, the Kafka worker) logs the same warnings once at
start-up, naming the setting and the file."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager

from otel_eval import EvaluationSpanProcessor
from otel_eval import environment_variables as env
from otel_eval.cli import main
from tests._kafka import free_port
from tests.cli.conftest import CliResult

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"
TRACE = EXAMPLES / "helm.json"
RUBRIC = [{"rubric_id": "r1", "rubric_content": {"text_property": "Lists every release."}}]
TYPO = "eval_cases[0].rubric: not a field of an eval case (did you mean 'rubrics'?); ADK ignores it"
REPEATED = "eval_cases[1].eval_id: 'helm_list_releases' repeats eval_cases[0]"


def _eval_set(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    payload = json.loads((EXAMPLES / "eval_set_helm.json").read_text())
    case = payload["eval_cases"][0]
    case["rubric"] = RUBRIC
    twin = json.loads(json.dumps(case))
    del twin["rubric"]
    twin["conversation"][0]["user_content"]["parts"][0]["text"] = "list the Helm releases, please"
    payload["eval_cases"].append(twin)
    path = tmp_path / "helm.evalset.json"
    path.write_text(json.dumps(payload))
    return path, payload


def test_adk_loads_the_eval_set_then_its_runners_refuse_the_repeated_id(tmp_path: Path) -> None:
    _, payload = _eval_set(tmp_path)
    eval_set = AdkEvalSet.model_validate(payload)
    assert eval_set.eval_cases[0].rubrics is None  # the misspelt key is kept as an extra, the rubrics are not there
    manager = InMemoryEvalSetsManager()  # what adk eval and AgentEvaluator add the cases to
    manager.create_eval_set("app", eval_set.eval_set_id)
    manager.add_eval_case("app", eval_set.eval_set_id, eval_set.eval_cases[0])
    with pytest.raises(ValueError, match="already exists"):
        manager.add_eval_case("app", eval_set.eval_set_id, eval_set.eval_cases[1])


def test_validate_warns_of_both_and_keeps_the_file_valid(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    path, _ = _eval_set(tmp_path)
    result = cli("validate", path)
    assert result.exit_code == 0, result.stdout
    assert f"{path}: warning: {TYPO}" in result.stdout
    assert f"{path}: warning: {REPEATED}" in result.stdout
    assert f"{path}: valid eval set" in result.stdout


def test_run_warns_of_both(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    path, _ = _eval_set(tmp_path)
    result = cli("run", TRACE, "--eval-set", path, "-m", "tool_trajectory_avg_score")
    assert result.exit_code == 0, result.stderr
    assert f"warning: {path}: {TYPO}" in result.stderr
    assert f"warning: {path}: {REPEATED}" in result.stderr


def _logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The case warnings logged, each cut to the length of what the CLI tests expect of it."""
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "eval_cases[" in r.getMessage()]
    return [line if "rubric" in line else line[: line.index(" (adk eval")] for line in said]


def test_the_processor_logs_both_once_at_start_up(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path, _ = _eval_set(tmp_path)
    with caplog.at_level(logging.WARNING):
        processor = EvaluationSpanProcessor.from_env({env.OTEL_EVAL_EVAL_SET: str(path)}, sinks=[lambda records: None])
        processor.shutdown()
    assert _logged(caplog) == [
        f"{env.OTEL_EVAL_EVAL_SET}: {path}: {TYPO}",
        f"{env.OTEL_EVAL_EVAL_SET}: {path}: {REPEATED}",
    ]


def test_the_worker_logs_both_once_at_start_up(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path, _ = _eval_set(tmp_path)
    args = ["worker", "--telemetry", "none", "--bootstrap-servers", f"127.0.0.1:{free_port()}", "--metrics-port", "0"]
    with caplog.at_level(logging.WARNING):
        assert CliRunner().invoke(main, [*args, "--eval-set", str(path)]).exit_code == 1  # no broker listens there
    assert _logged(caplog) == [
        f"--eval-set: {path}: {TYPO}",
        f"--eval-set: {path}: {REPEATED}",
    ]
