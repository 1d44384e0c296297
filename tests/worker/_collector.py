"""Shared by the Collector-path tests: a real agent's spans, and the shipped rotel configuration."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval.demo import SCENARIOS, TravelAgent

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
