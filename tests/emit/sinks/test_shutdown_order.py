"""The documented set-up's exit: with ``enrich=``, the agent's root spans are held until their scores arrive, and the
backend sinks annotate those very spans (Phoenix answers 404, MLflow has no trace, until they arrive). Shutting the
provider down must export the scored roots before the sinks are flushed or stopped; the other order lost every score
of ``examples/weather_agent.py --otlp`` against MLflow ("shut down with 9 score(s) not delivered")."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import httpx2
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from examples.weather_agent import run_agent
from otel_eval import EvaluationSpanProcessor
from otel_eval.emit.sinks import BatchingSink
from otel_eval.emit.sinks._delivery import MISSING, OK, Outcome
from otel_eval.model.messages import EvaluationRecord


class _Backend:
    """Takes a score only once the span it annotates has been exported, as Phoenix and MLflow do."""

    name = "backend"
    endpoint = "http://backend.invalid"

    def __init__(self, exported: set[str]) -> None:
        self._exported = exported
        self.taken: list[EvaluationRecord] = []

    def client(self) -> httpx2.Client:
        return httpx2.Client()

    def send(self, client: httpx2.Client, records: Sequence[EvaluationRecord]) -> list[Outcome]:
        outcomes: list[Outcome] = [OK if r.span_id in self._exported else MISSING for r in records]
        self.taken += [r for r, outcome in zip(records, outcomes, strict=True) if outcome == OK]
        return outcomes


class _Exporter(SpanExporter):
    def __init__(self) -> None:
        self.span_ids: set[str] = set()
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            self.span_ids |= {format(s.context.span_id, "016x") for s in spans if s.context is not None}
        return SpanExportResult.SUCCESS


@pytest.mark.usefixtures("clean_genai_env")
def test_shutting_the_provider_down_exports_the_scored_roots_before_the_sinks_stop() -> None:
    exporter = _Exporter()
    backend = _Backend(exporter.span_ids)
    sink = BatchingSink(backend, informational=True, backoff=(0.2, 1.0))
    provider = TracerProvider(shutdown_on_exit=False)
    # the SDK's default schedule (5 s) is longer than the sinks' exit budget: only the order can make it in time
    enrich = BatchSpanProcessor(exporter, schedule_delay_millis=30_000)
    provider.add_span_processor(EvaluationSpanProcessor(sinks=[sink], enrich=enrich, tracer_provider=provider))
    run_agent(provider)
    provider.shutdown()
    assert backend.taken, "no score was delivered"
    assert {r.span_id for r in backend.taken} <= exporter.span_ids
    assert not any(key.startswith("dropped") for key in sink.stats()), sink.stats()
