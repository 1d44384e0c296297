"""One ``otel-eval worker`` pinned to one core, its input topic fed before it starts: the worker's own rate.

Two inputs, each the records the real writer puts on the topic:

- *requests path*: ``EvaluationRequest`` JSON as ``KafkaInvocationExporter`` sends it (key: the trace id);
- *Collector path*: one OTLP ``ExportTraceServiceRequest`` (protobuf, what the Collector's Kafka exporter writes with
  ``encoding: otlp_proto`` and ``partition_traces_by_id``: one message per trace, keyed by its hex trace id) per demo
  agent invocation (5 spans), encoded by the OpenTelemetry SDK's own OTLP encoder; the worker assembles, rebuilds and
  evaluates them.

Every record is produced (``acks=all``) before the worker process starts, so the producer is not in the measured
window. The worker is started with its CPU affinity set to one core (``os.sched_setaffinity`` in the child before
``exec``: every thread it starts inherits it). Its results are read from the results topic, and the invocations
counted there (distinct trace/span ids with a result), never the records sent. The rate is invocations over the
span of the results' ``evaluated_at`` (first to last result, the worker's clock); the worker's CPU seconds over the
same window (its ``/proc`` counters, sampled when the first and the last results are read) give invocations per
CPU-second, which the machine's other load does not change.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks._common import ROOT
from benchmarks._counting import proc_cpu
from otel_eval.model.messages import EvaluationRecord

sys.path.insert(0, str(ROOT))
from tests._kafka import create_topics, producer, random_topic
from tests.transport._requests import request

PARTITIONS = 4
LAUNCH = "from otel_eval.cli import main; main()"
"""The worker process's ``python -c`` program (a profiling run may wrap it)."""
Payloads = list[tuple[bytes, bytes]]


@dataclass(frozen=True)
class PinnedRate:
    """What one pinned worker did with a topic fed beforehand."""

    invocations: int
    """Distinct invocations with a result."""
    wall_rate: float
    """Invocations per second, first to last result (``evaluated_at``)."""
    cpu_rate: float
    """Invocations per CPU-second of the worker process in the window between the first and the last result read."""
    core: int


def requests_payloads(count: int) -> tuple[Payloads, int]:
    """``count`` requests as the processor's Kafka exporter writes them; and the invocations they hold."""
    batch = [request(1000 + i) for i in range(count)]
    return [(r.trace_id.encode(), r.to_wire()) for r in batch], count


def collector_payloads(count: int) -> tuple[Payloads, int]:
    """``count`` demo-agent invocations (one trace each) as a Collector's Kafka exporter writes them
    (``otlp_proto``, one message per trace keyed by the hex trace id); and the invocations they hold."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_eval.demo import SCENARIOS, TravelAgent

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = TravelAgent(provider)
    for index in range(count):
        agent.run(SCENARIOS[index % len(SCENARIOS)], conversation_id=f"pinned-{index}")
    by_trace: dict[int, list[object]] = {}
    for span in exporter.get_finished_spans():
        assert span.context is not None
        by_trace.setdefault(span.context.trace_id, []).append(span)
    provider.shutdown()
    payloads = [
        (f"{trace_id:032x}".encode(), encode_spans(spans).SerializeToString())  # type: ignore[arg-type]
        for trace_id, spans in by_trace.items()
    ]
    return payloads, len(by_trace)


async def pinned_worker_rate(
    bootstrap: str, payloads: Sequence[tuple[bytes, bytes]], invocations: int, source: str, tmp: Path
) -> PinnedRate:
    """Feeds ``payloads`` to a fresh topic of ``source`` (``requests`` or ``otlp_spans``), then starts one worker
    pinned to one core and reads its results until ``invocations`` invocations have one."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    input_topic, results_topic = random_topic(f"pinned-{source}"), random_topic("pinned-results")
    await create_topics(bootstrap, [input_topic, results_topic], partitions=PARTITIONS)
    async with producer(bootstrap, acks="all", linger_ms=5) as prod:
        for key, value in payloads:
            await prod.send(input_topic, value, key=key)
    core = max(os.sched_getaffinity(0))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOOGLE_", "GEMINI_"))}
    env |= {"PYTHONPATH": str(ROOT), "OTEL_EVAL_WORKER_SOURCES": source, "OTEL_EVAL_TRACE_IDLE_TIMEOUT": "0.5"}
    topic_option = "--requests-topic" if source == "requests" else "--spans-topic"
    args = ["worker", "--bootstrap-servers", bootstrap, topic_option, input_topic, "--results-topic", results_topic]
    args += ["--group-id", random_topic("pinned"), "--telemetry", "none", "--max-batch-size", "64"]
    args += ["--log-level", "WARNING", "--metrics-port", "0"]
    log = (tmp / f"pinned-{source}.log").open("wb")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        LAUNCH,
        *args,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=lambda: os.sched_setaffinity(0, {core}),
    )
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    consumer.assign([TopicPartition(results_topic, p) for p in range(PARTITIONS)])
    first_at: dict[tuple[str, str], float] = {}
    cpu_first: tuple[int, float] | None = None
    deadline = time.monotonic() + 600
    try:
        while len(first_at) < invocations:
            if time.monotonic() > deadline or process.returncode is not None:
                raise RuntimeError(f"pinned worker: {len(first_at)}/{invocations} invocations with results")
            for records in (await consumer.getmany(timeout_ms=100, max_records=5000)).values():
                for message in records:
                    result = EvaluationRecord.model_validate_json(message.value)
                    first_at.setdefault((result.trace_id, result.span_id), result.evaluated_at)
            if first_at and cpu_first is None:
                cpu_first = len(first_at), proc_cpu(f"/proc/{process.pid}/stat")
        cpu_last = proc_cpu(f"/proc/{process.pid}/stat")
        if os.sched_getaffinity(process.pid) != {core}:
            raise RuntimeError("the worker was not pinned")
    finally:
        await consumer.stop()
        process.terminate()
        await asyncio.wait_for(process.wait(), 30)
        log.close()
    assert cpu_first is not None
    times = sorted(first_at.values())
    wall = (len(times) - 1) / (times[-1] - times[0])
    cpu = (len(first_at) - cpu_first[0]) / max(cpu_last - cpu_first[1], 1e-9)
    return PinnedRate(len(first_at), wall, cpu, core)
