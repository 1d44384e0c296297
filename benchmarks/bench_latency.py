"""Freshness: from an invocation's end to its first score, embedded and over Kafka, with the CPU it costs.

No judge (deterministic metrics only); the GenAI-semconv travel agent ends an invocation every 20 ms.

1. Embedded (the default): a ``LogRecordProcessor`` on the processor's logger provider timestamps each
   ``gen_ai.evaluation.result`` event as it is emitted; latency = first event of an invocation's trace minus its
   root span's end time. Targets: p50 <= 5 ms, p99 <= 25 ms. Beside them: process CPU per invocation with the
   processor vs the same paced agent without it.
1b. Embedded with ``isolation="process"``: the scores are made in the evaluation process and exported over OTLP/HTTP
   (the SDK's exporter, as ``OTEL_LOGS_EXPORTER=otlp`` configures it) to a loopback receiver; latency = the event's
   time (``evaluated_at``, stamped when the score is emitted) minus the root span's end. Same targets. Beside them:
   CPU per invocation of the agent's and the evaluation process.
2. Kafka: ``KafkaInvocationExporter`` -> local tansu broker -> one ``otel-eval worker`` process (default settings);
   latency = the result's ``evaluated_at`` (stamped when the score is emitted) minus the invocation's end, read
   from the results topic. Targets: p50 <= 30 ms, p99 <= 100 ms. Beside them: CPU per invocation of the agent's
   and the worker's processes (the broker's is not counted).

Rows report each figure against its target (ratio = ours / target, met when <= 1.0).

Run: ``python -m benchmarks.bench_latency [--invocations N] [--pace SECONDS]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

from benchmarks._common import ROOT, Row, machine, print_rows
from benchmarks._counting import descendants_cpu, proc_cpu
from benchmarks.bench_kafka import WorkerGroup, _percentile
from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.transport.kafka import KafkaInvocationExporter

sys.path.insert(0, str(ROOT))
from tests._kafka import TansuBroker

TARGETS_MS = {"embedded": (5.0, 25.0), "embedded, process": (5.0, 25.0), "kafka": (30.0, 100.0)}
WARM_UP = 20


class RootEnds(SpanProcessor):
    """End time (ns) of each trace's local root span, for the agent's spans."""

    def __init__(self) -> None:
        self.ended: dict[int, int] = {}

    def on_end(self, span: ReadableSpan) -> None:
        scope = span.instrumentation_scope
        own = scope is not None and scope.name.startswith(semconv.INSTRUMENTATION_SCOPE)
        if span.parent is None and span.context is not None and span.end_time and not own:
            self.ended[span.context.trace_id] = span.end_time


class FirstScore(LogRecordProcessor):
    """Wall time (ns) of each trace's first ``gen_ai.evaluation.result`` event, stamped as it is emitted."""

    def __init__(self) -> None:
        self.first: dict[int, int] = {}
        self._lock = threading.Lock()

    def on_emit(self, log_data: object) -> None:
        now = time.time_ns()
        record = getattr(log_data, "log_record", log_data)
        if getattr(record, "event_name", None) != semconv.EVALUATION_RESULT_EVENT:
            return
        trace_id = getattr(record, "trace_id", None)
        if trace_id:
            with self._lock:
                self.first.setdefault(trace_id, now)

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _latencies(roots: RootEnds, first: dict[int, int]) -> list[float]:
    """Seconds from each root's end to its trace's first score; every invocation must have one."""
    latencies = [(first[t] - end) / 1e9 for t, end in roots.ended.items() if t in first]
    missing = len(roots.ended) - len(latencies)
    if missing:
        raise RuntimeError(f"{missing} invocations without a score event")
    return latencies


def _paced(agent: TravelAgent, invocations: int, pace: float) -> None:
    for index in range(invocations):
        started = time.perf_counter()
        agent.run(SCENARIOS[index % len(SCENARIOS)], conversation_id=f"latency-{index}")
        time.sleep(max(0.0, pace - (time.perf_counter() - started)))


def _cpu_of(run: Callable[[], None]) -> float:
    started = time.process_time()
    run()
    return time.process_time() - started


def embedded(invocations: int, pace: float) -> tuple[list[float], float, float]:
    """Latencies (s) of ``invocations`` paced runs, and process CPU per invocation with and without the processor."""
    roots, scores = RootEnds(), FirstScore()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(scores)  # type: ignore[arg-type]
    provider = TracerProvider()
    processor = EvaluationSpanProcessor(tracer_provider=provider, logger_provider=logger_provider)
    provider.add_span_processor(processor)
    provider.add_span_processor(roots)
    agent = TravelAgent(provider)
    _paced(agent, WARM_UP, pace)
    processor.force_flush(30_000)
    roots.ended.clear()
    scores.first.clear()
    with_cpu = _cpu_of(lambda: _paced(agent, invocations, pace))
    processor.force_flush(30_000)
    processor.shutdown()
    latencies = _latencies(roots, scores.first)
    bare = TravelAgent(TracerProvider())
    _paced(bare, WARM_UP, pace)
    without_cpu = _cpu_of(lambda: _paced(bare, invocations, pace))
    return latencies, with_cpu / invocations, without_cpu / invocations


