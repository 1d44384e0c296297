"""Spans of the recorded trace files and of the demo travel agent, for tests that run a rule over all of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval.demo.workload import SCENARIOS, TravelAgent
from otel_eval.traces import Span, read_trace_file, spans_from_readable

DATA = Path(__file__).resolve().parents[1] / "data"
SHARED = Path("/work/shared/data/traces")
RECORDED_TRACE_FILES = sorted(
    [
        *(DATA / "frameworks").glob("*/*.otlp.json.gz"),
        *(DATA / "traces" / "strands-evals").glob("*.json"),
        *(p for p in (DATA / "traces" / "agentevals").glob("*.json") if "eval" not in p.name),
        *(DATA / "hostile").glob("*.json"),
    ]
)
"""The recorded, framework and hostile trace files of this repository."""
ALL_TRACE_FILES = sorted(
    [
        *RECORDED_TRACE_FILES,
        *(SHARED / "strands-evals").glob("*.json"),
        *(p for p in (SHARED / "agentevals").glob("*.json") if "eval" not in p.name),
    ]
)
"""Those and the shared data's recorded traces (where the shared folder is there)."""


def file_spans(path: Path) -> list[Span]:
    """The spans of a trace file (``.gz`` ones too, as the reader decompresses them)."""
    return read_trace_file(path).spans


def demo_spans() -> Iterator[tuple[str, list[Span]]]:
    """``(scenario key, spans)`` of each demo travel-agent scenario, run on the real SDK."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = TravelAgent(provider)
    for scenario in SCENARIOS:
        exporter.clear()
        agent.run(scenario)
        yield scenario.key, spans_from_readable(exporter.get_finished_spans())
