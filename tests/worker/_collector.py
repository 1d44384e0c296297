"""Shared by the Collector-path tests: a real agent's spans, and rotel (a real Collector) with the shipped configuration."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.worker.service import Worker
from tests._kafka import free_port, random_topic
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings

ROTEL_ENV = Path(__file__).resolve().parents[2] / "collector_config" / "rotel" / "rotel-agent.env"


def agent_spans(runs: int = 2) -> list[ReadableSpan]:
    """The ended spans of ``runs`` demo-agent invocations (one trace each), cycling through the scenarios."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = TravelAgent(provider)
    for index in range(runs):
        agent.run(SCENARIOS[index % len(SCENARIOS)], conversation_id=f"c{index}")
    return list(exporter.get_finished_spans())


def rotel_env_file() -> dict[str, str]:
    """The shipped rotel configuration (``KEY=value`` lines)."""
    values = {}
    for line in ROTEL_ENV.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


@contextlib.contextmanager
def running_rotel(bootstrap: str, topic: str, tmp_path: Path, logs_topic: str | None = None) -> Iterator[str]:
    """rotel with the shipped ``collector_config/rotel/rotel-agent.env``, only ports, broker and topics changed."""
    import rotel

    binary = Path(rotel.__file__).parent / "rotel-agent"
    http_port, grpc_port = free_port(), free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ROTEL_")},
        **rotel_env_file(),
        "ROTEL_OTLP_GRPC_ENDPOINT": f"127.0.0.1:{grpc_port}",
        "ROTEL_OTLP_HTTP_ENDPOINT": f"127.0.0.1:{http_port}",
        "ROTEL_KAFKA_EXPORTER_BROKERS": bootstrap,
        "ROTEL_KAFKA_EXPORTER_TRACES_TOPIC": topic,
        "ROTEL_KAFKA_EXPORTER_LOGS_TOPIC": logs_topic or random_topic("otlp_logs"),
        "ROTEL_BATCH_TIMEOUT": "100ms",
        "ROTEL_PID_FILE": str(tmp_path / "rotel.pid"),
        "ROTEL_LOG_FILE": str(tmp_path / "rotel.log"),
    }
    with (tmp_path / "rotel.out").open("wb") as out:  # the child writes to its own copy of the descriptor
        process = subprocess.Popen([str(binary), "start"], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield f"http://127.0.0.1:{http_port}/v1/traces"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def collector_worker(
    bootstrap: str, core: EvaluationCore, telemetry: MemoryTelemetry, spans_topic: str, logs_topic: str | None = None
) -> Worker:
    """A worker reading the Collector's topics (``otlp_spans``, and ``otlp_logs`` when given) with a 1 s idle timeout,
    scoring with ``core`` into ``telemetry``, publishing no results topic."""
    topics = {"kafka_logs_topic": logs_topic} if logs_topic else {}
    return Worker(
        worker_settings(
            bootstrap,
            worker_sources="otlp_spans,otlp_logs" if logs_topic else "otlp_spans",
            kafka_spans_topic=spans_topic,
            kafka_results_topic="",
            kafka_group_id=random_topic("group"),
            trace_idle_timeout=1.0,
            **topics,
        ),
        core=core,
        telemetry=telemetry.providers,
    )


async def run_until_scored(worker: Worker, scored: Callable[[], bool]) -> None:
    """Runs ``worker`` until ``scored()`` (at most 60 s), then one idle timeout more, so that a trace evaluated twice
    would show."""
    async with running_worker(worker):
        await wait_until_async(scored, timeout=60, what="collector-path scores")
        await asyncio.sleep(1.5)
