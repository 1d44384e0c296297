"""Instructions per invocation of ``bench_processor``'s workload, counted by callgrind: a figure that does not
depend on the machine's load (timed rows need an idle machine; this does not).

The same 5-span invocation in a burst on the global SDK providers with the counting exporters
(:mod:`benchmarks._counting`), after 50 of warm-up; the window is cut with ``--dump-before=time_sleep`` (one pause
before it, one after: :mod:`benchmarks._callgrind`), and every thread is counted. Setups:

- ``bsp``: the travel agent's spans exported by a ``BatchSpanProcessor`` (our baseline); ``none``: no span processor
  at all (the floor of ``--agent-thread``).
- ``thread``: ``bsp`` plus ``EvaluationSpanProcessor`` in thread isolation. What evaluation adds is ``thread - bsp``.
- ``process``: the same in process isolation, every process traced (``--trace-children=yes``) and counted; the
  evaluation process (running the metrics asked, as ``thread`` does: ``ProcessorSettings.metrics``) exports its results
  to the same counting exporters, loaded through the SDK's entry points, and cuts its window at the agent's flushes.
  What it adds is ``process - bsp``, the evaluation process's share printed beside.
- ``peer-on`` / ``peer-off``: the Splunk peer's workload (:mod:`benchmarks._bench_peer`: the same invocation through
  its ``TelemetryHandler``, one LLM-free metric, or evaluations off), run by the peer's own virtualenv
  (``bench_processor.PEER_VENV``, installed on first use). What the peer adds is ``peer-on - peer-off``.

``--pace RATE``: the invocations arrive paced, ``RATE`` a second (each waits for its slot on
``threading.Event().wait``, not ``time.sleep``: callgrind cuts the window at ``time_sleep``), instead of in a burst.
Under callgrind everything runs ~50x slower (more on a loaded machine), so a rate of 2 a second with ~60 invocations
gives each invocation its own step of the engine (as 250/s does at full speed): what a burst amortizes over many
invocations (a wake-up, a step's set-up, an emission's flush) is paid per invocation. Unlike a burst's, a paced figure
depends on the scheduling: on a loaded machine an engine's poll or period may land mid-invocation and split it over
two steps (1.5 steps per invocation seen at load 10), so runs differ by a few percent; compare runs made side by
side. What it cannot show is what depends on the time between invocations: at 2/s no polling window is open, so
every root's end wakes the engine's thread, which at 250/s a poll finds instead (round 9's schedule was measured here
alone and made every root at 250/s wake it: read a paced figure beside ``bench_processor``'s timed hooks row). ``--agent-thread`` counts only the agent's (main) thread (``--separate-threads=yes``; with ``process`` the
evaluation process still runs under callgrind, so that both run at the same slowed pace): what evaluation costs the
agent itself, against ``none`` and ``bsp``.

Run: ``python -m benchmarks.instructions [--setup thread|process|bsp|none|peer-on|peer-off] [--metrics 1|4]
[--emit events,metrics|all] [--invocations 300] [--pace RATE] [--agent-thread]`` (needs ``valgrind``; ~1-3 min a
run). ``benchmarks.bench_instructions`` runs the set the issue's CPU targets name and prints the ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, SupportsIndex

from benchmarks._common import ROOT

SETUPS = ("thread", "process", "bsp", "none", "peer-on", "peer-off")
WARM_UP = 50
PAUSE = 0.05
"""The ``time.sleep`` before and after the window: where callgrind dumps."""
FLUSH_MILLIS = 3_600_000
"""A flush's timeout: under callgrind the evaluation process takes minutes to start (its imports), more than
15 on a loaded machine."""

Invoke = Callable[[int], None]
Flush = Callable[[bool], None]  # True: the flush before the window, False: after it
Tally = Callable[[], dict[str, int]]


@dataclass(frozen=True)
class Setup:
    """One run's configuration."""

    setup: str = "thread"
    metrics: int = 1
    emit: str = "events,metrics"
    invocations: int = 300
    pace: float | None = None
    agent_thread: bool = False

    @property
    def peer(self) -> bool:
        return self.setup.startswith("peer-")

    @property
    def label(self) -> str:
        if self.peer:
            what = "peer, 1 metric" if self.setup == "peer-on" else "peer, no evaluation"
        elif self.setup in ("thread", "process"):
            what = f"{self.setup}, {self.metrics} metric(s), emit {self.emit}"
        else:
            what = {"bsp": "agent + BatchSpanProcessor", "none": "agent, no span processor"}[self.setup]
        what += f", paced {self.pace:g}/s" if self.pace else ", burst"
        return what + (", agent's thread" if self.agent_thread else ", all threads")

    def argv(self) -> list[str]:
        """This setup's command-line options."""
        argv = ["--setup", self.setup, "--metrics", str(self.metrics), "--emit", self.emit]
        argv += ["--invocations", str(self.invocations)] + (["--pace", str(self.pace)] if self.pace else [])
        return argv + (["--agent-thread"] if self.agent_thread else [])


