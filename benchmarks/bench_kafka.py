"""Kafka transport and worker figures, each against a baseline measured in the same run (tansu broker, loopback).

1. End-to-end latency, invocation end -> emitted score, over Kafka (processor + ``KafkaInvocationExporter`` ->
   broker -> ``otel-eval worker``), p50 and p99, deterministic metrics only (no judge). Baseline: the embedded
   transport (in-process worker) on the same workload.
2. Worker throughput (invocations/s, efficiency metrics, results published to Kafka) with one and with two worker
   processes in one consumer group. Ratio two/one (the machine's cores are shared by broker, producer and workers).
3. Agent-side cost: wall time of the agent loop with the processor on the Kafka exporter vs on the embedded
   transport (which evaluates in the agent's process). Ratio kafka/embedded; lower is cheaper for the agent.

Run: ``python -m benchmarks.bench_kafka [--invocations N] [--throughput N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider

from benchmarks._common import ROOT, Row, machine, print_rows
from otel_eval import EvaluationSpanProcessor
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.emit import Emitters
from otel_eval.transport.kafka import KafkaInvocationExporter
from otel_eval.transport.messages import EvaluationRecord, EvaluationRequest
from otel_eval.worker.core import EvaluationCore
from otel_eval.worker.service import Worker
from otel_eval.worker.settings import WorkerSettings

sys.path.insert(0, str(ROOT))
from tests._kafka import TansuBroker, create_topics, producer, random_topic
from tests.transport._requests import request


class LatencySink:
    """Records, per invocation, the seconds from its end to its first emitted score."""

    def __init__(self) -> None:
        self.latencies: dict[str, float] = {}
        self._lock = threading.Lock()

    def __call__(self, records: Sequence[EvaluationRecord]) -> None:
        now = time.time_ns()
        with self._lock:
            for record in records:
                key = f"{record.trace_id}/{record.span_id}"
                if key not in self.latencies and record.invocation_end_time_ns:
                    self.latencies[key] = (now - record.invocation_end_time_ns) / 1e9


async def _until(condition: Callable[[], bool], timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark condition not reached")
        await asyncio.sleep(0.05)  # polling a counter that another thread fills


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


async def latency_over_kafka(bootstrap: str, invocations: int, pace: float) -> tuple[list[float], float]:
    """Latencies of ``invocations`` agent runs through Kafka and one in-process worker; agent loop seconds."""
    topic = random_topic("bench-requests")
    await create_topics(bootstrap, [topic], partitions=2)
    sink = LatencySink()
    core = EvaluationCore(emitters=Emitters.create(spans=False, events=False, metrics=False, sinks=[sink]))
    settings = WorkerSettings(
        kafka_bootstrap_servers=bootstrap,
        kafka_requests_topic=topic,
        kafka_results_topic="",
        kafka_group_id=random_topic("bench"),
        kafka_session_timeout_ms=6000,
        worker_telemetry="none",
    )
    worker = Worker(settings, core=core)
    task = asyncio.create_task(worker.serve())
    await worker.started.wait()
    warmup = KafkaInvocationExporter(bootstrap, topic=topic, linger_ms=0)
    warmup.export([request(0)])  # wait until the worker has its partitions
    await _until(lambda: bool(sink.latencies))
    await asyncio.to_thread(warmup.shutdown, 5000)
    sink.latencies.clear()
    processor = EvaluationSpanProcessor(exporter=KafkaInvocationExporter(bootstrap, topic=topic, linger_ms=0))
    agent_seconds = await asyncio.to_thread(_run_agent, processor, invocations, pace)
    await asyncio.to_thread(processor.force_flush, 30_000)
    await _until(lambda: len(sink.latencies) >= invocations)
    await asyncio.to_thread(processor.shutdown)
    worker.request_exit()
    await task
    return list(sink.latencies.values()), agent_seconds


def latency_embedded(invocations: int, pace: float) -> tuple[list[float], float]:
    """The same workload on the embedded transport."""
    sink = LatencySink()
    processor = EvaluationSpanProcessor(sinks=[sink])
    agent_seconds = _run_agent(processor, invocations, pace)
    processor.force_flush(30_000)
    processor.shutdown()
    return list(sink.latencies.values()), agent_seconds


async def throughput(bootstrap: str, workers: int, count: int, tmp: Path) -> float:
    """Invocations/s of ``workers`` worker processes on ``count`` pre-built requests (results read from Kafka)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    requests_topic, results_topic = random_topic("tp-requests"), random_topic("tp-results")
    await create_topics(bootstrap, [requests_topic, results_topic], partitions=4)
    group = random_topic("tp")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOOGLE_", "GEMINI_"))}
    env |= {"PYTHONPATH": str(ROOT), "OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000"}
    args = ["worker", "--bootstrap-servers", bootstrap, "--requests-topic", requests_topic]
    args += ["--results-topic", results_topic, "--group-id", group, "--telemetry", "none", "--max-batch-size", "64"]
    args += ["--log-level", "WARNING"]
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "from otel_eval.cli import main; main()",
            *args,
            env=env,
            stdout=(tmp / f"worker-{workers}-{i}.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        for i in range(workers)
    ]
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    consumer.assign([TopicPartition(results_topic, p) for p in range(4)])
    try:
        # Warm up: one request per partition key until every worker produced a result (all joined the group).
        warm = [request(i) for i in range(8 * workers)]
        async with producer(bootstrap, acks="all", linger_ms=5) as prod:
            for item in warm:
                await prod.send(requests_topic, item.model_dump_json().encode(), key=item.trace_id.encode())
        warm_ids = {r.trace_id for r in warm}
        seen: set[str] = set()
        while not warm_ids <= seen:
            for records in (await consumer.getmany(timeout_ms=200)).values():
                seen.update(EvaluationRecord.model_validate_json(r.value).trace_id for r in records)
        batch: list[EvaluationRequest] = [request(1000 + i) for i in range(count)]
        payloads = [(r.trace_id.encode(), r.model_dump_json().encode()) for r in batch]
        wanted = {r.trace_id for r in batch}
        started = time.perf_counter()
        async with producer(bootstrap, acks="all", linger_ms=5, compression_type="gzip") as prod:
            for key, value in payloads:
                await prod.send(requests_topic, value, key=key)
        done: set[str] = set()
        while not wanted <= done:
            for records in (await consumer.getmany(timeout_ms=200, max_records=5000)).values():
                done.update(EvaluationRecord.model_validate_json(r.value).trace_id for r in records)
        return count / (time.perf_counter() - started)
    finally:
        await consumer.stop()
        for process in processes:
            process.terminate()
        for process in processes:
            await asyncio.wait_for(process.wait(), 30)


