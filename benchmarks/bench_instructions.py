"""The issue's CPU targets in instructions: every figure they name, counted by callgrind in one run, the peer included.

Timed rows (``bench_processor``) need an idle machine: on a shared one the peer's own added cost moved 2.8x between
two back-to-back runs. Instructions counted by callgrind do not depend on the load, so these rows can carry the
targets anywhere. Each figure is one fresh process of :mod:`benchmarks.instructions` under callgrind (the peer's in
its own virtualenv, ``bench_processor.PEER_VENV``), the same workload as ``bench_processor``'s, in a burst and paced;
what a side adds is its setup minus its own baseline:

- ours: ``thread`` (or ``process``) minus ``bsp`` (the agent's spans exported by a ``BatchSpanProcessor``), every
  thread and, with ``process``, both processes counted; the peer: ``peer-on`` minus ``peer-off`` (its handler with
  evaluations off).
- 1 metric (``tool_call_count_v1``) with ``events,metrics`` vs the peer's one metric: <= 1.0; with every output
  (``all``): <= 1.5; the 4 efficiency metrics with ``events,metrics``: <= 1.5.
- process isolation's total (both processes) with the 4 efficiency metrics vs thread isolation's with the same 4:
  <= 1.2.
- the agent's thread alone (``--agent-thread``): what ours adds to it (``thread`` / ``process`` minus ``bsp``) vs what
  the ``BatchSpanProcessor`` adds (``bsp`` minus ``none``, no span processor): <= 1.0, both isolations.

Paced: ``PACE`` invocations a second under callgrind (each its own engine step, as 250/s at full speed: see
:mod:`benchmarks.instructions`). A row is met only when its ratio is and every invocation of its runs was evaluated.
Each run takes ~1-4 min (the evaluation process starts under callgrind too); ``--jobs`` runs that many
at once (counts do not depend on it; paced figures may shift a few percent with the scheduling).

Run: ``python -m benchmarks.bench_instructions [--modes burst,paced] [--invocations 300] [--paced-invocations 60]
[--jobs 2] [--save FILE | --load FILE]`` (needs ``valgrind``: without it, prints why and returns no rows).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from benchmarks._common import Row, machine, print_rows
from benchmarks.instructions import Count, Setup, describe, from_json, measure

BURST = 300
PACED = 60
PACE = 2.0
EVENTS_METRICS = "events,metrics"
MODES = ("burst", "paced")


def plan(burst: int, paced: int, modes: Sequence[str] = MODES) -> dict[str, Setup]:
    """Every run the rows need, by name (``burst ...`` / ``paced ...``)."""
    how = {"burst": (burst, None), "paced": (paced, PACE)}
    setups: dict[str, Setup] = {}
    for mode in modes:
        invocations, pace = how[mode]
        runs = {
            "process": Setup("process", 4, EVENTS_METRICS),
            "thread 1m": Setup("thread", 1, EVENTS_METRICS),
            "thread 1m all": Setup("thread", 1, "all"),
            "thread 4m": Setup("thread", 4, EVENTS_METRICS),
            "bsp": Setup("bsp"),
            "peer-on": Setup("peer-on"),
            "peer-off": Setup("peer-off"),
            "agent process": Setup("process", 1, EVENTS_METRICS, agent_thread=True),  # as "agent thread"
            "agent thread": Setup("thread", 1, EVENTS_METRICS, agent_thread=True),
            "agent bsp": Setup("bsp", agent_thread=True),
            "agent none": Setup("none", agent_thread=True),
        }
        for name, setup in runs.items():
            setups[f"{mode} {name}"] = Setup(**{**asdict(setup), "invocations": invocations, "pace": pace})
    return setups


def run_all(setups: dict[str, Setup], jobs: int, save: Path | None = None) -> dict[str, Count]:
    """Runs every setup (``jobs`` at a time), printing each count as it comes (a run that fails is reported and left
    out: its rows are missed); ``save``: the counts so far written there after each run."""
    started = time.perf_counter()
    counts: dict[str, Count] = {}

    def one(name: str) -> None:
        try:
            count = measure(setups[name])
        except Exception as error:  # noqa: BLE001 - report it and go on with the other runs
            print(f"[{time.perf_counter() - started:5.0f} s] {setups[name].label}: FAILED: {error}", flush=True)
            return
        counts[name] = count
        print(f"[{time.perf_counter() - started:5.0f} s] {describe(count)}", flush=True)
        if save is not None:
            save.write_text(json.dumps({name: asdict(count) for name, count in counts.items()}))

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, setups))
    return {name: counts[name] for name in setups if name in counts}


def rows(counts: dict[str, Count]) -> list[Row]:
    """The targets' rows from the counts (a mode whose runs are missing is left out)."""
    found: list[Row] = []
    for mode in MODES:
        if not any(name.startswith(mode) for name in counts):
            continue

        def per(name: str, mode: str = mode) -> float:
            count = counts.get(f"{mode} {name}")
            return count.per_invocation if count is not None else float("nan")  # a failed run: the row is missed

        def evaluated(*names: str, mode: str = mode) -> bool:
            found = [counts.get(f"{mode} {name}") for name in names]
            return all(count is not None and count.evaluated == count.setup.invocations for count in found)

        peer = per("peer-on") - per("peer-off")
        thread4 = per("thread 4m") - per("bsp")
        for name, label, limit in (
            ("thread 1m", "1 metric, events,metrics", 1.0),
            ("thread 1m all", "1 metric, all outputs", 1.5),
            ("thread 4m", "4 metrics, events,metrics", 1.5),
        ):
            ours = per(name) - per("bsp")
            found.append(_row(f"instr added/inv vs peer, {label}, {mode}", ours, peer, limit,
                              evaluated(name, "peer-on")))  # fmt: skip
        process = per("process") - per("bsp")
        found.append(_row(f"instr added/inv, process vs thread, 4m, {mode}", process, thread4, 1.2,
                          evaluated("process", "thread 4m")))  # fmt: skip
        batch = per("agent bsp") - per("agent none")
        for isolation in ("thread", "process"):
            ours = per(f"agent {isolation}") - per("agent bsp")
            found.append(_row(f"agent-thread instr/inv vs BSP, {isolation}, {mode}", ours, batch, 1.0,
                              evaluated(f"agent {isolation}")))  # fmt: skip
    return found


