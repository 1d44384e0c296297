"""An option of ``otel-eval run`` that names the one eval set, config or case is refused when given twice: click keeps
the last value, so ``--eval-set a.json --eval-set b.json`` used to check nothing against ``a.json`` and could exit 0
on a gate that ``a.json`` fails (an ADK user passing the eval sets ``AgentEvaluator.evaluate`` ran from a folder)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import CliResult

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"
TRACE = EXAMPLES / "helm.json"
EVAL_SET = EXAMPLES / "eval_set_helm.json"
CONFIG = EXAMPLES / "test_config.json"


def _failing_eval_set(tmp_path: Path) -> Path:
    """helm's eval set expecting a tool the agent never called: tool_trajectory_avg_score fails against it."""
    payload = json.loads(EVAL_SET.read_text())
    payload["eval_set_id"] = "helm_wrong_tool"
    payload["eval_cases"][0]["conversation"][0]["intermediate_data"]["tool_uses"] = [{"name": "helm_uninstall"}]
    path = tmp_path / "wrong_tool.evalset.json"
    path.write_text(json.dumps(payload))
    return path


def test_the_failing_eval_set_alone_fails_the_gate(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    result = cli("run", TRACE, "--eval-set", _failing_eval_set(tmp_path), "--config", CONFIG)
    assert result.exit_code == 1, result.stderr


def test_a_second_eval_set_is_refused_rather_than_replacing_the_first(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    failing = _failing_eval_set(tmp_path)
    result = cli("run", TRACE, "--eval-set", failing, "--eval-set", EVAL_SET, "--config", CONFIG)
    assert result.exit_code == 2, result.stdout
    assert "--eval-set" in result.stderr
    assert str(failing) in result.stderr and str(EVAL_SET) in result.stderr
    assert "once per eval set" in result.stderr
    assert "eval case" not in result.stdout  # refused before anything is scored


@pytest.mark.parametrize(
    ("option", "values"),
    [
        ("--config", (str(CONFIG), str(EXAMPLES / "test_config.json"))),
        ("--eval-id", ("other_case", "helm_list_releases")),
    ],
)
def test_config_and_eval_id_given_twice_are_refused(
    cli: Callable[..., CliResult], option: str, values: tuple[str, str]
) -> None:
    args = [arg for value in values for arg in (option, value)]
    result = cli("run", TRACE, "--eval-set", EVAL_SET, *args)
    assert result.exit_code == 2, result.stdout
    assert option in result.stderr and all(value in result.stderr for value in values)


def test_each_option_once_still_runs(cli: Callable[..., CliResult]) -> None:
    result = cli("run", TRACE, "--eval-set", EVAL_SET, "--config", CONFIG, "--eval-id", "helm_list_releases")
    assert result.exit_code == 0, result.stderr