async def run(invocations: int, pace: float, count: int) -> list[Row]:
    rows: list[Row] = []
    with TansuBroker() as broker, tempfile.TemporaryDirectory() as tmp:
        kafka, kafka_agent = await latency_over_kafka(broker.bootstrap, invocations, pace)
        embedded, embedded_agent = await asyncio.to_thread(latency_embedded, invocations, pace)
        for label, q in (("p50", 0.5), ("p99", 0.99)):
            ours, base = _percentile(kafka, q), _percentile(embedded, q)
            print(f"latency {label}: kafka {ours * 1000:.1f} ms, embedded {base * 1000:.1f} ms")
            name = f"kafka e2e latency {label} (vs embedded)"
            rows.append(Row(name, f"{ours * 1000:.1f} ms", f"{base * 1000:.1f} ms", ours / base, "info", True))
        print(f"agent loop: kafka exporter {kafka_agent:.3f} s, embedded {embedded_agent:.3f} s ({invocations} runs)")
        ratio = kafka_agent / embedded_agent
        name = "agent-side cost, kafka exporter vs embedded"
        rows.append(Row(name, f"{kafka_agent:.3f} s", f"{embedded_agent:.3f} s", ratio, "<= 1.05", ratio <= 1.05))
        one = await throughput(broker.bootstrap, 1, count, Path(tmp))
        two = await throughput(broker.bootstrap, 2, count, Path(tmp))
        print(f"worker throughput: 1 worker {one:.0f} inv/s, 2 workers {two:.0f} inv/s ({count} invocations)")
        name = "worker throughput, 2 workers vs 1"
        rows.append(Row(name, f"{two:.0f} inv/s", f"{one:.0f} inv/s", two / one, "info", True))
    return rows


def main(argv: list[str]) -> list[Row]:
    """Runs the benchmark and prints its table; returns the rows for ``python -m benchmarks``."""
    parser = argparse.ArgumentParser(prog="bench_kafka")
    parser.add_argument("--invocations", type=int, default=200, help="agent runs for latency and agent cost")
    parser.add_argument("--pace", type=float, default=0.005, help="seconds between agent runs")
    parser.add_argument("--throughput", type=int, default=2000, help="requests for the throughput runs")
    options = parser.parse_args(argv)
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        os.environ.pop(name, None)  # deterministic metrics only
    rows = asyncio.run(run(options.invocations, options.pace, options.throughput))
    print_rows(f"bench_kafka — {machine()}", rows)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
