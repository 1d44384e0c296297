"""Fixtures for driving the ``otel-eval`` command line in-process."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from otel_eval.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
AGENTEVALS = DATA / "traces" / "agentevals"
STRANDS = DATA / "traces" / "strands-evals"


@dataclass
class CliResult:
    """What a command printed and returned."""

    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout parsed as JSON."""
        return json.loads(self.stdout)


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    """Runs ``otel-eval ARGS...`` in-process and returns its exit code, stdout and stderr."""

    def invoke(*args: str | Path) -> CliResult:
        runner = CliRunner()
        result = runner.invoke(main, [str(a) for a in args], catch_exceptions=False)
        return CliResult(result.exit_code, result.stdout, result.stderr)

    return invoke
