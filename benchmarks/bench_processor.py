"""What evaluating costs, counted in every process, against the Splunk peer and the ``BatchSpanProcessor``.

The workload: a 5-span GenAI-semconv invocation (``invoke_agent``, ``chat`` asking for two tools, two
``execute_tool``, ``chat`` answering), paced at 250 invocations/s and in a burst, on the global SDK providers, which
export spans, logs and metrics through the SDK's batch processors / periodic reader to counting exporters
(:mod:`benchmarks._counting`). Every run is a fresh process (``benchmarks._bench_ours``, ``benchmarks._bench_peer``),
the configurations alternating within each repeat so that drift in the machine's load hits all of them.

- **Total CPU added per evaluated invocation**: the agent's process CPU (``time.process_time`` from the first
  measured invocation until every result is flushed) plus, with ``isolation="process"``, the evaluation process's
  (``/proc/<pid>/stat`` over the same window; its total after it is reaped, ``RUSAGE_CHILDREN``, is printed beside as
  a check), minus the same workload without evaluation (ours: the agent's spans exported by a ``BatchSpanProcessor``;
  the peer's: its handler with evaluations off), divided by the invocations actually evaluated (traces with a
  ``gen_ai.evaluation.result`` event; shed or dropped ones are counted, not cheap). Ours: one metric
  (``tool_call_count_v1``) and ADK's 4 efficiency metrics, for both isolations; the peer
  (``splunk-otel-util-genai-evals`` 0.1.8, in-process, in its own virtualenv created on first use): one LLM-free
  metric, an event and a histogram point per result. Targets: one metric <= 1.0x the peer's; the 4 <= 1.5x the
  peer's one.
- **Agent-thread CPU per span** (``time.thread_time`` of the thread that starts and ends every span, over the whole
  window): what the processor adds to it vs what the ``BatchSpanProcessor`` adds (the same agent with no span
  processor at all is the floor of both). Target <= 1.0.
- **Freshness**: a trace's first result event's time (stamped when emitted) minus its root span's end, paced, p50
  and p99. Targets: <= 5 ms and <= 25 ms, both isolations.

Run: ``python -m benchmarks.bench_processor [--quick] [--invocations N] [--repeat N] [--emit events,metrics]
[--save FILE | --load FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks._common import ROOT, Row, machine, print_rows
from benchmarks._counting import COUNTS_DIR, entry_point_dir, freshness_ms

PEER_VENV = ROOT / "benchmarks" / ".venv-splunk-evals"
PEER_REQUIREMENTS = (
    "splunk-otel-util-genai-evals==0.1.8",
    # 0.1.x imports opentelemetry._events, which the API dropped in 1.44: the newest SDK it runs on.
    "opentelemetry-api==1.43.0",
    "opentelemetry-sdk==1.43.0",
)
SPANS_PER_INVOCATION = 5
RATE = 250.0
MODES: dict[str, float | None] = {"paced": RATE, "burst": None}
RUN_TIMEOUT = 900


@dataclass(frozen=True)
class Config:
    """One side's setup for a run."""

    side: str  # "ours" or "peer"
    setup: str
    metrics: int = 1

    @property
    def label(self) -> str:
        if self.side == "peer":
            return f"peer, {'1 metric' if self.setup == 'on' else 'no evaluation'}"
        if self.setup == "bsp":
            return "agent + BatchSpanProcessor"
        if self.setup.startswith(("thread-cpu-", "hooks-")):
            kind = "whole thread" if self.setup.startswith("thread-cpu-") else "hooks"
            return f"agent thread ({kind}): none / BSP / ours, {self.setup.rsplit('-', 1)[-1]}"
        return f"ours, {self.setup}, {'1 metric' if self.metrics == 1 else '4 efficiency metrics'}"


BSP = Config("ours", "bsp")
PEER_OFF, PEER_ON = Config("peer", "off"), Config("peer", "on")
OURS = tuple(Config("ours", isolation, metrics) for isolation in ("thread", "process") for metrics in (1, 4))
THREAD_CPU = tuple(
    Config("ours", f"{kind}-{isolation}") for kind in ("thread-cpu", "hooks") for isolation in ("thread", "process")
)
CONFIGS = (BSP, *OURS, PEER_OFF, PEER_ON, *THREAD_CPU)


