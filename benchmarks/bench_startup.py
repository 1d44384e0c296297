"""How soon a freshly made processor in process isolation gives its first score (the evaluation process starts on
the first spans), against the baseline of a fresh interpreter importing the evaluation process's module alone (what
no start can avoid), each median of ``--repeat`` fresh processes; thread isolation's first score is printed beside.

One travel-agent invocation, then ``force_flush``; the time from the invocation's start to the flush's return, and the
CPU of the children (the evaluation process, reaped at shutdown). Scores go to the console sink's stream, discarded.

Run: ``python -m benchmarks.bench_startup [--repeat 5]``; one run: ``--one process|thread`` prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

from benchmarks._common import ROOT, Row, print_rows

ISOLATIONS = ("process", "thread")


def one(isolation: str) -> dict[str, float]:
    """The first score's delay and the children's CPU, in this (fresh) process."""
    from opentelemetry.sdk.trace import TracerProvider

    from otel_eval import EvaluationSpanProcessor, ProcessorSettings
    from otel_eval.demo.workload import SCENARIOS, TravelAgent

    provider = TracerProvider()
    processor = EvaluationSpanProcessor(settings=ProcessorSettings(isolation=isolation))
    provider.add_span_processor(processor)
    started = time.monotonic()
    TravelAgent(provider).run(SCENARIOS[0])
    if not processor.force_flush(120_000):
        raise RuntimeError("the first invocation was not scored within 120 s")
    first = time.monotonic() - started
    provider.shutdown()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"first_score_s": first, "children_cpu_s": children.ru_utime + children.ru_stime}


def measure(isolation: str, repeat: int) -> list[dict[str, float]]:
    """``repeat`` fresh processes' :func:`one`."""
    env = {**os.environ, "OTEL_EVAL_CONSOLE": "true", "PYTHONPATH": str(ROOT)}
    for signal in ("TRACES", "LOGS", "METRICS"):
        env[f"OTEL_{signal}_EXPORTER"] = "none"
    runs = []
    for _ in range(repeat):
        completed = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_startup", "--one", isolation],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
        runs.append(json.loads(completed.stdout.splitlines()[-1]))
    return runs


def imports_alone(repeat: int) -> float:
    """The median wall time of a fresh interpreter importing the evaluation process's module."""
    code = "import otel_eval.processor._process.main"
    times = []
    for _ in range(repeat):
        started = time.monotonic()
        subprocess.run(
            [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True, timeout=300
        )
        times.append(time.monotonic() - started)
    return statistics.median(times)


def main(argv: list[str]) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--one", choices=ISOLATIONS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one)))
        return []
    first: dict[str, float] = {}
    for isolation in ISOLATIONS:
        runs = measure(isolation, args.repeat)
        first[isolation] = statistics.median(run["first_score_s"] for run in runs)
        cpu = statistics.median(run["children_cpu_s"] for run in runs)
        print(
            f"{isolation}: first score after {first[isolation]:.2f} s (median of {len(runs)}), children's CPU {cpu:.2f} s"
        )
    imports = imports_alone(args.repeat)
    print(f"a fresh interpreter importing the evaluation process's module: {imports:.2f} s")
    rows = [
        Row(
            "process isolation's first score vs its imports alone",
            f"{first['process']:.2f} s",
            f"{imports:.2f} s",
            first["process"] / imports,
            "info",
            True,
        )
    ]
    print_rows("Startup", rows)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