@dataclass(frozen=True)
class Count:
    """One run's window: instructions per invocation, over every counted process (and each one's share)."""

    setup: Setup
    per_invocation: float
    by_process: list[tuple[str, float]]
    tallies: dict[str, int]  # counts over the window: evaluated invocations, results (where this process saw them)

    @property
    def evaluated(self) -> int | None:
        return self.tallies.get("evaluated")


# --- inside: the workload, under callgrind ------------------------------------------------------------------------


def _ours(setup: Setup) -> tuple[Invoke, Flush, Tally]:
    if setup.setup == "process":
        for signal in ("TRACES", "LOGS", "METRICS"):
            os.environ[f"OTEL_{signal}_EXPORTER"] = "bench_counting"  # the evaluation process's exporters
        from otel_eval.processor._process import lifecycle

        # Under callgrind (~50x slower, more on a loaded machine) a child busy with a step for 10 s is not hung: the
        # feeder's hang timeout scaled as the flush's is (else it kills and restarts it mid-run: seen at load 7-10).
        lifecycle.SEND_TIMEOUT_SECONDS = FLUSH_MILLIS / 1000
    from benchmarks._bench_ours import processor_for
    from benchmarks._counting import CountingProviders
    from otel_eval.demo.workload import SCENARIOS, TravelAgent

    providers = CountingProviders(span_processors=setup.setup != "none")
    processor = None
    if setup.setup in ("thread", "process"):
        processor = processor_for(setup.setup, setup.metrics, None if setup.emit == "all" else setup.emit)
        providers.tracer_provider.add_span_processor(processor)
    agent = TravelAgent(providers.tracer_provider)
    scenario = next(s for s in SCENARIOS if s.key == "two_tools")

    def flush(before: bool) -> None:
        if processor is not None and not processor.force_flush(FLUSH_MILLIS):
            raise RuntimeError(f"force_flush did not finish: {processor.stats()}")
        _flush_providers(providers, before)

    def tally() -> dict[str, int]:
        tallies = {"results": providers.logs.results} if setup.setup == "thread" else {}
        if processor is not None:
            stats = processor.stats()
            tallies["evaluated"] = stats.get("invocations.evaluated", 0)
            tallies["evaluated"] += stats.get("evaluation_process.invocations.evaluated", 0)
        return tallies

    def invoke(_: int) -> None:
        agent.run(scenario)

    return invoke, flush, tally


def _flush_providers(providers: Any, before: bool) -> None:
    """The counting providers flushed at a window's edge: all three before it, the meter provider not after it (its
    export is not the workload's)."""
    if before:
        providers.force_flush()
    else:
        providers.tracer_provider.force_flush()
        providers.logger_provider.force_flush()


def _peer(setup: Setup) -> tuple[Invoke, Flush, Tally]:
    from benchmarks._bench_peer import peer_workload

    providers, invoke, wait_for_evaluations = peer_workload(setup.setup.removeprefix("peer-"))

    def flush(before: bool) -> None:  # as ours: the meter provider flushed before the window only
        wait_for_evaluations()
        _flush_providers(providers, before)

    def tally() -> dict[str, int]:
        logs = providers.logs  # evaluated: the traces with a result event
        return {"results": logs.results, "evaluated": len(logs.first_result)} if setup.setup == "peer-on" else {}

    return invoke, flush, tally


@contextlib.contextmanager
def _marked() -> Iterator[None]:
    """The evaluation process (``process``) marks the flushes made inside (see :mod:`benchmarks._callgrind`)."""
    marker = os.environ.get("BENCH_CALLGRIND_MARK_FILE")
    if marker:
        Path(marker).touch()
    try:
        yield
    finally:
        if marker:
            Path(marker).unlink(missing_ok=True)


def _workload(setup: Setup) -> None:
    sleep, slept = time.sleep, [0]

    # Every time.sleep until the window ends marks it (callgrind dumps there): the workload's two must be all.
    def counted(seconds: float | SupportsIndex) -> None:
        slept[0] += 1
        sleep(seconds)

    time.sleep = counted  # before the imports: a module's ``from time import sleep`` gets it too
    invoke, flush, tally = _peer(setup) if setup.peer else _ours(setup)
    # One invocation flushed first: the evaluation process of ``process`` starts on it, and it reads nothing while it
    # imports (minutes under callgrind), so a whole warm-up's spans would wait on a full socket past the feeder's
    # send timeout and have it restarted. The same for every setup.
    invoke(0)
    flush(True)
    for index in range(1, WARM_UP):
        invoke(index)
    with _marked():
        flush(True)
    before = tally()
    time.sleep(PAUSE)  # callgrind dumps here: the window starts
    if setup.pace is None:
        for index in range(setup.invocations):
            invoke(index)
    else:
        pause, start = threading.Event(), time.monotonic()
        for index in range(setup.invocations):
            pause.wait(max(0.0, start + index / setup.pace - time.monotonic()))  # never set: not time_sleep
            invoke(index)
    with _marked():
        flush(False)
    time.sleep(PAUSE)  # and here: the window ends
    marks = slept[0]
    time.sleep = sleep
    after = tally()
    print(json.dumps({"marks": marks, **{name: after[name] - before.get(name, 0) for name in after}}))


