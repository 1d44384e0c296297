"""Instructions per invocation of ``bench_processor``'s workload, counted by callgrind: a figure that does not
depend on the machine's load (timed rows need an idle machine; this does not).

The travel agent's 5-span invocation in a burst on the global SDK providers with the counting exporters
(:mod:`benchmarks._counting`), after 50 of warm-up; the window is cut with ``--dump-before=time_sleep`` (one pause
before it, one after), and every thread is counted. ``--setup bsp`` is the baseline (the agent's spans exported by
a ``BatchSpanProcessor``); ``thread``: that plus ``EvaluationSpanProcessor`` in thread isolation. What evaluation adds
is the difference of the two.

``--pace RATE``: the invocations arrive paced, ``RATE`` a second (each waits for its slot on
``threading.Event().wait``, not ``time.sleep``: callgrind cuts the window at ``time_sleep``), instead of in a burst.
Under callgrind everything runs ~50x slower (more on a loaded machine), so a rate of 2 a second with ~60 invocations gives each invocation its
own step of the engine (as 250/s does at full speed): what a burst amortizes over many invocations (a wake-up, a step's
set-up, an emission's flush) is paid per invocation. Unlike a burst's, a paced figure depends on the scheduling: on a
loaded machine an engine's poll or period may land mid-invocation and split it over two steps (1.5 steps per
invocation seen at load 10), so runs differ by a few percent; compare runs made side by side. ``--agent-thread`` counts only the agent's (main) thread
(``--separate-threads=yes``): what evaluation costs the agent itself.

Run: ``python -m benchmarks.instructions [--setup thread|bsp] [--metrics 1|4] [--emit events,metrics|all]
[--invocations 300] [--pace RATE] [--agent-thread]`` (needs ``valgrind``; ~30-60 s a run).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks._common import ROOT


def _workload(setup: str, metrics: int, emit: str, invocations: int, pace: float | None) -> None:
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
    if pace is None:
        for _ in range(invocations):
            agent.run(scenario)
    else:
        pause, start = threading.Event(), time.monotonic()
        for index in range(invocations):
            pause.wait(max(0.0, start + index / pace - time.monotonic()))  # never set: a timed wait, not time_sleep
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
    parser.add_argument("--pace", type=float, default=None, help="invocations a second (default: a burst)")
    parser.add_argument("--agent-thread", action="store_true", help="count only the agent's (main) thread")
    parser.add_argument("--keep", default=None, help="copy the window's callgrind file(s) to this prefix")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inside:
        _workload(args.setup, args.metrics, args.emit, args.invocations, args.pace)
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "callgrind.out")
        command = ["valgrind", "--tool=callgrind", "--dump-before=time_sleep", f"--callgrind-out-file={out}"]
        if args.agent_thread:
            command.append("--separate-threads=yes")
        command += [sys.executable, "-m", "benchmarks.instructions", "--inside", *(argv or sys.argv[1:])]
        subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # dump 1: start-up and warm-up; dump 2: the window. With separate threads only the thread that sleeps (the
        # main one) is dumped there (``-01``); the others' counts all go to their final dumps, unused.
        window = Path(f"{out}.2-01") if args.agent_thread else Path(f"{out}.2")
        windows = [window]
        total = _summary(window)
        if args.keep:
            for dump in windows:
                shutil.copy(dump, f"{args.keep}{dump.name.removeprefix('callgrind.out')}")
    label = f"{args.setup}, {args.metrics} metric(s), emit {args.emit}"
    label += f", paced {args.pace:g}/s" if args.pace else ", burst"
    label += ", agent's thread" if args.agent_thread else ", all threads"
    print(f"{label}: {total / args.invocations / 1e6:.3f} M instructions per invocation ({args.invocations})")


def _summary(dump: Path) -> int:
    """The instructions counted in a callgrind dump (its ``summary:`` line; 0 for a thread that ran nothing)."""
    return next((int(line.split()[1]) for line in dump.read_text().splitlines() if line.startswith("summary:")), 0)


if __name__ == "__main__":
    main()