def _row(benchmark: str, ours: float, baseline: float, limit: float, all_evaluated: bool) -> Row:
    ratio = ours / baseline if baseline > 0 else float("inf")
    note = "" if all_evaluated else " (not all evaluated)"
    return Row(
        benchmark + note, f"{ours / 1e6:.3f} M", f"{baseline / 1e6:.3f} M", ratio, f"<= {limit}",
        ratio <= limit and all_evaluated,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_instructions", description=__doc__)
    parser.add_argument("--invocations", type=int, default=BURST, help=f"a burst's invocations (default {BURST})")
    parser.add_argument("--paced-invocations", type=int, default=PACED, help=f"paced at {PACE:g}/s (default {PACED})")
    parser.add_argument("--modes", default=",".join(MODES), help="burst, paced or both (default)")
    parser.add_argument("--only", help="these runs of the set alone, comma-separated (e.g. 'agent bsp,agent none')")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (default 2)")
    parser.add_argument("--save", type=Path, help="write every count to this JSON file")
    parser.add_argument(
        "--load", type=Path, nargs="+", help="report the counts saved with --save (merged) instead of running"
    )
    args = parser.parse_args(argv)
    print(machine())
    if args.load:
        counts = {name: from_json(data) for path in args.load for name, data in json.loads(path.read_text()).items()}
    else:
        from benchmarks._callgrind import missing

        reason = missing()
        if reason:
            print(f"bench_instructions skipped: {reason}")
            return []
        modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
        if not set(modes) <= set(MODES):
            parser.error(f"--modes: burst, paced or both, not {args.modes!r}")
        setups = plan(args.invocations, args.paced_invocations, modes)
        if args.only:
            only = {f"{mode} {name.strip()}" for mode in modes for name in args.only.split(",")}
            setups = {name: setup for name, setup in setups.items() if name in only}
        print(f"{len(setups)} runs under callgrind, {args.jobs} at a time")
        counts = run_all(setups, args.jobs, args.save)
    if args.save:
        args.save.write_text(json.dumps({name: asdict(count) for name, count in counts.items()}))
    print("\n## Instructions per invocation (callgrind, window after 50 of warm-up)\n")
    for count in counts.values():
        print(describe(count))
    found = rows(counts)
    print_rows(f"bench_instructions — {machine()}", found)
    return found


if __name__ == "__main__":
    sys.exit(0 if all(row.met for row in main(sys.argv[1:])) else 1)
