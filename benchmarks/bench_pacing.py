"""What pacing does to CPU per invocation, on both sides of the evaluation: the same invocation's CPU, thread by
thread, in a burst and paced (250/s, as ``bench_processor``; 50/s), with only a ``BatchSpanProcessor`` (the agent's
own work) and with ours in thread isolation (one metric, ``events,metrics``).

Why: ``bench_processor``'s paced rows cost more per invocation than its burst rows, on every side. This shows that
the agent's own code, with no evaluation at all, costs more CPU per invocation when it runs paced (each invocation
after a sleep: caches and TLBs cold on this machine), and how much more the evaluation thread pays for the same work
run in steps of one or two invocations instead of hundreds. The rows are ratios of a thread's CPU per invocation
paced to the same thread's in a burst, measured in the same run (information: no target).

Each run is a fresh process (``--one``): the travel agent's two-tool invocation on the global SDK providers with the
counting exporters (:mod:`benchmarks._counting`), 50 of warm-up, then ``--invocations`` measured; every thread's CPU
read from ``/proc/self/task`` (Linux), the agent's own with ``time.thread_time``.

Run: ``python -m benchmarks.bench_pacing [--invocations 1500] [--repeat 3]`` (~2 min); one run: ``--one bsp|thread
--rate R`` prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from benchmarks._common import ROOT, Row, print_rows
from benchmarks._counting import proc_cpu

SETUPS = ("bsp", "thread")
RATES: tuple[float | None, ...] = (None, 250.0, 50.0)
"""None: a burst."""
ENGINE_THREAD = "OtelEvalSpanProcessor"
WARM_UP = 50


def threads_cpu() -> dict[str, float]:
    """Every live thread's CPU seconds (user + system) by thread name, from ``/proc/self/task``."""
    cpu: dict[str, float] = {}
    for thread in threading.enumerate():
        try:
            spent = proc_cpu(f"/proc/self/task/{thread.native_id}/stat")
        except OSError:
            continue  # ended meanwhile
        cpu[thread.name] = cpu.get(thread.name, 0.0) + spent
    return cpu


def one(setup: str, rate: float | None, invocations: int) -> dict[str, object]:
    """One run in this (fresh) process: microseconds of CPU per invocation, by thread."""
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from benchmarks._bench_ours import processor_for
    from benchmarks._counting import CountingProviders, CountingSpanExporter, drive, settle
    from otel_eval.demo.workload import SCENARIOS, TravelAgent

    scenario = next(s for s in SCENARIOS if s.key == "two_tools")
    providers = CountingProviders()
    processor = processor_for("thread", 1, "events,metrics") if setup == "thread" else None
    providers.tracer_provider.add_span_processor(processor or BatchSpanProcessor(CountingSpanExporter()))
    agent = TravelAgent(providers.tracer_provider)

    def invoke(index: int) -> None:
        agent.run(scenario)

    def flush() -> None:
        if processor is not None:
            processor.force_flush(300_000)
        providers.force_flush()

    drive(invoke, WARM_UP, rate)
    flush()
    settle()
    evaluated_before = processor.stats()["invocations.evaluated"] if processor is not None else 0
    before, agent_before = threads_cpu(), time.thread_time()
    drive(invoke, invocations, rate)
    agent_cpu = time.thread_time() - agent_before
    flush()
    after = threads_cpu()
    evaluated = processor.stats()["invocations.evaluated"] - evaluated_before if processor is not None else 0
    providers.shutdown()
    per_invocation = {name: (cpu - before.get(name, 0.0)) / invocations * 1e6 for name, cpu in after.items()}
    per_invocation["MainThread"] = agent_cpu / invocations * 1e6
    return {"us_per_invocation": per_invocation, "evaluated": evaluated}


def measure(setup: str, rate: float | None, invocations: int) -> dict[str, object]:
    """:func:`one` in a fresh process."""
    with tempfile.TemporaryDirectory() as counts:
        env = {**os.environ, "BENCH_COUNTS_DIR": counts, "PYTHONPATH": str(ROOT)}
        argv = [sys.executable, "-m", "benchmarks.bench_pacing", "--one", setup, "--invocations", str(invocations)]
        if rate is not None:
            argv += ["--rate", str(rate)]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True, timeout=600, cwd=ROOT)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _label(rate: float | None) -> str:
    return "burst" if rate is None else f"{rate:g}/s"


def main(argv: list[str]) -> list[Row]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--invocations", type=int, default=1500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--one", choices=SETUPS, help=argparse.SUPPRESS)
    parser.add_argument("--rate", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.rate, args.invocations)))
        return []
    runs: dict[tuple[str, float | None], list[dict[str, float]]] = {}
    evaluated: dict[tuple[str, float | None], list[int]] = {}
    configs = [(setup, rate) for setup in SETUPS for rate in RATES]
    for turn in range(args.repeat):  # alternating, in a rotating order: drift in the machine's load hits all
        for setup, rate in configs[turn % len(configs) :] + configs[: turn % len(configs)]:
            result = measure(setup, rate, args.invocations)
            runs.setdefault((setup, rate), []).append(result["us_per_invocation"])  # type: ignore[arg-type]
            evaluated.setdefault((setup, rate), []).append(result["evaluated"])  # type: ignore[arg-type]

    def median(setup: str, rate: float | None, thread: str) -> float:
        return statistics.median(run.get(thread, 0.0) for run in runs[setup, rate])

    print(f"CPU per invocation, median of {args.repeat} fresh processes of {args.invocations} invocations each:")
    for setup, rate in configs:
        shown = {name: round(median(setup, rate, name)) for name in sorted(runs[setup, rate][0])}
        counted = f", evaluated {evaluated[setup, rate]}" if setup == "thread" else ""
        print(f"  {setup:6s} {_label(rate):6s} {shown}{counted}")
    rows = []
    for setup, thread, what in (
        ("bsp", "MainThread", "agent thread, BatchSpanProcessor only"),
        ("thread", "MainThread", "agent thread, with ours"),
        ("thread", ENGINE_THREAD, "our evaluation thread"),
    ):
        burst = median(setup, None, thread)
        for rate in RATES[1:]:
            paced = median(setup, rate, thread)
            rows.append(
                Row(
                    f"{what}: CPU/inv {_label(rate)} vs burst",
                    f"{paced:.0f} us",
                    f"{burst:.0f} us",
                    paced / burst if burst else 0.0,
                    "info",
                    True,
                )
            )
    print_rows("bench_pacing", rows)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
