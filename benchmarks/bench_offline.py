"""Offline ``run`` end to end: otel-eval vs agentevals on the same trace files, eval set and metrics.

agentevals (``agentevals-cli`` from PyPI) is installed into ``benchmarks/.venv-agentevals`` on first use. Both tools
run as fresh processes (what a user or CI job pays), on the shipped agentevals sample traces and on a scaled set of
copies with fresh trace ids, with ``tool_trajectory_avg_score`` and ``response_match_score``. Target: >= 10x faster.

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

from benchmarks._common import DATA, ROOT, Row, machine, median_seconds, print_rows, run_command

AGENTEVALS_VENV = ROOT / "benchmarks" / ".venv-agentevals"
SAMPLES = DATA / "traces" / "agentevals"
TRACE_FILES = ("helm.json", "helm_2.json", "helm_3.json", "k8s.json", "tempo_export_with_batches.json")
EVAL_SET = DATA / "evalsets" / "eval_set_helm.json"
METRICS = ("tool_trajectory_avg_score", "response_match_score")


def agentevals_bin() -> Path:
    """The agentevals executable, installing agentevals-cli into its own venv when missing."""
    executable = AGENTEVALS_VENV / "bin" / "agentevals"
    if not executable.exists():
        print("installing agentevals-cli into", AGENTEVALS_VENV, file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(AGENTEVALS_VENV)], check=True)
        subprocess.run([str(AGENTEVALS_VENV / "bin" / "pip"), "install", "-q", "agentevals-cli"], check=True)
    return executable


def otel_eval_bin() -> Path:
    """The otel-eval executable next to this interpreter."""
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


def commands(files: list[Path]) -> tuple[list[str], list[str]]:
    """The otel-eval and agentevals command lines for the same files, eval set and metrics."""
    metric_args = [arg for metric in METRICS for arg in ("-m", metric)]
    ours = [
        str(otel_eval_bin()),
        "run",
        *map(str, files),
        "--eval-set",
        str(EVAL_SET),
        *metric_args,
        "--output",
        "json",
    ]
    theirs = [
        str(agentevals_bin()),
        "run",
        *map(str, files),
        "--eval-set",
        str(EVAL_SET),
        *metric_args,
        "--output",
        "json",
    ]
    return ours, theirs


def compare(label: str, files: list[Path], repeat: int) -> Row:
    """Median wall time of both tools on ``files``, as a row."""
    ours, theirs = commands(files)
    run_command(ours)  # warm the OS file cache for both before timing
    run_command(theirs)
    our_time = median_seconds(lambda: run_command(ours), repeat)
    their_time = median_seconds(lambda: run_command(theirs), repeat)
    ratio = their_time / our_time
    return Row(label, f"{our_time:.2f} s", f"{their_time:.2f} s", ratio, ">= 10", ratio >= 10)


def main(argv: list[str] | None = None) -> list[Row]:
    """Runs the comparison and prints the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--copies", type=int, default=20)
    args = parser.parse_args(argv)
    rows = [
        compare(
            f"offline run, {len(TRACE_FILES)} sample traces (vs agentevals)",
            [SAMPLES / n for n in TRACE_FILES],
            args.repeat,
        )
    ]
    with tempfile.TemporaryDirectory() as tmp:
        files = scaled_copies(Path(tmp), args.copies)
        rows.append(compare(f"offline run, {len(files)} traces (vs agentevals)", files, args.repeat))
    print_rows(f"Offline evaluation — {machine()}", rows)
    return rows


if __name__ == "__main__":
    main()
