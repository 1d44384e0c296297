"""One fresh-process run of ``bench_processor``'s workload on our side; prints one JSON line of what it measured.

The workload: the travel agent's two-tool scenario, a 5-span GenAI-semconv invocation (``invoke_agent``, ``chat``,
two ``execute_tool``, ``chat``) on the global SDK providers, which export to counting exporters
(:mod:`benchmarks._counting`). Only the processor's public API is used.

``--setup bsp``: the agent's spans exported by a ``BatchSpanProcessor`` (the baseline); ``thread`` / ``process``:
that plus ``EvaluationSpanProcessor`` with this isolation (with ``process`` the evaluation process exports its
results to the same counting exporters, which it loads through the SDK's entry points).

``--setup thread-cpu-thread`` / ``thread-cpu-process``: the agent-thread comparison in one process: three agents on
three tracer providers (no span processor; a ``BatchSpanProcessor``; our processor alone, with that isolation), their
invocations interleaved one by one so that drift in the machine's load hits all three, each invocation's
``time.thread_time`` added to its agent's total.

Run by ``bench_processor``: ``python -m benchmarks._bench_ours --setup thread --metrics 1 --invocations 2000
[--rate 250]``, with ``$BENCH_COUNTS_DIR`` set and the counting exporters' entry points on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from benchmarks._counting import (
    COUNTS_DIR,
    EXPORTER_NAME,
    CountingProviders,
    CountingSpanExporter,
    collect,
    descendants_cpu,
    drive,
    reaped_children_cpu,
    settle,
)

WARM_UP = 50
FLUSH_MILLIS = 300_000
ONE_METRIC = "tool_call_count_v1"
SETUPS = ("bsp", "thread", "process", "thread-cpu-thread", "thread-cpu-process")


def processor_for(isolation: str, metrics: int) -> Any:
    """Our processor with ``isolation`` and one metric or the 4 efficiency metrics, queues no run fills (as the
    peer's): every invocation is evaluated unless the processor sheds it itself."""
    from otel_eval import EvaluationSpanProcessor
    from otel_eval.metrics import MetricRegistry, default_registry

    options: dict[str, Any] = {"isolation": isolation, "max_pending_spans": 1_000_000}
    if metrics == 1 and isolation == "thread":
        # With criteria or without, the processor adds ADK's 4 efficiency metrics that its registry holds: a registry
        # of one metric is how the public API runs one. It cannot cross into the evaluation process, so there the
        # run evaluates the 4 (bench_processor reports the results per invocation it counted).
        registry = MetricRegistry()
        registry.register(default_registry().get(ONE_METRIC))
        options["registry"] = registry
    return EvaluationSpanProcessor(**options)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--setup", choices=SETUPS, required=True)
    parser.add_argument("--metrics", type=int, choices=(1, 4), default=1)
    parser.add_argument("--invocations", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=None, help="invocations per second (default: a burst)")
    args = parser.parse_args()
    isolation = args.setup.rsplit("-", 1)[-1]
    if isolation == "process":
        for signal in ("TRACES", "LOGS", "METRICS"):
            os.environ[f"OTEL_{signal}_EXPORTER"] = EXPORTER_NAME
    import otel_eval
    from otel_eval.demo.workload import SCENARIOS, TravelAgent

    scenario = next(s for s in SCENARIOS if s.key == "two_tools")
    providers = CountingProviders()
    processor = None
    if args.setup.startswith("thread-cpu-"):
        tracer_providers = [TracerProvider(), TracerProvider(), TracerProvider()]
        tracer_providers[1].add_span_processor(BatchSpanProcessor(CountingSpanExporter()))
        processor = processor_for(isolation, args.metrics)
        tracer_providers[2].add_span_processor(processor)
        agents = [TravelAgent(provider) for provider in tracer_providers]
        spent = [0.0, 0.0, 0.0]

        def invoke(index: int) -> None:
            which = index % 3
            started = time.thread_time()
            agents[which].run(scenario)
            spent[which] += time.thread_time() - started

    else:
        if args.setup != "bsp":
            processor = processor_for(args.setup, args.metrics)
            providers.tracer_provider.add_span_processor(processor)
        agent = TravelAgent(providers.tracer_provider)
        tracer_providers = [providers.tracer_provider]
        spent = []

        def invoke(index: int) -> None:
            agent.run(scenario)

    def flush() -> None:
        if processor is not None:
            processor.force_flush(FLUSH_MILLIS)
        for provider in tracer_providers:
            provider.force_flush()
        providers.force_flush()

    drive(invoke, WARM_UP, args.rate)
    flush()
    settle()
    spent[:] = [0.0] * len(spent)
    children_before = descendants_cpu()
    window_start_ns = time.time_ns()
    cpu_before, thread_before = time.process_time(), time.thread_time()
    started = time.perf_counter()
    drive(invoke, args.invocations, args.rate)
    thread_cpu = time.thread_time() - thread_before  # the agent's thread: starts and ends every span
    flush()
    cpu = time.process_time() - cpu_before
    wall = time.perf_counter() - started
    children_after = descendants_cpu()
    stats = processor.stats() if processor is not None else {}
    if processor is not None:
        processor.shutdown()
    for provider in tracer_providers:
        provider.shutdown()
    providers.shutdown()
    record = {
        "process_cpu": cpu,
        "thread_cpu": thread_cpu,
        "thread_cpu_by_agent": spent,  # no span processor, BatchSpanProcessor, ours (thread-cpu-* setups)
        "child_cpu": sum(after - children_before.get(pid, 0.0) for pid, after in children_after.items()),
        "child_cpu_reaped_total": reaped_children_cpu(),  # the evaluation process, reaped by shutdown
        "children": sorted(children_after),
        "wall": wall,
        "window_start_ns": window_start_ns,
        "invocations": args.invocations,
        "warm_up": WARM_UP,
        "stats": stats,
        "counts": collect(Path(os.environ[COUNTS_DIR])),
        "otel_eval": otel_eval.__file__,
    }
    print(json.dumps(record))


if __name__ == "__main__":
    main()
