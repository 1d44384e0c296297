"""Soak: does anything the processor keeps grow with the invocations it has seen?

Drives the real processor (embedded worker, both isolations) on the real SDK with invocations that each have a new
trace id, and most a new session id: complete ones (a turn of a session that never gets another, or of one of a few
sessions that never go idle), ones whose root never ends, ones with a child span that starts after its root ended,
and ones killed mid-trace (root and child started, neither ends). At each checkpoint it reports the processor's
occupancy (``stats()``), the sizes of the structures that live as long as the processor, and the memory the Python
heap holds (``tracemalloc`` with ``--tracemalloc``, else the objects the collector tracks); the idle timeouts are
short so that the expiries run many times over the run. The figures plateau when everything is bounded.

Run: ``python -m benchmarks.bench_soak [--invocations 100000] [--isolation thread|process] [--tracemalloc]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import time
import tracemalloc
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from benchmarks._common import Row, loopback_judge, machine, print_rows
from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.evaluation.sessions import SessionLimits

MULTI_TURN = "rubric_based_multi_turn_trajectory_quality_v1"
CRITERIA: dict[str, Any] = {
    "tool_trajectory_avg_score": 1.0,
    MULTI_TURN: {
        "threshold": 0.5,
        "judge_model_options": {"num_samples": 1},
        "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "The agent helped."}}],
    },
}
KEY = "bench-key"
TRACE_IDLE_SECONDS = 0.5
SESSION_IDLE_SECONDS = 1.0
LIVELY_SESSIONS = 20
"""Sessions that get a turn every few invocations: never idle, closed by their turn limit."""
CHECKPOINTS = 10
GROWTH_TOLERANCE = 1.25
"""The last checkpoint may hold at most this much more than the middle one (noise, not growth)."""


def _invocation(agent: TravelAgent, tracer: trace.Tracer, index: int) -> None:
    """One invocation of the mix (see the module docs)."""
    kind = index % 10
    if kind <= 5:
        agent.run(SCENARIOS[index % len(SCENARIOS)], conversation_id=f"once-{index}")
    elif kind == 6:
        agent.run(SCENARIOS[index % len(SCENARIOS)], conversation_id=f"lively-{index % LIVELY_SESSIONS}")
    elif kind == 7:  # the root never ends
        root = tracer.start_span("invoke_agent never-ends", attributes={"gen_ai.conversation.id": f"open-{index}"})
        with trace.use_span(root, end_on_exit=False):
            tracer.start_span("chat m").end()
    elif kind == 8:  # a child starts after its root ended
        root = tracer.start_span("invoke_agent late-child", attributes={"gen_ai.conversation.id": f"late-{index}"})
        root.end()
        with trace.use_span(root, end_on_exit=False):
            tracer.start_span("execute_tool late").end()
    else:  # killed mid-trace: root and child started, nothing ends
        root = tracer.start_span("invoke_agent killed")
        with trace.use_span(root, end_on_exit=False):
            tracer.start_span("chat m")


def _structures(processor: EvaluationSpanProcessor) -> dict[str, int]:
    """The sizes of the in-thread engine's long-lived structures (empty with ``isolation="process"``: in the child)."""
    engine: Any = processor._engine
    assembler = getattr(engine, "_assembler", None)
    if assembler is None:
        supervisor = engine._supervisor
        return {
            "feeder.seen_traces": len(supervisor._seen),
            "feeder.scopes": len(supervisor.origins._scopes),
            "child_rss_kib": _rss_kib(engine.pid) if engine.pid is not None else 0,
        }
    embedded = engine.exporter
    windows = embedded._sessions._windows
    return {
        "open_spans.traces": assembler.open_spans.tracked_traces,
        "buffers.rejected": len(assembler.buffers._rejected),
        "assembler.pending": len(assembler._pending),
        "assembler.rescued": len(assembler._rescued),
        "assembler.suppressed": len(assembler._suppressed),
        "logs.handed_on": len(assembler.logs._handed_on),
        "sessions.open": len(windows),
        "sessions.next": len(windows._next),
        "sessions.deadlines": len(windows._deadlines),
        "embedded.queue": embedded.queue_size,
    }