def in_child_process(invocations: int, pace: float) -> tuple[list[float], float, float]:
    """Latencies (s) with ``isolation="process"``, and CPU per invocation of the agent's and the child's process."""
    from tests.worker._harness import OtlpSink

    sink = OtlpSink().start()
    exporting = {
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint,
    }
    saved = {name: os.environ.get(name) for name in exporting}
    os.environ.update(exporting)  # read by the evaluation process, which inherits this environment
    try:
        roots = RootEnds()
        provider = TracerProvider()
        processor = EvaluationSpanProcessor(settings=ProcessorSettings(isolation="process"))
        provider.add_span_processor(processor)
        provider.add_span_processor(roots)
        agent = TravelAgent(provider)
        _paced(agent, WARM_UP, pace)
        processor.force_flush(30_000)
        roots.ended.clear()
        child_before = descendants_cpu()  # the evaluation process, found without the processor's internals
        agent_cpu = _cpu_of(lambda: _paced(agent, invocations, pace))
        processor.force_flush(30_000)
        child_cpu = sum(cpu - child_before.get(pid, 0.0) for pid, cpu in descendants_cpu().items())
        processor.shutdown()
        first: dict[int, int] = {}
        for request in sink.log_requests:
            for resource_logs in request.resource_logs:
                for scope_logs in resource_logs.scope_logs:
                    for record in scope_logs.log_records:
                        if record.event_name == semconv.EVALUATION_RESULT_EVENT:
                            trace_id = int.from_bytes(record.trace_id, "big")
                            first[trace_id] = min(first.get(trace_id, record.time_unix_nano), record.time_unix_nano)
    finally:
        sink.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return _latencies(roots, first), agent_cpu / invocations, child_cpu / invocations


async def over_kafka(bootstrap: str, invocations: int, pace: float, tmp: Path) -> tuple[list[float], float, float]:
    """Latencies (s) through Kafka and one worker; CPU per invocation of the agent's and the worker's processes."""
    async with WorkerGroup(bootstrap, 1, tmp) as group:
        exporter = KafkaInvocationExporter(bootstrap, topic=group.requests_topic)  # default (latency) settings
        provider = TracerProvider()
        processor = EvaluationSpanProcessor(exporter=exporter)
        provider.add_span_processor(processor)
        agent = TravelAgent(provider)
        await asyncio.to_thread(_paced, agent, WARM_UP, pace)
        await asyncio.to_thread(processor.force_flush, 30_000)
        await group.wait_for(set(), invocations=WARM_UP)
        group.sink.latencies.clear()
        worker_pid = group.processes[0].pid
        worker_before = proc_cpu(f"/proc/{worker_pid}/stat")
        agent_cpu = await asyncio.to_thread(_cpu_of, lambda: _paced(agent, invocations, pace))
        await asyncio.to_thread(processor.force_flush, 30_000)
        await group.wait_for(set(), invocations=invocations)
        worker_cpu = proc_cpu(f"/proc/{worker_pid}/stat") - worker_before
        await asyncio.to_thread(processor.shutdown)
        return list(group.sink.latencies.values()), agent_cpu / invocations, worker_cpu / invocations


def _rows(path: str, latencies: list[float], cpu: str, cpu_baseline: str, cpu_ratio: float) -> list[Row]:
    rows = []
    for (label, q), target_ms in zip((("p50", 0.5), ("p99", 0.99)), TARGETS_MS[path], strict=True):
        ms = _percentile(latencies, q) * 1000
        print(f"{path} latency {label}: {ms:.1f} ms (target <= {target_ms:g} ms, {len(latencies)} invocations)")
        name = f"{path}: root end -> first score {label}"
        rows.append(Row(name, f"{ms:.1f} ms", f"<= {target_ms:g} ms", ms / target_ms, "<= 1.0", ms <= target_ms))
    rows.append(Row(f"{path}: CPU per invocation", cpu, cpu_baseline, cpu_ratio, "info", True))
    return rows


async def run(invocations: int, pace: float) -> list[Row]:
    latencies, with_cpu, without_cpu = await asyncio.to_thread(embedded, invocations, pace)
    print(
        f"embedded CPU per invocation: {with_cpu * 1e3:.2f} ms with the processor, {without_cpu * 1e3:.2f} ms agent only"
    )
    rows = _rows(
        "embedded", latencies, f"{with_cpu * 1e3:.2f} ms", f"{without_cpu * 1e3:.2f} ms", with_cpu / without_cpu
    )
    latencies, agent_cpu, child_cpu = await asyncio.to_thread(in_child_process, invocations, pace)
    total = agent_cpu + child_cpu
    print(f"process isolation CPU per invocation: agent {agent_cpu * 1e3:.2f} ms + child {child_cpu * 1e3:.2f} ms")
    rows += _rows(
        "embedded, process", latencies, f"{total * 1e3:.2f} ms", f"{without_cpu * 1e3:.2f} ms", total / without_cpu
    )
    with TansuBroker() as broker, tempfile.TemporaryDirectory() as tmp:
        latencies, agent_cpu, worker_cpu = await over_kafka(broker.bootstrap, invocations, pace, Path(tmp))
    total = agent_cpu + worker_cpu
    print(f"kafka CPU per invocation: agent {agent_cpu * 1e3:.2f} ms + worker {worker_cpu * 1e3:.2f} ms")
    rows += _rows("kafka", latencies, f"{total * 1e3:.2f} ms", f"{without_cpu * 1e3:.2f} ms", total / without_cpu)
    return rows


def main(argv: list[str]) -> list[Row]:
    """Runs the benchmark and prints its table; returns the rows for ``python -m benchmarks``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_latency", description=__doc__)
    parser.add_argument("--invocations", type=int, default=500, help="paced agent runs per path (default 500)")
    parser.add_argument("--pace", type=float, default=0.02, help="seconds between invocation ends (default 0.02)")
    options = parser.parse_args(argv)
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        os.environ.pop(name, None)  # no judge: deterministic metrics only
    rows = asyncio.run(run(options.invocations, options.pace))
    print_rows(f"bench_latency — {machine()}", rows)
    return rows


if __name__ == "__main__":
    sys.exit(0 if all(row.met for row in main(sys.argv[1:])) else 1)
