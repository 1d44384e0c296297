"""Kafka transport and worker figures, each against a baseline measured in the same run (tansu broker, loopback).

1. End-to-end latency, invocation end -> score, over Kafka: the travel-assistant agent with the processor and
   ``KafkaInvocationExporter`` -> broker -> one ``otel-eval worker`` process; p50 and p99 of ``evaluated_at`` minus the
   invocation's end time, read from the results topic. Deterministic metrics only (no judge). Baseline: the embedded
   transport (in-process worker) on the same paced workload, measured the same way.
2. Worker throughput (invocations/s, efficiency metrics, every result published to Kafka with ``acks=all``) with one
   and with two worker processes in one consumer group. Ratio two/one. On a 2-core machine the broker, the
   producer and the workers share the cores, so the ratio shows contention more than scaling.
3. Agent-side cost: CPU seconds of the agent's process (every thread) to run 1000 agent invocations and hand every
   request off, with the processor on the Kafka exporter (serialise and send; the broker is another process) vs on
   the embedded transport (which evaluates in the agent's process); median of 3. Target: ratio <= 1.0.
4. One worker's own rate, pinned to one core (``os.sched_setaffinity``), its input topic fed before it starts (the
   producer is not in the window), invocations counted from the results topic (distinct invocations with a result):
   the requests path (``EvaluationRequest`` JSON as the processor's Kafka exporter writes it) and the Collector path
   (one OTLP protobuf ``ExportTraceServiceRequest`` per 5-span demo-agent trace, encoded by the OpenTelemetry SDK's
   OTLP encoder as a Collector's Kafka exporter writes it with ``partition_traces_by_id``; the worker assembles,
   rebuilds and evaluates). Rate = invocations over the span of the results' ``evaluated_at``; beside it,
   invocations per CPU-second of the worker process over the same window (load-independent). Targets (issue 36):
   requests >= 5,000/s, Collector path >= 2,000/s. See :mod:`benchmarks._kafka_worker_rate`.

Run: ``python -m benchmarks.bench_kafka [--invocations N] [--throughput N] [--pinned N] [--pinned-only]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider

from benchmarks._common import ROOT, Row, machine, print_rows
from benchmarks._kafka_worker_rate import collector_payloads, pinned_worker_rate, requests_payloads
from otel_eval import EvaluationSpanProcessor
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.environment_variables import DEFAULT_KAFKA_COMPRESSION
from otel_eval.model.messages import EvaluationRecord
from otel_eval.transport.kafka import KafkaInvocationExporter

sys.path.insert(0, str(ROOT))
from tests._kafka import TansuBroker, create_topics, producer, random_topic
from tests.transport._requests import request

PARTITIONS = 4


class LatencySink:
    """Per invocation, seconds from its end to its first score (``evaluated_at``)."""

    def __init__(self) -> None:
        self.latencies: dict[str, float] = {}
        self._lock = threading.Lock()

    def __call__(self, records: Sequence[EvaluationRecord]) -> None:
        with self._lock:
            for record in records:
                key = f"{record.trace_id}/{record.span_id}"
                if key not in self.latencies and record.invocation_end_time_ns:
                    self.latencies[key] = record.evaluated_at - record.invocation_end_time_ns / 1e9


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _run_agent(processor: EvaluationSpanProcessor, invocations: int, pace: float) -> float:
    provider = TracerProvider()
    provider.add_span_processor(processor)
    agent = TravelAgent(provider)
    started = time.perf_counter()
    for index in range(invocations):
        agent.run(SCENARIOS[index % len(SCENARIOS)], conversation_id=f"bench-{index}")
        if pace:
            time.sleep(pace)
    return time.perf_counter() - started


class WorkerGroup:
    """``count`` ``otel-eval worker`` processes in one group, and a reader of their results topic."""

    def __init__(self, bootstrap: str, count: int, tmp: Path) -> None:
        self.bootstrap = bootstrap
        self.count = count
        self.tmp = tmp
        self.requests_topic = random_topic("bench-requests")
        self.results_topic = random_topic("bench-results")
        self.processes: list[Any] = []
        self.sink = LatencySink()
        self._consumer: Any = None

    async def __aenter__(self) -> WorkerGroup:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        await create_topics(self.bootstrap, [self.requests_topic, self.results_topic], partitions=PARTITIONS)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOOGLE_", "GEMINI_"))}
        env |= {"PYTHONPATH": str(ROOT), "OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000"}
        args = ["worker", "--bootstrap-servers", self.bootstrap, "--requests-topic", self.requests_topic]
        args += ["--results-topic", self.results_topic, "--group-id", random_topic("bench"), "--telemetry", "none"]
        args += ["--max-batch-size", "64", "--log-level", "WARNING", "--metrics-port", "0"]  # several on one host
        for index in range(self.count):
            self.processes.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-c",
                    "from otel_eval.cli import main; main()",
                    *args,
                    env=env,
                    stdout=(self.tmp / f"worker-{self.count}-{index}.log").open("wb"),
                    stderr=subprocess.STDOUT,
                )
            )
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        await self._consumer.start()
        self._consumer.assign([TopicPartition(self.results_topic, p) for p in range(PARTITIONS)])
        # Warm up: requests on every partition until every worker has joined and answered.
        warm = [request(i) for i in range(8 * PARTITIONS)]
        await self.send([(r.trace_id.encode(), r.model_dump_json().encode()) for r in warm])
        await self.wait_for({r.trace_id for r in warm})
        self.sink.latencies.clear()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._consumer.stop()
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            await asyncio.wait_for(process.wait(), 30)

    async def send(self, payloads: Sequence[tuple[bytes, bytes]]) -> None:
        async with producer(
            self.bootstrap, acks="all", linger_ms=5, compression_type=DEFAULT_KAFKA_COMPRESSION
        ) as prod:
            for key, value in payloads:
                await prod.send(self.requests_topic, value, key=key)

    async def wait_for(self, trace_ids: set[str], *, invocations: int = 0, timeout: float = 300.0) -> None:
        """Reads results until every trace in ``trace_ids`` has one and ``invocations`` invocations have scores."""
        seen: set[str] = set()
        deadline = time.monotonic() + timeout
        while not trace_ids <= seen or len(self.sink.latencies) < invocations:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(trace_ids - seen)} invocations without results")
            for records in (await self._consumer.getmany(timeout_ms=200, max_records=5000)).values():
                parsed = [EvaluationRecord.model_validate_json(r.value) for r in records]
                self.sink(parsed)
                seen.update(r.trace_id for r in parsed)


async def latency_over_kafka(bootstrap: str, invocations: int, pace: float, tmp: Path) -> list[float]:
    """Latencies of ``invocations`` paced agent runs through Kafka and one worker process."""
    async with WorkerGroup(bootstrap, 1, tmp) as group:
        exporter = KafkaInvocationExporter(bootstrap, topic=group.requests_topic, linger_ms=0)
        processor = EvaluationSpanProcessor(exporter=exporter)
        await asyncio.to_thread(_run_agent, processor, invocations, pace)
        await asyncio.to_thread(processor.force_flush, 30_000)
        await asyncio.to_thread(processor.shutdown)
        await group.wait_for(set(), invocations=invocations)
        return list(group.sink.latencies.values())


def latency_embedded(invocations: int, pace: float) -> list[float]:
    """The same paced workload on the embedded transport."""
    sink = LatencySink()
    processor = EvaluationSpanProcessor(sinks=[sink])
    _run_agent(processor, invocations, pace)
    processor.force_flush(30_000)
    processor.shutdown()
    return list(sink.latencies.values())


def agent_cost(bootstrap: str, invocations: int, repeat: int = 3) -> tuple[float, float]:
    """Median CPU seconds of the agent's process (all its threads) to run ``invocations`` agent runs and hand every
    request off: delivered to Kafka by the exporter, or evaluated by the embedded transport."""

    def measure(processor: EvaluationSpanProcessor) -> float:
        started = time.process_time()
        _run_agent(processor, invocations, 0.0)
        processor.force_flush(60_000)
        seconds = time.process_time() - started
        processor.shutdown()
        return seconds

    kafka = [
        measure(EvaluationSpanProcessor(exporter=KafkaInvocationExporter(bootstrap, topic=random_topic("cost"))))
        for _ in range(repeat)
    ]
    embedded = [measure(EvaluationSpanProcessor()) for _ in range(repeat)]
    return statistics.median(kafka), statistics.median(embedded)


async def throughput(bootstrap: str, workers: int, count: int, tmp: Path) -> float:
    """Invocations/s of ``workers`` worker processes on ``count`` requests, from the first send to the last result."""
    async with WorkerGroup(bootstrap, workers, tmp) as group:
        batch = [request(1000 + i) for i in range(count)]
        started = time.perf_counter()
        await group.send([(r.trace_id.encode(), r.model_dump_json().encode()) for r in batch])
        await group.wait_for({r.trace_id for r in batch})
        return count / (time.perf_counter() - started)


async def pinned_rows(bootstrap: str, count: int, tmp: Path) -> list[Row]:
    """One worker pinned to one core on a topic fed beforehand: the requests path, then the Collector path."""
    rows: list[Row] = []
    for source, label, target, make in (
        ("requests", "requests path", 5000, requests_payloads),
        ("otlp_spans", "Collector path", 2000, collector_payloads),
    ):
        payloads, invocations = await asyncio.to_thread(make, count)
        rate = await pinned_worker_rate(bootstrap, payloads, invocations, source, tmp)
        if rate.invocations != invocations:
            raise RuntimeError(f"{label}: {rate.invocations} of {invocations} invocations evaluated")
        print(
            f"pinned worker (core {rate.core}), {label}: {rate.wall_rate:.0f} inv/s, "
            f"{rate.cpu_rate:.0f} inv per CPU-s ({rate.invocations} invocations)"
        )
        # ratio: the rate over its target (>= 1.0 is met); beside it, the invocations per CPU-second
        name = f"1 worker on 1 core, {label}: inv/s vs {target}/s (beside: inv per CPU-s)"
        ratio = rate.wall_rate / target
        rows.append(Row(name, f"{rate.wall_rate:.0f}/s", f"{rate.cpu_rate:.0f}/CPU-s", ratio, ">= 1.0", ratio >= 1.0))
    return rows


async def run(invocations: int, pace: float, count: int, pinned: int, pinned_only: bool) -> list[Row]:
    rows: list[Row] = []
    with TansuBroker() as broker, tempfile.TemporaryDirectory() as tmp:
        if pinned_only:
            return await pinned_rows(broker.bootstrap, pinned, Path(tmp))
        kafka = await latency_over_kafka(broker.bootstrap, invocations, pace, Path(tmp))
        embedded = await asyncio.to_thread(latency_embedded, invocations, pace)
        for label, q in (("p50", 0.5), ("p99", 0.99)):
            ours, base = _percentile(kafka, q), _percentile(embedded, q)
            print(f"latency {label}: kafka {ours * 1000:.1f} ms, embedded {base * 1000:.1f} ms")
            name = f"kafka e2e latency {label} (vs embedded)"
            rows.append(Row(name, f"{ours * 1000:.1f} ms", f"{base * 1000:.1f} ms", ours / base, "info", True))
        runs = max(invocations, 1000)
        kafka_cpu, embedded_cpu = await asyncio.to_thread(agent_cost, broker.bootstrap, runs)
        print(f"agent process CPU for {runs} runs: kafka exporter {kafka_cpu:.2f} s, embedded {embedded_cpu:.2f} s")
        ratio = kafka_cpu / embedded_cpu
        name = f"agent-side CPU, kafka exporter vs embedded ({runs} runs)"
        rows.append(Row(name, f"{kafka_cpu:.2f} s", f"{embedded_cpu:.2f} s", ratio, "<= 1.0", ratio <= 1.0))
        one = await throughput(broker.bootstrap, 1, count, Path(tmp))
        two = await throughput(broker.bootstrap, 2, count, Path(tmp))
        print(f"worker throughput: 1 worker {one:.0f} inv/s, 2 workers {two:.0f} inv/s ({count} invocations)")
        name = "worker throughput, 2 workers vs 1"
        rows.append(Row(name, f"{two:.0f} inv/s", f"{one:.0f} inv/s", two / one, "info", True))
        rows += await pinned_rows(broker.bootstrap, pinned, Path(tmp))
    return rows


def main(argv: list[str]) -> list[Row]:
    """Runs the benchmark and prints its table; returns the rows for ``python -m benchmarks``."""
    parser = argparse.ArgumentParser(prog="bench_kafka")
    parser.add_argument("--invocations", type=int, default=200, help="agent runs for latency and agent cost")
    parser.add_argument("--pace", type=float, default=0.01, help="seconds between paced agent runs (latency)")
    parser.add_argument("--throughput", type=int, default=2000, help="requests for the throughput runs")
    parser.add_argument("--pinned", type=int, default=5000, help="invocations for the pinned one-worker rows")
    parser.add_argument("--pinned-only", action="store_true", help="only the pinned one-worker rows")
    options = parser.parse_args(argv)
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        os.environ.pop(name, None)  # deterministic metrics only
    rows = asyncio.run(run(options.invocations, options.pace, options.throughput, options.pinned, options.pinned_only))
    print_rows(f"bench_kafka — {machine()}", rows)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