def _rss_kib(pid: int | str = "self") -> int:
    """Resident memory of process ``pid`` (this one by default), KiB; 0 when it is not running."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)


def _heap(traced: bool) -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0] if traced else len(gc.get_objects())


def soak(invocations: int, isolation: str, traced: bool, base_url: str) -> tuple[list[dict[str, int]], int]:
    """Runs the workload; returns one row of figures per checkpoint (the last after the idle timeouts passed) and
    the invocations evaluated (the evaluation process's as of its last flush with ``isolation="process"``)."""
    os.environ["GOOGLE_API_KEY"] = KEY
    os.environ["GOOGLE_GEMINI_BASE_URL"] = base_url
    provider = TracerProvider()
    settings = ProcessorSettings(
        isolation=isolation,
        trace_idle_timeout=TRACE_IDLE_SECONDS,
        sessions=SessionLimits(idle_timeout=SESSION_IDLE_SECONDS),
    )
    options: dict[str, Any] = {"meter_provider": MeterProvider(), "tracer_provider": TracerProvider()}
    if isolation == "process":  # the evaluation process exports as the environment says: nowhere
        options = {}
        for signal in ("TRACES", "METRICS", "LOGS"):
            os.environ[f"OTEL_{signal}_EXPORTER"] = "none"
    processor = EvaluationSpanProcessor(CRITERIA, settings=settings, **options)
    provider.add_span_processor(processor)
    agent = TravelAgent(provider)
    tracer = provider.get_tracer("soak")
    rows: list[dict[str, int]] = []
    if traced:
        tracemalloc.start()
    every = max(1, invocations // CHECKPOINTS)

    def checkpoint(done: int) -> None:
        processor.force_flush(30_000)
        stats = processor.stats()
        row = {"invocations": done, "heap": _heap(traced), "rss_kib": _rss_kib()}
        row.update({k: v for k, v in stats.items() if k in _OCCUPANCY or k.endswith(".open_traces")})
        row.update(_structures(processor))
        rows.append(row)
        print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)

    started = time.perf_counter()
    for index in range(invocations):
        _invocation(agent, tracer, index)
        if (index + 1) % every == 0:
            checkpoint(index + 1)
    time.sleep(max(TRACE_IDLE_SECONDS, SESSION_IDLE_SECONDS) * 3)
    checkpoint(invocations)
    elapsed = time.perf_counter() - started
    stats = processor.stats()
    evaluated = stats.get("invocations.evaluated", stats.get("evaluation_process.invocations.evaluated", 0))
    provider.shutdown()
    if traced:
        tracemalloc.stop()
    print(f"{invocations} invocations in {elapsed:.0f} s; final stats: {stats}")
    return rows, evaluated


_OCCUPANCY = ("open_traces", "buffered_spans", "waiting_roots", "pending_spans", "buffered_log_records")


def main(argv: list[str] | None = None) -> list[Row]:
    """Runs the soak and returns one row per isolation asked: the heap at the last checkpoint under load over the
    middle one (1.0: flat)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_soak")
    parser.add_argument("--invocations", type=int, default=20_000)
    parser.add_argument("--isolation", choices=("thread", "process", "both"), default="thread")
    parser.add_argument("--tracemalloc", action="store_true", help="heap bytes (slower) instead of object counts")
    args = parser.parse_args(argv or [])
    print(f"# soak benchmark on {machine()}")
    rows = []
    with loopback_judge() as base_url:
        isolations = ("thread", "process") if args.isolation == "both" else (args.isolation,)
        for isolation in isolations:
            figures, evaluated = soak(args.invocations, isolation, args.tracemalloc, base_url)
            middle, last = figures[len(figures) // 2 - 1]["heap"], figures[-2]["heap"]
            ratio = last / middle if middle else 1.0
            unit = "bytes" if args.tracemalloc else "objects"
            rows.append(
                Row(
                    f"soak {isolation}: heap after {args.invocations} invocations ({evaluated} evaluated) vs half-way",
                    f"{last} {unit}",
                    f"{middle} {unit}",
                    ratio,
                    f"<= {GROWTH_TOLERANCE}",
                    ratio <= GROWTH_TOLERANCE,
                )
            )
    print_rows("Soak", rows)
    return rows


if __name__ == "__main__":
    import sys

    sys.exit(0 if all(row.met for row in main(sys.argv[1:])) else 1)
