"""Offline ``run`` CPU per trace file against the cost of parsing the same files, and its memory at 1k vs 10k traces.

Inputs: copies of a small real ADK trace (``tests/data/traces/strands-evals/adk_live_spans.json``, 6 spans, one
invocation) with fresh trace and session ids, as a user's export of many short sessions looks.

1. Per-trace CPU of ``otel-eval run`` (default criteria: ADK's efficiency metrics; JSON output to /dev/null), run
   in-process (``otel_eval.cli.run`` through click), minus nothing: reading, rebuilding, pairing, scoring and
   printing all count. Baseline: reading the same files into spans (``read_trace_file``), the least any run does.
   Target: ratio <= 5.
2. Peak resident memory of a fresh ``otel-eval run`` process on 1,000 and on 10,000 files. Target: the 10k peak
   <= 1.5x the 1k peak (memory bounded, not growing with the number of traces). Informational beside it: the peak of
   Python allocations (``tracemalloc``) in this process, and the bytes each added trace costs; what still grows there
   is the FILES argument itself (a ``Path`` per file) and process-wide caches filling up to their bounds.

Run: ``python -m benchmarks.bench_offline_cost [--files N] [--repeat N] [--memory]``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

from benchmarks._common import DATA, Row, machine, print_rows

SAMPLE = DATA / "traces" / "strands-evals" / "adk_live_spans.json"


def write_copies(directory: Path, count: int) -> list[Path]:
    """``count`` copies of the sample, each with its own trace id and session id."""
    text = SAMPLE.read_text()
    spans = json.loads(text)
    trace_ids = {span["trace_id"] for span in spans}
    sessions = {
        value
        for span in spans
        for key, value in span.get("attributes", {}).items()
        if key in ("gen_ai.conversation.id", "session.id", "gcp.vertex.agent.session_id") and isinstance(value, str)
    }
    paths = []
    for index in range(count):
        copy = text
        for old in trace_ids:
            copy = copy.replace(old, uuid.uuid4().hex)
        for old in sessions:
            copy = copy.replace(old, f"session-{uuid.uuid4().hex}")
        path = directory / f"{index:05d}.json"
        path.write_text(copy)
        paths.append(path)
    return paths


def parse_only(paths: list[Path]) -> None:
    """The baseline: every file read into spans."""
    from otel_eval.traces import read_trace_file

    for path in paths:
        read_trace_file(path)


def run_cli(paths: list[Path]) -> None:
    """``otel-eval run FILES --output json`` in this process, its output discarded."""
    from otel_eval.cli.run import run

    with (
        open(os.devnull, "w") as devnull,  # not a StringIO: the output must not count as the run's memory
        contextlib.redirect_stdout(devnull),
        contextlib.redirect_stderr(devnull),
        contextlib.suppress(SystemExit),  # exit code 1 when a metric FAILED
    ):
        run.main([*map(str, paths), "--output", "json"], standalone_mode=False)


def cpu_seconds(fn: object, paths: list[Path]) -> float:
    """Process CPU seconds of ``fn(paths)`` (all threads: metric threads included)."""
    gc.collect()
    started = time.process_time()
    fn(paths)  # type: ignore[operator]
    return time.process_time() - started


def bench_cpu(paths: list[Path], repeat: int) -> Row:
    run_cli(paths[:20])  # imports and first-use caches are start-up, not per-trace cost
    parse_only(paths[:20])
    ours, parse = [], []
    for _ in range(repeat):
        parse.append(cpu_seconds(parse_only, paths))
        ours.append(cpu_seconds(run_cli, paths))
    our_ms, parse_ms = statistics.median(ours) / len(paths) * 1e3, statistics.median(parse) / len(paths) * 1e3
    ratio = our_ms / parse_ms
    spread = (max(ours) - min(ours)) / statistics.median(ours)
    print(
        f"run: {our_ms:.3f} ms CPU per trace (spread {spread:.0%} over {repeat}), "
        f"parse: {parse_ms:.3f} ms per trace, ratio {ratio:.2f}"
    )
    return Row(
        f"offline run CPU per trace vs parsing ({len(paths)} files)",
        f"{our_ms:.3f} ms",
        f"{parse_ms:.3f} ms",
        ratio,
        "<= 5",
        ratio <= 5,
    )


def peak_bytes(paths: list[Path]) -> int:
    """Peak bytes allocated by Python objects (``tracemalloc``) during the run, in this warmed-up process."""
    gc.collect()
    tracemalloc.start()
    try:
        run_cli(paths)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# VmHWM, not the child's ru_maxrss: Linux carries the forked parent's resident size over exec into ru_maxrss.
_FRESH_RUN = """
import atexit, os, sys
def record():
    with open("/proc/self/status") as status, open(os.environ["BENCH_HWM_FILE"], "w") as out:
        out.write(next(line for line in status if line.startswith("VmHWM:")).split()[1])
atexit.register(record)
from otel_eval.cli import main
sys.argv[0] = "otel-eval"
main()
"""


def peak_rss(paths: list[Path]) -> int:
    """Peak resident set size (bytes) of a fresh ``otel-eval run FILES --output json`` process: everything counts,
    imports, native allocations (pydantic-core, SQLite) and the bounded caches filling up included."""
    with tempfile.NamedTemporaryFile("r") as hwm:
        subprocess.run(
            [sys.executable, "-c", _FRESH_RUN, "run", *map(str, paths), "--output", "json"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "BENCH_HWM_FILE": hwm.name},
            check=False,
        )
        return int(hwm.read()) * 1024  # kB


def bench_memory(directory: Path, small: int, large: int) -> list[Row]:
    paths = write_copies(directory, large)
    small_peak, large_peak = peak_bytes(paths[:small]), peak_bytes(paths)
    small_rss, large_rss = peak_rss(paths[:small]), peak_rss(paths)
    print(
        f"peak traced memory: {small} traces {small_peak / 2**20:.1f} MiB, {large} traces {large_peak / 2**20:.1f} MiB "
        f"({(large_peak - small_peak) / (large - small):.0f} B per added trace); peak RSS of a fresh process: "
        f"{small_rss / 2**20:.0f} MiB, {large_rss / 2**20:.0f} MiB"
    )
    return [
        Row(  # what still grows: the FILES argument (click's Path per file) and bounded caches filling up
            f"offline run peak traced memory, {large} vs {small} traces",
            f"{large_peak / 2**20:.1f} MiB",
            f"{small_peak / 2**20:.1f} MiB",
            large_peak / small_peak,
            "info",
            True,
        ),
        Row(
            f"offline run peak RSS (fresh process), {large} vs {small} traces",
            f"{large_rss / 2**20:.0f} MiB",
            f"{small_rss / 2**20:.0f} MiB",
            large_rss / small_rss,
            "<= 1.5",
            large_rss / small_rss <= 1.5,
        ),
    ]


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_offline_cost", description=__doc__)
    parser.add_argument("--files", type=int, default=500, help="trace files for the CPU row (default 500)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per side (median; default 3)")
    parser.add_argument("--memory", action=argparse.BooleanOptionalAction, default=True, help="1k vs 10k memory row")
    args = parser.parse_args(argv)
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        rows = [bench_cpu(write_copies(Path(tmp), args.files), args.repeat)]
    if args.memory:
        with tempfile.TemporaryDirectory() as tmp:
            rows += bench_memory(Path(tmp), 1_000, 10_000)
    print_rows(f"Offline run cost — {machine()}", rows)
    return rows


if __name__ == "__main__":
    sys.exit(0 if all(row.met for row in main(sys.argv[1:])) else 1)
