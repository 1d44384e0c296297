"""One fresh-process run of ``bench_processor``'s workload on our side; prints one JSON line of what it measured.

The workload: the travel agent's two-tool scenario, a 5-span GenAI-semconv invocation (``invoke_agent``, ``chat``,
two ``execute_tool``, ``chat``) on the global SDK providers, which export to counting exporters
(:mod:`benchmarks._counting`). Only the processor's public API is used.

``--setup bsp``: the agent's spans exported by a ``BatchSpanProcessor`` (the baseline); ``thread`` / ``process``:
that plus ``EvaluationSpanProcessor`` with this isolation (with ``process`` the evaluation process exports its
results to the same counting exporters, which it loads through the SDK's entry points).

``--emit events,metrics``: only those signals (the result events must be among them: they are what is counted).

``--setup thread-cpu-thread`` / ``thread-cpu-process``: the agent-thread comparison in one process: three agents on
three tracer providers (no span processor; a ``BatchSpanProcessor``; our processor alone, with that isolation), their
invocations interleaved one by one (in a rotating order) so that drift in the machine's load hits all three, each
invocation's ``time.thread_time`` added to its agent's total. ``hooks-thread`` / ``hooks-process``: the same three
with each processor (a no-op one for the first) wrapped in :class:`Timed`, which adds up the thread CPU time spent
inside ``on_start`` and ``on_end`` (a figure of the hooks alone, without what the processor's threads cost the
agent's thread indirectly, but free of the noise of the whole thread's ~50 us a span).

Run by ``bench_processor``: ``python -m benchmarks._bench_ours --setup thread --metrics 1 --invocations 2000
[--rate 250]``, with ``$BENCH_COUNTS_DIR`` set and the counting exporters' entry points on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
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
SETUPS = ("bsp", "thread", "process", "thread-cpu-thread", "thread-cpu-process", "hooks-thread", "hooks-process")
ORDERS = ((0, 1, 2), (1, 2, 0), (2, 0, 1), (0, 2, 1), (2, 1, 0), (1, 0, 2))
"""The interleaved agents' order, rotated every cycle so that none always runs first (after the pacing sleep)."""


class Timed(SpanProcessor):
    """Forwards to ``inner``, adding the calling thread's CPU time spent in its ``on_start`` and ``on_end``."""

    def __init__(self, inner: SpanProcessor) -> None:
        self.inner, self.spent, self.spans = inner, 0.0, 0

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        started = time.thread_time()
        self.inner.on_start(span, parent_context)
        self.spent += time.thread_time() - started

    def on_end(self, span: ReadableSpan) -> None:
        started = time.thread_time()
        self.inner.on_end(span)
        self.spent += time.thread_time() - started
        self.spans += 1

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self.inner.shutdown()


def processor_for(isolation: str, metrics: int, emit: str | None = None) -> Any:
    """Our processor with ``isolation`` and one metric (``ProcessorSettings.metrics``, in either isolation) or the 4
    efficiency metrics (the default), queues no run fills (as the peer's): every invocation is evaluated unless the
    processor sheds it itself. ``emit``: the signals emitted (``ProcessorSettings.emit``; None: the default, all
    four)."""
    from otel_eval import EvaluationSpanProcessor, ProcessorSettings

    settings = ProcessorSettings(
        isolation=isolation, max_pending_spans=1_000_000, metrics=(ONE_METRIC,) if metrics == 1 else ()
    )
    if emit is not None:
        settings = replace(settings, emit=emit)
    return EvaluationSpanProcessor(settings=settings)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--setup", choices=SETUPS, required=True)
    parser.add_argument("--metrics", type=int, choices=(1, 4), default=1)
    parser.add_argument("--invocations", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=None, help="invocations per second (default: a burst)")
    parser.add_argument("--emit", default=None, help="ProcessorSettings.emit, e.g. events,metrics (default: all)")
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
    timed: list[Timed] = []
    if args.setup.startswith(("thread-cpu-", "hooks-")):
        # Three agents on three providers: no span processor (hooks-: a no-op one), a BatchSpanProcessor, ours alone.
        tracer_providers = [TracerProvider(), TracerProvider(), TracerProvider()]
        processor = processor_for(isolation, args.metrics, args.emit)
        processors = [SpanProcessor(), BatchSpanProcessor(CountingSpanExporter()), processor]
        if args.setup.startswith("hooks-"):
            timed = [Timed(inner) for inner in processors]
            processors = list(timed)
        for provider, span_processor in zip(tracer_providers[1:], processors[1:], strict=True):
            provider.add_span_processor(span_processor)
        if timed:
            tracer_providers[0].add_span_processor(timed[0])
        agents = [TravelAgent(provider) for provider in tracer_providers]
        spent, counted = [0.0, 0.0, 0.0], [0, 0, 0]

        def invoke(index: int) -> None:
            which = ORDERS[index // 3 % len(ORDERS)][index % 3]
            started = time.thread_time()
            agents[which].run(scenario)
            spent[which] += time.thread_time() - started
            counted[which] += 1

    else:
        if args.setup != "bsp":
            processor = processor_for(args.setup, args.metrics, args.emit)
            providers.tracer_provider.add_span_processor(processor)
        agent = TravelAgent(providers.tracer_provider)
        tracer_providers = [providers.tracer_provider]
        spent, counted = [], []

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
    spent[:], counted[:] = [0.0] * len(spent), [0] * len(counted)
    for each in timed:
        each.spent, each.spans = 0.0, 0
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
        "invocations_by_agent": counted,
        "thread_cpu_by_agent": spent,  # no span processor, BatchSpanProcessor, ours (thread-cpu-* setups)
        "hook_cpu_by_agent": [each.spent for each in timed],  # no-op, BatchSpanProcessor, ours (hooks-* setups)
        "hook_spans_by_agent": [each.spans for each in timed],
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
