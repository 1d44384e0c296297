"""The agent of the sink tests: the demo's travel agent, judged by the loopback scripted judge, its spans exported
over OTLP/HTTP by the real SDK exporter, its scores sent by the sinks ``OTEL_EVAL_SINKS`` names."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.demo.golden import golden_eval_set
from otel_eval.demo.local_judge import SCRIPTED_JUDGE_MODEL, local_judge
from otel_eval.demo.run import demo_criteria
from otel_eval.model.messages import EvaluationRecord

PROJECT = "otel-eval-sinks"
"""The Phoenix project of the agent's spans (``openinference.project.name``)."""


def run_evaluated_agent(
    otlp_traces_endpoint: str | None,
    headers: Mapping[str, str] | None = None,
    *,
    sink_counts: dict[str, float] | None = None,
    flush_millis: int = 120_000,
) -> list[EvaluationRecord]:
    """Runs every demo scenario once with the processor attached (its sinks from the environment) and returns the
    records; the spans go to ``otlp_traces_endpoint`` (nowhere when None), and the processor's flush waits for the
    sinks. ``sink_counts`` gets the sinks' ``otel_eval.sink.*`` counters (``<metric>.<reason>``), as exported."""
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    resource = Resource.create({SERVICE_NAME: "travel-agent", "openinference.project.name": PROJECT})
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    records: list[EvaluationRecord] = []
    with local_judge() as (judge, _server):
        processor = EvaluationSpanProcessor(
            demo_criteria(SCRIPTED_JUDGE_MODEL),
            settings=ProcessorSettings(eval_set=golden_eval_set()),
            judge=judge,
            tracer_provider=provider,
            meter_provider=meter_provider,
            sinks=[records.extend],
        )
        provider.add_span_processor(processor)
        if otlp_traces_endpoint is not None:
            exporter = OTLPSpanExporter(otlp_traces_endpoint, headers=dict(headers or {}))
            provider.add_span_processor(BatchSpanProcessor(exporter))
        agent = TravelAgent(provider)
        for index, scenario in enumerate(SCENARIOS):
            agent.run(scenario, conversation_id=f"sinks-conversation-{index + 1}")
        assert processor.force_flush(flush_millis), "the sinks did not deliver in time"
        provider.shutdown()
    meter_provider.shutdown()
    if sink_counts is not None:
        data = reader.get_metrics_data()  # the last collection: every counter at its total
        for resource_metrics in data.resource_metrics if data else ():
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    if metric.name.startswith("otel_eval.sink."):
                        for point in metric.data.data_points:
                            reason = (point.attributes or {}).get("otel_eval.sink.reason")
                            key = metric.name if reason is None else f"{metric.name}.{reason}"
                            sink_counts[key] = sink_counts.get(key, 0) + point.value
    assert records
    return records