# --- outside: running it under callgrind --------------------------------------------------------------------------


def measure(setup: Setup, keep: str | None = None) -> Count:
    """Runs ``setup`` under callgrind in a fresh process (the peer's in its own virtualenv) and reads its window.

    Raises:
        RuntimeError: valgrind is missing, the run failed, or a process did not mark its window.
    """
    from benchmarks import _callgrind

    reason = _callgrind.missing()
    if reason:
        raise RuntimeError(reason)
    env = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    with tempfile.TemporaryDirectory(prefix="instructions-entry-points-") as directory:
        if setup.peer:
            from benchmarks.bench_processor import peer_python

            python, env["PYTHONPATH"] = str(peer_python()), str(ROOT)
        else:
            python = sys.executable
            entry_points = _callgrind.entry_points(Path(directory))
            env["PYTHONPATH"] = os.pathsep.join((str(ROOT), str(entry_points)))  # the evaluation process inherits it
            env[_callgrind.MARK_FILE] = str(Path(directory, "mark"))
        argv = [python, "-m", "benchmarks.instructions", "--inside", *setup.argv()]
        children = setup.setup == "process"
        # The evaluation process marks the flushes after the warm-up and after the window: its window is between.
        run = _callgrind.run(argv, cwd=ROOT, env=env, children=children, main_thread=setup.agent_thread, child_window=2,
                             keep=keep)  # fmt: skip
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    tallies: dict[str, int] = json.loads(lines[-1]) if lines else {}
    if tallies.pop("marks", None) != 2:
        raise RuntimeError(f"{setup.label}: the window was not cut by the workload's two pauses alone: {run.stdout}")
    names = ["agent process"] + [f"evaluation process ({w.pid})" for w in run.windows[1:]]
    windows = run.windows[:1] if setup.agent_thread else run.windows
    by_process = [(name, w.instructions / setup.invocations) for name, w in zip(names, windows, strict=False)]
    if setup.setup == "process" and not setup.agent_thread:
        if len(run.windows) != 2 or run.windows[1].instructions == 0:
            raise RuntimeError(f"process isolation: expected the evaluation process's window, got {run.windows}")
        if tallies.get("evaluated") != setup.invocations:
            raise RuntimeError(f"process isolation: {tallies.get('evaluated')} of {setup.invocations} evaluated")
    return Count(setup, sum(w.instructions for w in windows) / setup.invocations, by_process, tallies)


def describe(count: Count) -> str:
    """One line: the label, instructions per invocation, each process's share, what was evaluated."""
    line = f"{count.setup.label}: {count.per_invocation / 1e6:.3f} M instructions per invocation"
    if len(count.by_process) > 1:
        line += " (" + ", ".join(f"{name} {value / 1e6:.3f} M" for name, value in count.by_process) + ")"
    line += f" ({count.setup.invocations}"
    if count.evaluated is not None:
        line += f", {count.evaluated} evaluated"
    if "results" in count.tallies:
        line += f", {count.tallies['results']} results"
    return line + ")"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.instructions")
    parser.add_argument("--setup", choices=SETUPS, default="thread")
    parser.add_argument("--metrics", type=int, choices=(1, 4), default=1)
    parser.add_argument("--emit", default="events,metrics", help="ProcessorSettings.emit, or 'all'")
    parser.add_argument("--invocations", type=int, default=300)
    parser.add_argument("--pace", type=float, default=None, help="invocations a second (default: a burst)")
    parser.add_argument("--agent-thread", action="store_true", help="count only the agent's (main) thread")
    parser.add_argument("--keep", default=None, help="copy the window's callgrind file(s) to this prefix")
    parser.add_argument("--json", action="store_true", help="print the count as JSON as well")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    setup = Setup(args.setup, args.metrics, args.emit, args.invocations, args.pace, args.agent_thread)
    if args.inside:
        _workload(setup)
        return
    count = measure(setup, args.keep)
    print(describe(count))
    if args.json:
        print(json.dumps(asdict(count)))


def from_json(data: dict[str, Any]) -> Count:
    """A :class:`Count` printed with ``--json``."""
    by_process = [(str(name), float(value)) for name, value in data["by_process"]]
    return Count(Setup(**data["setup"]), float(data["per_invocation"]), by_process, dict(data["tallies"]))


if __name__ == "__main__":
    main()
