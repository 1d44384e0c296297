"""Offline ``run`` end to end: otel-eval vs agentevals on the same trace files, eval set and metrics.

Each tool runs from its own virtualenv holding only that tool and its dependencies, as a user installs it:
agentevals (``agentevals-cli`` from PyPI) in ``benchmarks/.venv-agentevals``, otel-eval (this checkout, installed
editable so that code changes need no reinstall) in ``benchmarks/.venv-otel-eval``; both are created on first use.
Both run as fresh processes (what a user or CI job pays), on the shipped agentevals sample traces and on a scaled set
of copies with fresh trace ids, with ``tool_trajectory_avg_score`` and ``response_match_score``. Target: >= 10x
faster. An informational row runs otel-eval from the current interpreter's environment, where scikit-learn and scipy
are installed (google-adk's eval extra): ``import nltk`` would import them (~2 s), which is why ROUGE loads only nltk's
Porter stemmer module (``otel_eval.metrics._porter``).

Run: ``python -m benchmarks.bench_offline [--repeat N] [--copies N]``.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from benchmarks._common import DATA, ROOT, Row, interleaved_medians, machine, print_rows, run_command

AGENTEVALS_VENV = ROOT / "benchmarks" / ".venv-agentevals"
OTEL_EVAL_VENV = ROOT / "benchmarks" / ".venv-otel-eval"
SAMPLES = DATA / "traces" / "agentevals"
TRACE_FILES = ("helm.json", "helm_2.json", "helm_3.json", "k8s.json", "tempo_export_with_batches.json")
EVAL_SET = DATA / "evalsets" / "eval_set_helm.json"
METRICS = ("tool_trajectory_avg_score", "response_match_score")


def _venv_tool(venv: Path, executable: str, requirement: list[str]) -> Path:
    """``executable`` of ``venv``, creating the venv and pip-installing ``requirement`` into it when missing."""
    found = venv / "bin" / executable
    if not found.exists():
        print(f"installing {' '.join(requirement)} into {venv}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *requirement], check=True)
    return found


def agentevals_bin() -> Path:
    """The agentevals executable of its own venv (agentevals-cli from PyPI)."""
    return _venv_tool(AGENTEVALS_VENV, "agentevals", ["agentevals-cli"])


def otel_eval_bin() -> Path:
    """The otel-eval executable of its own venv (this checkout, editable, with its runtime dependencies only)."""
    return _venv_tool(OTEL_EVAL_VENV, "otel-eval", ["-e", str(ROOT)])


def dev_otel_eval_bin() -> Path:
    """The otel-eval executable next to this interpreter (the dev environment)."""
    found = Path(sys.executable).parent / "otel-eval"
    return found if found.exists() else Path(shutil.which("otel-eval") or "otel-eval")


def scaled_copies(directory: Path, copies: int) -> list[Path]:
    """``copies`` copies of each sample with fresh, distinct trace ids (so no two files merge into one trace)."""
    paths = []
    for name in TRACE_FILES:
        text = (SAMPLES / name).read_text()
        payload = json.loads(text)
        trace_ids, session_ids = _trace_ids(payload), _session_ids(payload)
        for index in range(copies):
            copy = text
            for old in trace_ids:
                copy = copy.replace(old, uuid.uuid4().hex if len(old) == 32 else _b64_id())
            for old in session_ids:  # each copy is its own conversation, as each recorded run was
                copy = copy.replace(old, f"session-{uuid.uuid4().hex}")
            path = directory / f"{index:03d}_{name}"
            path.write_text(copy)
            paths.append(path)
    return paths


def _b64_id() -> str:
    return base64.b64encode(uuid.uuid4().bytes).decode()


_SESSION_KEYS = ("gen_ai.conversation.id", "gcp.vertex.agent.session_id", "session.id")


def _session_ids(payload: object) -> set[str]:
    """Values of session-id attributes anywhere in a Jaeger (``key``/``value`` tags) or OTLP JSON document."""
    ids: set[str] = set()
    if isinstance(payload, dict):
        if payload.get("key") in _SESSION_KEYS:
            value = payload.get("value")
            if isinstance(value, dict):
                value = value.get("stringValue")
            if isinstance(value, str) and value:
                ids.add(value)
        for item in payload.values():
            ids |= _session_ids(item)
    elif isinstance(payload, list):
        for item in payload:
            ids |= _session_ids(item)
    return ids


def _trace_ids(payload: object) -> set[str]:
    ids: set[str] = set()
    if isinstance(payload, dict):
        for key, value in payload.items():
            if key in ("traceID", "traceId", "trace_id") and isinstance(value, str):
                ids.add(value)
            else:
                ids |= _trace_ids(value)
    elif isinstance(payload, list):
        for item in payload:
            ids |= _trace_ids(item)
    return ids


def command(executable: Path, files: list[Path]) -> list[str]:
    """The ``run`` command line of otel-eval or agentevals (same syntax) for ``files``, the eval set and metrics."""
    metric_args = [arg for metric in METRICS for arg in ("-m", metric)]
    return [str(executable), "run", *map(str, files), "--eval-set", str(EVAL_SET), *metric_args, "--output", "json"]


def compare(label: str, files: list[Path], repeat: int) -> list[Row]:
    """Median wall times of otel-eval (own venv: the target row; dev environment: informational) and agentevals."""
    ours, dev, theirs = (command(tool(), files) for tool in (otel_eval_bin, dev_otel_eval_bin, agentevals_bin))
    for argv in (ours, dev, theirs):
        run_command(argv)  # warm the OS file cache before timing
    our_time, dev_time, their_time = interleaved_medians(
        [lambda argv=argv: run_command(argv) for argv in (ours, dev, theirs)], repeat
    )
    return [
        Row(
            label,
            f"{our_time:.2f} s",
            f"{their_time:.2f} s",
            their_time / our_time,
            ">= 10",
            their_time / our_time >= 10,
        ),
        Row(
            f"{label}, dev env (with scikit-learn)",
            f"{dev_time:.2f} s",
            f"{their_time:.2f} s",
            their_time / dev_time,
            "info",
            True,
        ),
    ]


def main(argv: list[str] | None = None) -> list[Row]:
    """Runs the comparison and prints the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--copies", type=int, default=20)
    args = parser.parse_args(argv)
    rows = compare(
        f"offline run, {len(TRACE_FILES)} sample traces (vs agentevals)",
        [SAMPLES / n for n in TRACE_FILES],
        args.repeat,
    )
    with tempfile.TemporaryDirectory() as tmp:
        files = scaled_copies(Path(tmp), args.copies)
        rows += compare(f"offline run, {len(files)} traces (vs agentevals)", files, args.repeat)
    print_rows(f"Offline evaluation — {machine()}", rows)
    return rows


if __name__ == "__main__":
    main()
