"""The documented recipes, run as a user runs them: ``otel-eval judge-server`` in a process of its own, then
``examples/weather_agent.py --otlp`` in a fresh interpreter with only the environment variables that
docs/backends-sinks.md ("Recipes, step by step") sets for the backend, and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.docs import recipes

REPO = Path(__file__).resolve().parents[3]
CITIES = ("Paris", "Berlin", "Rome")
"""The weather agent's three invocations, one trace each."""
AGENT_TOKENS = 20 + 8
"""What each of the weather agent's invocations uses: one chat span with 20 input and 8 output tokens."""
FAILING_CITY = "Rome"
"""The eval set's reference for Rome is another answer: its response_match_score fails (0.0), the others pass."""
CRITERIA = '{"hallucinations_v1": 0.8, "safety_v1": 0.8, "response_match_score": 0.8}'
"""The recipe's OTEL_EVAL_CRITERIA: two judged metrics (the scripted judge's) and a deterministic one."""
SCORED_PER_INVOCATION = 3
"""Results a backend gets per invocation (the efficiency metrics are informational: not sent by default)."""
EVAL_SET = "examples/weather_eval_set.test.json"
"""The recipe's OTEL_EVAL_EVAL_SET (relative to the checkout, where the recipe runs): Rome's reference is another
answer, so its response_match_score fails (0.0) and the other two pass."""


@contextmanager
def judge_server() -> Iterator[dict[str, str]]:
    """``otel-eval judge-server`` running, as the recipes' first step; yields the variables it prints."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_", "OTEL_"))}
    environment["PYTHONPATH"] = str(REPO)
    process = subprocess.Popen(
        [sys.executable, "-c", "from otel_eval.cli import main; main()", "judge-server"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=environment,
    )
    assert process.stdout is not None
    try:
        exports: dict[str, str] = {}
        for line in process.stdout:
            if line.startswith("export "):
                name, value = line.removeprefix("export ").strip().split("=", 1)
                exports[name] = value
            if line.startswith("Scores judged here are scripted"):
                break
        assert len(exports) == 3, f"judge-server printed {exports}"
        yield exports
    finally:
        process.terminate()
        process.wait(15)
        process.stdout.close()


def run_recipe(backend: str, judge: dict[str, str], replacements: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Runs docs/backends-sinks.md's recipe of ``backend`` with bash, from the checkout's root, as written but for
    ``replacements`` (the documented server address and keys by the test server's): its first line starts the
    scripted judge (``tests/docs/recipes.py`` stops it afterwards), whose variables are the ones ``judge`` (what
    judge-server prints) holds. Exit code 0 asserted."""
    script = recipes.recipe("backends-sinks.md", backend)
    assert script.startswith(recipes.JUDGE_LINE + "\n"), script
    assert f"OTEL_EVAL_CRITERIA='{CRITERIA}'" in script and f"OTEL_EVAL_EVAL_SET={EVAL_SET}" in script
    assert "OTEL_EVAL_JUDGE_" not in script.removeprefix(recipes.JUDGE_LINE)  # the judge's variables are printed
    assert set(judge) == {"OTEL_EVAL_JUDGE_BASE_URL", "OTEL_EVAL_JUDGE_API_KEY", "OTEL_EVAL_JUDGE_MODEL"}
    process = recipes.run_bash(script, replacements, timeout=300)
    assert process.returncode == 0, process.stderr
    return process


def export_errors(process: subprocess.CompletedProcess[str]) -> list[str]:
    """The agent's log lines that say something was not exported or not delivered."""
    markers = ("Failed to export", "not delivered", "Exception", "Traceback", "WARNING", "ERROR")
    return [line for line in (process.stdout + process.stderr).splitlines() if any(m in line for m in markers)]
