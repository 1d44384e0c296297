"""A stand-in agent emitting OpenTelemetry GenAI spans, with the EvaluationSpanProcessor attached in one line.

    OTEL_EVAL_CONSOLE=true python examples/weather_agent.py   # one line per score on stdout
    python examples/weather_agent.py --otlp                   # scores to an OTLP/HTTP endpoint (Jaeger, Tempo, ...)

With ``--otlp`` the agent is set up as any OpenTelemetry-instrumented service is: a tracer, a meter and a logger
provider, each exporting over OTLP/HTTP to ``OTEL_EXPORTER_OTLP_ENDPOINT`` (default ``http://localhost:4318``), and
the processor is given all three, so the scores arrive as ``gen_ai.evaluation.result`` events (logs), ``evaluate
{metric}`` spans in the agent's own traces, and ``gen_ai.evaluation.*`` metrics. Without either, the processor warns
at start-up that the scores go nowhere.
"""

from __future__ import annotations

import json
import sys

from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor


def message(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def run_agent(provider: TracerProvider) -> None:
    """Three invocations as an instrumented framework records them: ``invoke_agent`` with a ``chat`` child."""
    tracer = provider.get_tracer("weather-agent")
    for city in ("Paris", "Berlin", "Rome"):
        with (
            tracer.start_as_current_span(
                "invoke_agent WeatherAssistant",
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "WeatherAssistant",
                    "gen_ai.input.messages": message("user", f"What's the weather in {city}?"),
                    "gen_ai.output.messages": message("assistant", f"It is sunny in {city}."),
                },
            ),
            tracer.start_as_current_span(
                "chat gemini-2.5-flash",
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gemini-2.5-flash",
                    "gen_ai.usage.input_tokens": 20,
                    "gen_ai.usage.output_tokens": 8,
                },
            ),
        ):
            pass


def console() -> None:
    provider = TracerProvider()
    provider.add_span_processor(EvaluationSpanProcessor.from_env())  # the one line
    run_agent(provider)
    provider.shutdown()  # evaluates what is still buffered


def otlp() -> None:
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": "weather-agent"})
    tracer_provider = TracerProvider(resource=resource)
    meter_provider = MeterProvider(
        resource=resource, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())]
    )
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    tracer_provider.add_span_processor(
        EvaluationSpanProcessor.from_env(
            tracer_provider=tracer_provider,  # evaluate {metric} spans, children of the evaluated invocation span
            meter_provider=meter_provider,  # gen_ai.evaluation.score / .results and the pipeline counters
            logger_provider=logger_provider,  # gen_ai.evaluation.result events
            enrich=BatchSpanProcessor(OTLPSpanExporter()),  # the agent's spans, root spans with their scores
        )
    )
    run_agent(tracer_provider)
    tracer_provider.shutdown()  # first: drains the evaluations, which emit through the other two
    meter_provider.shutdown()
    logger_provider.shutdown()


if __name__ == "__main__":
    if "--otlp" in sys.argv[1:]:
        otlp()
    else:
        console()
