"""How soon a freshly made processor in process isolation gives its first score (the evaluation process starts on
the first spans), against the baseline of a fresh interpreter importing the evaluation process's module alone (what
no start can avoid), each median of ``--repeat`` fresh processes; thread isolation's first score is printed beside.

One travel-agent invocation, then ``force_flush``; the time from the invocation's start to the flush's return, and the
CPU of the children (the evaluation process, reaped at shutdown). Scores go to the console sink's stream, discarded.

The evaluation process's CPU to its first score (``/proc/<pid>/stat`` user+system, Linux), each median of ``--repeat``
fresh processes: (a) ``{"hallucinations_v1": 0.5}`` against the scripted loopback judge, read when the judge gets its
first call; (b) the 4 efficiency metrics alone, read when the first ``force_flush`` returns.

Run: ``python -m benchmarks.bench_startup [--repeat 5]``; one run: ``--one process|thread`` or ``--cpu
hallucinations|efficiency`` prints JSON.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._common import ROOT, Row, print_rows

ISOLATIONS = ("process", "thread")
CPU_CASES = ("hallucinations", "efficiency")


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


def _children_cpu() -> float:
    """The user+system CPU seconds of this process's running children (the evaluation process)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for listing in glob.glob(f"/proc/{os.getpid()}/task/*/children"):
        for pid in Path(listing).read_text().split():
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def cpu_to_first_score(case: str) -> dict[str, float]:
    """The evaluation process's CPU when its first judge call arrives (``hallucinations``) or when the first flush
    returns (``efficiency``), in this (fresh) process."""
    from opentelemetry.sdk.trace import TracerProvider

    from otel_eval import EvaluationSpanProcessor, ProcessorSettings
    from otel_eval.demo.gemini_server import LoopbackGemini
    from otel_eval.demo.local_judge import LOOPBACK_KEY, scripted_verdicts
    from otel_eval.demo.workload import SCENARIOS, TravelAgent
    from otel_eval.metrics import EFFICIENCY_METRICS

    at: list[float] = []

    def judge(model: str, body: dict[str, object]) -> object:
        if not at:
            at.append(_children_cpu())
        return scripted_verdicts(model, body)

    server = LoopbackGemini(judge).start()  # type: ignore[arg-type]
    if case == "hallucinations":
        os.environ.update(GOOGLE_API_KEY=LOOPBACK_KEY, GOOGLE_GEMINI_BASE_URL=server.base_url)
        processor = EvaluationSpanProcessor({"hallucinations_v1": 0.5}, settings=ProcessorSettings(isolation="process"))
    else:
        settings = ProcessorSettings(isolation="process", metrics=EFFICIENCY_METRICS)
        processor = EvaluationSpanProcessor(settings=settings)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    TravelAgent(provider).run(SCENARIOS[0])
    if not processor.force_flush(120_000):
        raise RuntimeError("the first invocation was not scored within 120 s")
    if not at:
        at.append(_children_cpu())
    provider.shutdown()
    server.stop()
    return {"cpu_s": at[0]}


def measure(isolation: str, repeat: int, flag: str = "--one") -> list[dict[str, float]]:
    """``repeat`` fresh processes' :func:`one` (``flag`` ``--cpu``: :func:`cpu_to_first_score`)."""
    env = {**os.environ, "OTEL_EVAL_CONSOLE": "true", "PYTHONPATH": str(ROOT)}
    for signal in ("TRACES", "LOGS", "METRICS"):
        env[f"OTEL_{signal}_EXPORTER"] = "none"
    runs = []
    for _ in range(repeat):
        completed = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_startup", flag, isolation],
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
    parser.add_argument("--cpu", choices=CPU_CASES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one)))
        return []
    if args.cpu:
        print(json.dumps(cpu_to_first_score(args.cpu)))
        return []
    first: dict[str, float] = {}
    for isolation in ISOLATIONS:
        runs = measure(isolation, args.repeat)
        first[isolation] = statistics.median(run["first_score_s"] for run in runs)
        cpu = statistics.median(run["children_cpu_s"] for run in runs)
        print(
            f"{isolation}: first score after {first[isolation]:.2f} s (median of {len(runs)}), children's CPU {cpu:.2f} s"
        )
    cpu_first: dict[str, float] = {}
    for case in CPU_CASES:
        cpu_runs = [run["cpu_s"] for run in measure(case, args.repeat, "--cpu")]
        cpu_first[case] = statistics.median(cpu_runs)
        print(
            f"{case}: the evaluation process's CPU to its first score {cpu_first[case]:.2f} s (median of {args.repeat})"
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
        ),
        *(
            Row(f"process isolation's CPU to first score: {case}", f"{cpu_first[case]:.2f} s", "-", 0.0, "info", True)
            for case in CPU_CASES
        ),
    ]
    print_rows("Startup", rows)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
