"""A recipe whose judge cannot be reached says so at once and does not end quietly: the examples log one WARNING
naming the judge's endpoint (never its key) at the first judged evaluation without a verdict, and exit 1; with the
scripted judge of ``otel-eval judge-server --print-env`` (the recipes' first line) they judge and exit 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.recipes import JUDGE_LINE, run_bash

pytestmark = pytest.mark.integration  # each example runs in an interpreter of its own

REPO = Path(__file__).resolve().parents[2]
CRITERIA = '{"hallucinations_v1": 0.8, "safety_v1": 0.8, "tool_trajectory_avg_score": 1.0}'
SECRET = "sk-do-not-print-me-0123456789"
WARNING = "WARNING otel_eval.examples: the judge at "


def _unreachable_judge() -> str:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize("script", ["weather_agent.py", "adk_agent.py"])
def test_an_unreachable_judge_is_one_warning_naming_its_endpoint_and_exit_1(script: str) -> None:
    """With --otlp (the recipes' mode), exporting nothing: the judge's failure is the only thing said."""
    url = _unreachable_judge()
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOOGLE_", "GEMINI_"))}
    environ.update(
        PYTHONPATH=str(REPO),
        OTEL_EVAL_CRITERIA=CRITERIA,
        OTEL_EVAL_JUDGE_BASE_URL=url,
        OTEL_EVAL_JUDGE_API_KEY=SECRET,
        OTEL_EVAL_JUDGE_MAX_ATTEMPTS="1",
        OTEL_TRACES_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_METRICS_EXPORTER="none",
    )
    process = subprocess.run(
        [sys.executable, str(REPO / "examples" / script), "--otlp"],
        capture_output=True,
        text=True,
        timeout=180,
        env=environ,
    )
    assert process.returncode == 1, process.stderr
    lines = process.stderr.splitlines()
    first = [line for line in lines if line.startswith(WARNING)]
    assert len(first) == 1 and first[0].startswith(f"{WARNING}{url} gave no verdict"), process.stderr
    assert "judge_connection_error" in first[0]
    summary = [line for line in lines if "got no verdict from the judge" in line]
    assert len(summary) == 1 and url in summary[0] and "exit 1" in summary[0]
    assert SECRET not in process.stdout + process.stderr


def test_with_the_recipes_judge_line_the_judged_metrics_are_judged_and_the_exit_is_0() -> None:
    script = (
        f"{JUDGE_LINE}\nexport OTEL_EVAL_CRITERIA='{CRITERIA}' OTEL_EVAL_CONSOLE=true\npython examples/adk_agent.py\n"
    )
    process = run_bash(script, {}, timeout=300)
    assert process.returncode == 0, process.stderr
    assert "WARNING" not in process.stderr
    assert "otel-eval: hallucinations_v1 0 fail" in process.stdout  # Tokyo: the scripted judge finds it unsupported
    assert process.stdout.count("otel-eval: hallucinations_v1 1 pass") == 2
    assert "judge-server: SCRIPTED judge (not a model) serving http://127.0.0.1:" in process.stderr
    status = next(line for line in process.stderr.splitlines() if line.startswith("judge-server: SCRIPTED judge"))
    log = Path(status.split("; its log: ", 1)[1])  # where the server writes once the exports are printed
    assert "judge-server stopped" in log.read_text(encoding="utf-8")  # stopped with the recipe's processes
    log.unlink()


def test_print_env_prints_only_the_exports_and_leaves_the_judge_serving() -> None:
    script = f'{JUDGE_LINE}\necho "$OTEL_EVAL_JUDGE_BASE_URL $OTEL_EVAL_JUDGE_API_KEY $OTEL_EVAL_JUDGE_MODEL"\n'
    script += 'curl -s -o /dev/null -w "%{http_code}\\n" -X POST "$OTEL_EVAL_JUDGE_BASE_URL/v1beta/models/m:generateContent" -d "{}"\n'
    process = run_bash(script, {}, timeout=120)
    assert process.returncode == 0, process.stderr
    url, key, model, status = process.stdout.split()
    assert url.startswith("http://127.0.0.1:") and key == "local-scripted-judge-no-key"
    assert model == "scripted-local-judge"
    assert status != "000"  # something answered at that address as soon as the eval line returned
