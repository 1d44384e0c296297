"""The READMEs cannot drift from the code: every environment variable and metric is documented, every shell block
marked ``<!-- runnable -->`` in README.md and deploy/README.md runs as written (in a temporary copy of the shipped
files, with the venv's ``bin`` first on PATH as after ``. .venv/bin/activate``), every Python block compiles, and
the files deploy/README.md names exist."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from otel_eval import environment_variables
from otel_eval.metrics import default_registry

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
DEPLOY_README = (REPO / "deploy" / "README.md").read_text(encoding="utf-8")
RUNNABLE = "<!-- runnable -->"
SHIPPED = ("examples", "deploy", "collector_config")
"""What a README command may name: the folders copied into the temporary checkout."""
EXPECTED_EXIT = re.compile(r"#.*\bexits (\d+)\b")


@dataclass(frozen=True)
class Command:
    readme: str  # path relative to the repository: the command runs in its folder
    line: int
    text: str

    @property
    def expected_exit(self) -> int:
        match = EXPECTED_EXIT.search(self.text)
        return int(match.group(1)) if match else 0

    def __str__(self) -> str:
        return f"{self.readme}:{self.line}: {self.text}"


def runnable_commands(readme: str, markdown: str) -> list[Command]:
    """Each command line (backslash continuations joined) of the ``sh`` blocks right after a runnable marker."""
    lines = markdown.splitlines()
    commands = []
    for index, line in enumerate(lines):
        if line.strip() != RUNNABLE:
            continue
        assert lines[index + 1].startswith("```sh"), f"{readme}:{index + 1}: {RUNNABLE} must precede a ```sh block"
        pending, start = "", 0
        for number in range(index + 2, len(lines)):
            text = lines[number]
            if text.startswith("```"):
                break
            pending, start = pending + text.rstrip().removesuffix("\\"), start or number + 1
            if not text.rstrip().endswith("\\") and pending.strip():
                commands.append(Command(readme, start, pending.strip()))
                pending, start = "", 0
    return commands


COMMANDS = runnable_commands("README.md", README) + runnable_commands("deploy/README.md", DEPLOY_README)


def test_every_environment_variable_is_documented() -> None:
    names = [value for name, value in vars(environment_variables).items() if name.startswith("OTEL_EVAL_")]
    assert names
    missing = [name for name in names if f"`{name}`" not in README]
    assert not missing, f"README.md does not document: {', '.join(missing)}"


def test_every_metric_is_in_the_metrics_reference() -> None:
    missing = [name for name in default_registry().names() if f"| `{name}` |" not in README]
    assert not missing, f"README.md metrics table lacks: {', '.join(missing)}"


def test_setup_is_the_two_commands() -> None:
    assert "make demo" in README and "make test" in README


def test_the_walk_covers_the_first_hour() -> None:
    """The commands a newcomer runs first are among the walked ones (a marker removed would skip them silently)."""
    texts = [command.text for command in COMMANDS]
    for expected in (
        "otel-eval demo --judge local",
        "OTEL_EVAL_CONSOLE=true python examples/weather_agent.py",
        "python examples/adk_agent.py",
        "otel-eval run examples/traces/*.json -m hallucinations_v1",
        "otel-eval validate examples/traces/eval_set_helm.json examples/traces/test_config.json",
        "promtool test rules prometheus/tests/*.yaml",
    ):
        assert any(text.startswith(expected) for text in texts), f"no runnable README command starts with {expected!r}"


def test_every_python_block_compiles() -> None:
    for name, markdown in (("README.md", README), ("deploy/README.md", DEPLOY_README)):
        for block in re.findall(r"```python\n(.*?)```", markdown, re.DOTALL):
            ast.parse(block, filename=name)


def test_files_named_in_deploy_readme_exist() -> None:
    named = set(re.findall(r"`([\w./-]+\.(?:ya?ml|json))`", DEPLOY_README))
    assert named
    shipped = {path.name for folder in SHIPPED for path in (REPO / folder).rglob("*") if path.is_file()}
    missing = sorted(name for name in named if Path(name).name not in shipped)
    assert not missing, f"deploy/README.md names files that do not exist: {missing}"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temporary copy of what the README commands use, as a fresh clone has it."""
    root = tmp_path_factory.mktemp("checkout")
    for folder in SHIPPED:
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", ".venv*"))
    return root


@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_readme_command_runs_as_written(command: Command, checkout: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOOGLE_", "GEMINI_"))}
    environ["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), environ.get("PATH", "")))
    environ["PYTHONPATH"] = str(REPO)  # this checkout's code, as the editable install of a clone would give
    cwd = checkout / Path(command.readme).parent
    process = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command.text}"],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert process.returncode == command.expected_exit, (
        f"{command}\nexit {process.returncode}, expected {command.expected_exit}\n"
        f"--- stdout\n{process.stdout[-3000:]}\n--- stderr\n{process.stderr[-3000:]}"
    )
    assert "Traceback" not in process.stderr, f"{command}\n{process.stderr[-3000:]}"
