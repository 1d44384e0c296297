"""Instructions per invocation of ``bench_processor``'s workload, counted by callgrind: a figure that does not
depend on the machine's load (timed rows need an idle machine; this does not).

The travel agent's 5-span invocation in a burst on the global SDK providers with the counting exporters
(:mod:`benchmarks._counting`), after 50 of warm-up; the window is cut with ``--dump-before=time_sleep`` (one pause
before it, one after), and every thread is counted. ``--setup bsp`` is the baseline (the agent's spans exported by
a ``BatchSpanProcessor``); ``thread``: that plus ``EvaluationSpanProcessor`` in thread isolation. What evaluation adds
is the difference of the two.

Run: ``python -m benchmarks.instructions [--setup thread|bsp] [--metrics 1|4] [--emit events,metrics|all]
[--invocations 300]`` (needs ``valgrind``; ~30-60 s a run).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import ROOT


def _workload(setup: str, metrics: int, emit: str, invocations: int) -> None:
    from benchmarks._bench_ours import processor_for
    from benchmarks._counting import CountingProviders
    from otel_eval.demo.workload import SCENARIOS, TravelAgent

    providers = CountingProviders()
    processor = None
    if setup == "thread":
        processor = processor_for("thread", metrics, None if emit == "all" else emit)
        providers.tracer_provider.add_span_processor(processor)
    agent = TravelAgent(providers.tracer_provider)
    scenario = next(s for s in SCENARIOS if s.key == "two_tools")
    for _ in range(50):
        agent.run(scenario)
    if processor is not None:
        processor.force_flush()
    providers.force_flush()
    time.sleep(0.05)  # callgrind dumps here: the window starts
    for _ in range(invocations):
        agent.run(scenario)
    if processor is not None:
        processor.force_flush()
    providers.tracer_provider.force_flush()
    providers.logger_provider.force_flush()
    time.sleep(0.05)  # and here: the window ends
    if processor is not None:
        print(f"evaluated {processor.stats()['invocations.evaluated']} (with the warm-up)", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.instructions")
    parser.add_argument("--setup", choices=("thread", "bsp"), default="thread")
    parser.add_argument("--metrics", type=int, choices=(1, 4), default=1)
    parser.add_argument("--emit", default="events,metrics", help="ProcessorSettings.emit, or 'all'")
    parser.add_argument("--invocations", type=int, default=300)
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inside:
        _workload(args.setup, args.metrics, args.emit, args.invocations)
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "callgrind.out")
        command = ["valgrind", "--tool=callgrind", "--dump-before=time_sleep", f"--callgrind-out-file={out}"]
        command += [sys.executable, "-m", "benchmarks.instructions", "--inside", *(argv or sys.argv[1:])]
        subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        window = Path(f"{out}.2")  # dump 1: start-up and warm-up; dump 2: the window
        total = next(int(line.split()[1]) for line in window.read_text().splitlines() if line.startswith("summary:"))
    label = f"{args.setup}, {args.metrics} metric(s), emit {args.emit}"
    print(f"{label}: {total / args.invocations / 1e6:.2f} M instructions per invocation ({args.invocations})")


if __name__ == "__main__":
    main()
