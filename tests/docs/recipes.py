"""The recipes of the documentation, run as a user pastes them: the bash block after ``<!-- recipe: NAME -->`` on a
page, with bash, from a checkout's root, with none of the caller's OTEL_*, backend or Google variables, and only the
documented server addresses replaced by the test servers'. A recipe starts background processes (the scripted judge
of ``eval "$(otel-eval judge-server --print-env &)"``, a Prometheus): the script runs in a session of its own whose
processes are all stopped afterwards."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
JUDGE_LINE = 'eval "$(otel-eval judge-server --print-env &)"'
"""The first line of every recipe with a judge: the scripted judge in the background, its variables in the shell."""
BACKEND_PREFIXES = ("OTEL_", "GOOGLE_", "GEMINI_", "PHOENIX_", "MLFLOW_", "LANGFUSE_")


def recipe(page: str, name: str) -> str:
    """The bash block after ``<!-- recipe: {name} -->`` in ``docs/{page}``."""
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    marker = f"<!-- recipe: {name} -->\n```bash\n"
    assert marker in text, f"no {name} recipe in docs/{page}"
    return text.split(marker, 1)[1].split("```", 1)[0]


def run_bash(
    script: str, replacements: dict[str, str], *, cwd: Path = REPO, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Runs ``script`` (with ``replacements`` made, each asserted present) with ``bash -euo pipefail``, the venv's
    ``bin`` first on PATH (its ``python`` and ``otel-eval``) and this checkout's code; then stops every process it
    left running. Its output is read from files, so a background process holding them open cannot stall the test."""
    for old, new in replacements.items():
        assert old in script, f"{old!r} is not in the recipe"
        script = script.replace(old, new)
    environment = {k: v for k, v in os.environ.items() if not k.startswith(BACKEND_PREFIXES)}
    environment["PYTHONPATH"] = str(REPO)
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment.get('PATH', '')}"
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", script],
            stdout=out,
            stderr=err,
            text=True,
            env=environment,
            cwd=cwd,
            start_new_session=True,  # its own process group: the background processes it starts are stopped with it
        )
        try:
            returncode = process.wait(timeout)
        finally:
            _stop_group(process.pid)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(process.args, returncode, out.read(), err.read())


def _stop_group(pgid: int) -> None:
    """SIGTERM to the recipe's process group (the judge-server and Prometheus stop on it), SIGKILL after 10 s."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
