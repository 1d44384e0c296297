"""Output paths that cannot be written: one line naming the path and the reason, exit 2 (bad input), never a
traceback with exit 1 (which a CI gate reads as a FAILED metric); a directory is checked before any work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.cli.conftest import AGENTEVALS, CliResult

EVAL_SET = AGENTEVALS.parent.parent / "evalsets" / "eval_set_helm.json"
REPO = Path(__file__).resolve().parents[2]


def _file(tmp_path: Path) -> Path:
    """A regular file: nothing can be created under it, whoever runs the tests (root included)."""
    path = tmp_path / "a-file"
    path.write_text("")
    return path


def test_golden_into_a_missing_directory_names_the_path(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    output = tmp_path / "no" / "such" / "golden.evalset.json"
    result = cli("golden", AGENTEVALS / "helm.json", "-o", output)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == f"error: {output}: cannot write: No such file or directory"
    assert not output.parent.exists()  # not created: a typo'd -o makes no folders


def test_results_dir_that_cannot_be_made_stops_the_run_before_scoring(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    results_dir = _file(tmp_path) / "results"
    result = cli("run", AGENTEVALS / "helm.json", "--eval-set", EVAL_SET, "--results-dir", results_dir)
    assert result.exit_code == 2
    assert result.stdout == ""  # no conversation was scored
    assert result.stderr.splitlines()[-1] == f"error: {results_dir}: cannot write: Not a directory"


def test_results_dir_is_still_made_with_its_parents_and_written(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    results_dir = tmp_path / "new" / "results"
    result = cli("run", AGENTEVALS / "helm.json", "--eval-set", EVAL_SET, "--results-dir", results_dir)
    assert result.exit_code == 0, result.stderr
    [written] = results_dir.glob("*.evalset_result.json")
    assert json.loads(written.read_text())["eval_set_id"] == "helm_eval_set"


def test_demo_output_dir_that_cannot_be_made_stops_before_the_agent_runs(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    output = _file(tmp_path) / "demo-output"
    result = cli("demo", "--judge", "local", "--output-dir", output)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"error: {output}: cannot write: Not a directory\n"


def test_the_command_in_its_own_process_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    results_dir = _file(tmp_path) / "results"
    command = [sys.executable, "-c", "from otel_eval.cli import main; main()"]
    done = subprocess.run(
        [*command, "run", str(AGENTEVALS / "helm.json"), "--results-dir", str(results_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},  # this checkout's otel_eval, whichever is installed
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == f"error: {results_dir}: cannot write: Not a directory\n"