def peer_python() -> Path:
    """The peer's virtualenv interpreter, creating the virtualenv and installing the peer when missing."""
    python, stamp = PEER_VENV / "bin" / "python", PEER_VENV / ".installed"
    if not stamp.exists() or stamp.read_text() != "\n".join(PEER_REQUIREMENTS):
        print(f"installing {' '.join(PEER_REQUIREMENTS)} into {PEER_VENV}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PEER_REQUIREMENTS], check=True)
        stamp.write_text("\n".join(PEER_REQUIREMENTS))
    return python


def run_one(
    config: Config, rate: float | None, invocations: int, entry_points: Path, emit: str | None = None
) -> dict[str, Any]:
    """One fresh process of ``config``'s runner; what it measured (``emit``: our processor's signals)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    with tempfile.TemporaryDirectory(prefix="bench-counts-") as counts:
        env[COUNTS_DIR] = counts
        if config.side == "ours":
            env["PYTHONPATH"] = os.pathsep.join((str(ROOT), str(entry_points)))  # the evaluation process inherits it
            argv = [sys.executable, "-m", "benchmarks._bench_ours", "--setup", config.setup]
            argv += ["--metrics", str(config.metrics)] + (["--emit", emit] if emit else [])
        else:
            env["PYTHONPATH"] = str(ROOT)
            argv = [str(peer_python()), "-m", "benchmarks._bench_peer", "--setup", config.setup]
        argv += ["--invocations", str(invocations)] + (["--rate", str(rate)] if rate else [])
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"{config.label}: exit {done.returncode}\n{done.stderr[-3000:]}")
    if done.stderr.strip():
        print(f"  ({config.label} said: {done.stderr.strip().splitlines()[-1][:200]})")
    run: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    counts = run["counts"]
    window = {t for t, end in counts["root_ends"].items() if end >= run["window_start_ns"]}
    evaluated = window & set(counts["first_result"])
    run["evaluated"] = len(evaluated)
    run["measured_roots"] = len(window)
    run["freshness_ms"] = freshness_ms({t: counts["root_ends"][t] for t in evaluated}, counts["first_result"])
    run["results_per_evaluated"] = counts["results"] / max(1, len(set(counts["first_result"])))
    if config.side == "ours" and config.setup in ("thread", "process"):
        wrong = [path for path in counts["otel_eval"] if not path.startswith(str(ROOT))]
        if wrong or not run["otel_eval"].startswith(str(ROOT)):
            raise RuntimeError(f"{config.label}: otel_eval imported from outside {ROOT}: {wrong or run['otel_eval']}")
    return run


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))] if ordered else float("nan")


# --- the figures ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cost:
    """One configuration's CPU per evaluated invocation in one mode (medians over the runs)."""

    total_us: float  # agent + evaluation process, minus the baseline, per evaluated invocation
    spread_us: tuple[float, float]  # the least and the most of the runs
    agent_us: float
    child_us: float
    evaluated: float  # per run, of ``invocations``
    results_per_evaluated: float
    child_reaped_s: float  # the evaluation process's whole life, RUSAGE_CHILDREN after it was reaped


def cost(runs: list[dict[str, Any]], baseline: list[dict[str, Any]]) -> Cost:
    """Medians over the repeats, each run paired with the baseline run of its own repeat (run next to it, so that
    drift in the machine's load between repeats cancels)."""
    med = statistics.median
    pairs = list(zip(runs, baseline, strict=True))

    def per(run: dict[str, Any], value: float) -> float:
        return value / max(1, run["evaluated"]) * 1e6

    totals = [per(r, r["process_cpu"] + r["child_cpu"] - b["process_cpu"]) for r, b in pairs]
    return Cost(
        total_us=med(totals),
        spread_us=(min(totals), max(totals)),
        agent_us=med(per(r, r["process_cpu"] - b["process_cpu"]) for r, b in pairs),
        child_us=med(per(r, r["child_cpu"]) for r in runs),
        evaluated=med(r["evaluated"] for r in runs),
        results_per_evaluated=med(r["results_per_evaluated"] for r in runs),
        child_reaped_s=med(r["child_cpu_reaped_total"] for r in runs),
    )


def per_span_ns(run: dict[str, Any], key: str) -> list[float]:
    """CPU per span (ns) of the three interleaved agents (no span processor or a no-op one, BSP, ours): ``key``
    ``thread_cpu_by_agent`` (the whole thread) or ``hook_cpu_by_agent`` (inside the processors' hooks)."""
    counts = run["invocations_by_agent"]
    return [spent / (count * SPANS_PER_INVOCATION) * 1e9 for spent, count in zip(run[key], counts, strict=True)]


def spread(figure: Cost) -> str:
    return f"{figure.spread_us[0]:.0f}-{figure.spread_us[1]:.0f}"


def verdict(met: bool) -> str:
    return "PASS" if met else "MISS"


def report(runs: dict[tuple[Config, str], list[dict[str, Any]]], invocations: int, repeat: int) -> list[Row]:
    """Prints the tables and returns the rows (targets against the peer, the BatchSpanProcessor and the clock)."""
    rows: list[Row] = []
    print(f"\n## CPU per evaluated invocation ({invocations} invocations a run, median of {repeat} runs)\n")
    print(
        f"{'workload':<7} {'configuration':<34} {'evaluated':>11} {'results/inv':>11} {'agent us':>9} "
        f"{'child us':>9} {'total us':>9} {'runs: min-max':>13} {'vs peer':>8}  target  verdict"
    )
    for mode in MODES:
        peer = cost(runs[PEER_ON, mode], runs[PEER_OFF, mode])
        print(
            f"{mode:<7} {PEER_ON.label:<34} {peer.evaluated:>6.0f}/{invocations:<4} {peer.results_per_evaluated:>11.1f} "
            f"{peer.agent_us:>9.0f} {0:>9.0f} {peer.total_us:>9.0f} {spread(peer):>13}"
        )
        for config in OURS:
            ours = cost(runs[config, mode], runs[BSP, mode])
            limit = 1.0 if config.metrics == 1 else 1.5
            ratio = ours.total_us / peer.total_us if peer.total_us > 0 else float("inf")
            note = ""
            if round(ours.results_per_evaluated) != config.metrics:
                note = f" ({ours.results_per_evaluated:.0f} results/inv: not {config.metrics} metric)"
            print(
                f"{mode:<7} {config.label:<34} {ours.evaluated:>6.0f}/{invocations:<4} "
                f"{ours.results_per_evaluated:>11.1f} {ours.agent_us:>9.0f} {ours.child_us:>9.0f} "
                f"{ours.total_us:>9.0f} {spread(ours):>13} {ratio:>7.2f}x  <= {limit:<4}  {verdict(ratio <= limit)}{note}"
            )
            if config.setup == "process":
                print(f"{'':<8}(evaluation process over its whole life, reaped: {ours.child_reaped_s:.2f} s CPU)")
            rows.append(
                Row(
                    f"total CPU/evaluated inv vs peer, {config.setup}, {metrics_label(config.metrics, ours)}, {mode}",
                    f"{ours.total_us:.0f} us",
                    f"{peer.total_us:.0f} us",
                    ratio,
                    f"<= {limit}",
                    ratio <= limit,
                )
            )
    rows += agent_thread(runs)
    rows += freshness(runs)
    return rows


def agent_thread(runs: dict[tuple[Config, str], list[dict[str, Any]]]) -> list[Row]:
    rows = []
    print("\n## Agent-thread CPU per span (starts and ends: time.thread_time of the thread running the agent)\n")
    print("Three agents in one process, invocations interleaved: no span processor, a BatchSpanProcessor, ours alone.")
    print("whole thread: around each invocation; hooks: inside on_start + on_end, less a no-op processor's (info).")
    for mode in MODES:
        for isolation in ("thread", "process"):
            whole = [
                per_span_ns(run, "thread_cpu_by_agent") for run in runs[Config("ours", f"thread-cpu-{isolation}"), mode]
            ]
            hooks = [per_span_ns(run, "hook_cpu_by_agent") for run in runs[Config("ours", f"hooks-{isolation}"), mode]]
            # Pooled over the runs: the BatchSpanProcessor adds ~1 us to a span of ~50 us, near the noise of one run.
            floor, batch, ours = (statistics.fmean(values[k] for values in whole) for k in range(3))
            ratio = (ours - floor) / (batch - floor) if batch > floor else float("inf")
            noop, batch_hooks, our_hooks = (statistics.fmean(values[k] for values in hooks) for k in range(3))
            hook_ratio = (our_hooks - noop) / (batch_hooks - noop)
            print(
                f"{mode} {isolation}: whole thread: none {floor:.0f} ns, BSP {batch:.0f} (adds {batch - floor:.0f}), "
                f"ours {ours:.0f} (adds {ours - floor:.0f}): {ratio:.2f}x, target <= 1.0: {verdict(ratio <= 1.0)}; "
                f"hooks: BSP {batch_hooks - noop:.0f} ns, ours {our_hooks - noop:.0f} ns: {hook_ratio:.2f}x"
            )
            rows.append(
                Row(
                    f"agent-thread CPU/span vs BSP, {isolation}, {mode}",
                    f"{ours - floor:.0f} ns",
                    f"{batch - floor:.0f} ns",
                    ratio,
                    "<= 1.0",
                    ratio <= 1.0,
                )
            )
            rows.append(
                Row(
                    f"  in on_start+on_end vs BSP, {isolation}, {mode}",
                    f"{our_hooks - noop:.0f} ns",
                    f"{batch_hooks - noop:.0f} ns",
                    hook_ratio,
                    "info",
                    True,
                )
            )
    return rows


def freshness(runs: dict[tuple[Config, str], list[dict[str, Any]]]) -> list[Row]:
    rows = []
    print(f"\n## Freshness: root end -> first result, paced at {RATE:.0f}/s (all runs pooled)\n")
    for config in (*OURS, PEER_ON):
        latencies = [ms for run in runs[config, "paced"] for ms in run["freshness_ms"]]
        p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
        met50, met99 = p50 <= 5.0, p99 <= 25.0
        target = "" if config.side == "peer" else f"  targets <= 5 / <= 25 ms: {verdict(met50)} / {verdict(met99)}"
        print(f"{config.label:<34} p50 {p50:6.1f} ms  p99 {p99:6.1f} ms  ({len(latencies)} invocations){target}")
        if config.side == "ours" and config.metrics == 1:
            for label, value, limit, met in (("p50", p50, 5.0, met50), ("p99", p99, 25.0, met99)):
                rows.append(
                    Row(
                        f"freshness {label}, {config.setup}",
                        f"{value:.1f} ms",
                        f"<= {limit:g} ms",
                        value / limit,
                        "<= 1.0",
                        met,
                    )
                )
    return rows


def measure(invocations: int, repeat: int, emit: str | None = None) -> dict[tuple[Config, str], list[dict[str, Any]]]:
    """Every configuration's runs in each workload: fresh processes, in alternating order within each repeat
    (``emit``: the signals our processor emits, all by default)."""
    peer_python()
    runs: dict[tuple[Config, str], list[dict[str, Any]]] = {(c, m): [] for c in CONFIGS for m in MODES}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-entry-points-") as directory:
        entry_points = entry_point_dir(Path(directory))
        for round_ in range(repeat):
            for mode, rate in MODES.items():
                order = CONFIGS if round_ % 2 == 0 else tuple(reversed(CONFIGS))
                for config in order:
                    run = run_one(config, rate, invocations, entry_points, emit)
                    runs[config, mode].append(run)
                    elapsed = time.perf_counter() - started
                    print(f"[{elapsed:5.0f} s] {mode} {config.label}: {progress(config, run)}", flush=True)
    return runs


def progress(config: Config, run: dict[str, Any]) -> str:
    stats = run["stats"]
    cpu = f"cpu {run['process_cpu']:.2f} s + child {run['child_cpu']:.2f} s"
    if config in THREAD_CPU:
        evaluated = stats.get("invocations.evaluated", 0) + stats.get("evaluation_process.invocations.evaluated", 0)
        return f"{cpu}, evaluated with warm-up {evaluated}"
    return f"{cpu}, evaluated {run['evaluated']}/{run['measured_roots']}"


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_processor", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="500 invocations a run, 1 repeat (for iterating)")
    parser.add_argument("--invocations", type=int, default=None, help="invocations per run (default 2000)")
    parser.add_argument("--repeat", type=int, default=None, help="runs per configuration and workload (default 3)")
    parser.add_argument("--save", type=Path, help="write every run's measurements to this JSON file")
    parser.add_argument("--load", type=Path, help="report the runs saved with --save instead of running")
    parser.add_argument(
        "--emit", help="the signals our processor emits (OTEL_EVAL_EMIT's values, with events), e.g. events,metrics"
    )
    args = parser.parse_args(argv)
    invocations = args.invocations or (500 if args.quick else 2000)
    repeat = args.repeat or (1 if args.quick else 3)
    print(machine())
    if args.load:
        saved = json.loads(args.load.read_text())
        invocations, repeat = saved["invocations"], saved["repeat"]
        by_key = {(c.setup, c.metrics): c for c in CONFIGS}
        runs = {(by_key[setup, metrics], mode): found for setup, metrics, mode, found in saved["runs"]}
    else:
        runs = measure(invocations, repeat, args.emit)
    if args.save:
        flat = [[config.setup, config.metrics, mode, found] for (config, mode), found in runs.items()]
        args.save.write_text(json.dumps({"invocations": invocations, "repeat": repeat, "runs": flat}))
    rows = report(runs, invocations, repeat)
    print_rows(f"bench_processor — {machine()}", rows)
    return rows


def metrics_label(asked: int, ours: Any) -> str:
    """``1m``, or ``1m asked, 4 ran`` where the processor ran other than the metrics asked (both isolations run the one
    metric asked, ``ProcessorSettings.metrics``: a check that they still do): the row's target is for what was
    asked."""
    ran = round(ours.results_per_evaluated)
    return f"{asked}m" if ran == asked else f"{asked}m asked, {ran} ran"


if __name__ == "__main__":
    sys.exit(0 if all(row.met for row in main(sys.argv[1:])) else 1)
