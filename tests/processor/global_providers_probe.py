"""Run in a fresh process (global providers can be set once): ``python -m tests.processor.global_providers_probe
KIND`` sets global tracer, meter and logger providers with in-memory exporters, attaches the processor with only
``KIND_provider=`` passed (plus ``enrich=``), runs a judged batch of the travel agent, and prints as JSON what
otel-eval put on the global providers and on the passed one."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from opentelemetry import _logs, metrics, trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import EvaluationSpanProcessor, semconv
from otel_eval.demo.workload import TravelAgent
from tests.collected import settled
from tests.deploy.emitted import BATCH, CRITERIA, JUDGE_ENVIRONMENT, judge_answers
from tests.judge.fake_gemini import FakeGemini
from tests.judge.helpers import TEST_KEY


class Sinks:
    """A tracer, meter and logger provider whose output stays in memory."""

    def __init__(self) -> None:
        self.spans, self.logs, self.reader = InMemorySpanExporter(), InMemoryLogRecordExporter(), InMemoryMetricReader()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.logger_provider = LoggerProvider()
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))

    def received(self) -> dict[str, Any]:
        """What otel-eval (its instrumentation scope) put here."""
        data = settled(self.reader)
        return {
            "spans": sorted(
                {
                    s.name
                    for s in self.spans.get_finished_spans()
                    if s.instrumentation_scope.name == semconv.INSTRUMENTATION_SCOPE
                }
            ),
            "metrics": sorted(
                {
                    m.name
                    for rm in (data.resource_metrics if data else ())
                    for sm in rm.scope_metrics
                    if sm.scope.name == semconv.INSTRUMENTATION_SCOPE
                    for m in sm.metrics
                }
            ),
            "logs": len(self.logs.get_finished_logs()),
        }


def main(kind: str) -> None:
    global_sinks, own = Sinks(), Sinks()
    trace.set_tracer_provider(global_sinks.tracer_provider)
    metrics.set_meter_provider(global_sinks.meter_provider)
    _logs.set_logger_provider(global_sinks.logger_provider)
    with FakeGemini(judge_answers) as server:
        os.environ.update({"GOOGLE_API_KEY": TEST_KEY, "GOOGLE_GEMINI_BASE_URL": server.base_url, **JUDGE_ENVIRONMENT})
        agent_provider = TracerProvider()
        processor = EvaluationSpanProcessor(
            CRITERIA,
            enrich=SimpleSpanProcessor(InMemorySpanExporter()),
            **{f"{kind}_provider": getattr(own, f"{kind}_provider")},
        )
        agent_provider.add_span_processor(processor)
        agent = TravelAgent(tracer_provider=agent_provider)
        for scenario in BATCH:
            agent.run(scenario)
        flushed = processor.force_flush(60_000)
        agent_provider.shutdown()
    print(json.dumps({"flushed": flushed, "global": global_sinks.received(), "own": own.received()}))


if __name__ == "__main__":
    main(sys.argv[1])
