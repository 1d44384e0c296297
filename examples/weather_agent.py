"""A stand-in agent emitting OpenTelemetry GenAI spans, with the EvaluationSpanProcessor attached in one line.

    OTEL_EVAL_CONSOLE=true python examples/weather_agent.py   # one line per score on stdout
    python examples/weather_agent.py --otlp                   # scores to an OTLP/HTTP endpoint (Jaeger, Tempo, ...)
    OTEL_LOGS_EXPORTER=none OTEL_METRICS_EXPORTER=none python examples/weather_agent.py --otlp   # traces only

With ``--otlp`` the agent is set up as any OpenTelemetry-instrumented service is: a tracer, a meter and a logger
provider, each exporting over OTLP/HTTP to ``OTEL_EXPORTER_OTLP_ENDPOINT`` (default ``http://localhost:4318``), and
the processor is given all three, so the scores arrive as ``gen_ai.evaluation.result`` events (logs), ``evaluate
{metric}`` spans in the agent's own traces, and ``gen_ai.evaluation.*`` metrics. As the SDK's conventions say,
``OTEL_TRACES_EXPORTER``, ``OTEL_LOGS_EXPORTER`` and ``OTEL_METRICS_EXPORTER`` choose what is exported (``otlp``, the
default here, or ``none``): a backend that takes only traces (Phoenix, MLflow) gets the scores as the evaluate spans
and the root spans' ``gen_ai.evaluation.<metric>.score`` / ``.label`` attributes. With ``OTEL_EVAL_ISOLATION=process``
the evaluation runs in a child process, which exports with the same variables (the agent's provider objects cannot
cross into it). Without any destination, the processor warns at start-up that the scores go nowhere. A judge that
gives no verdict (unreachable, not configured) is said at once in one WARNING naming its endpoint, and the run exits 1
(``judge_watch.py``; with ``--otlp``).
"""

from __future__ import annotations

import json
import logging
import os
import sys

try:
    from judge_watch import JudgeWatch  # run as a script: examples/ is on the path
except ImportError:  # imported as a module of the repository (the tests)
    from examples.judge_watch import JudgeWatch
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


WATCH = JudgeWatch()
"""Says at once when the judge gives no verdict; gives the run its exit code (with ``--otlp``, the recipes' mode:
the console mode keeps the one line alone)."""


def console() -> None:
    provider = TracerProvider()
    provider.add_span_processor(EvaluationSpanProcessor.from_env())  # the one line
    run_agent(provider)
    provider.shutdown()  # evaluates what is still buffered


EXPORTER_VARIABLES = {
    "traces": "OTEL_TRACES_EXPORTER",
    "logs": "OTEL_LOGS_EXPORTER",
    "metrics": "OTEL_METRICS_EXPORTER",
}


def exported_signals() -> set[str]:
    """The signals ``OTEL_<SIGNAL>_EXPORTER`` leave on: ``otlp`` (unset: ``otlp`` here) or ``none``."""
    # This example exports over OTLP/HTTP; an evaluation process (OTEL_EVAL_ISOLATION=process) reads the same
    # variables, and the SDK's "otlp" there means gRPC unless the protocol says otherwise.
    os.environ.setdefault("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    signals = set()
    for signal, variable in EXPORTER_VARIABLES.items():
        value = os.environ.setdefault(variable, "otlp").strip().lower()  # set: the evaluation process reads them too
        if value not in ("otlp", "none"):
            sys.exit(f"{variable}={value!r}: this example exports with otlp or none")
        if value == "otlp":
            signals.add(signal)
    return signals


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

    signals = exported_signals()
    resource = Resource.create({"service.name": "weather-agent"})  # plus OTEL_RESOURCE_ATTRIBUTES
    tracer_provider = TracerProvider(resource=resource)
    readers = [PeriodicExportingMetricReader(OTLPMetricExporter())] if "metrics" in signals else []
    meter_provider = MeterProvider(resource=resource, metric_readers=readers)
    logger_provider = LoggerProvider(resource=resource)
    if "logs" in signals:
        logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    # the agent's spans, root spans with their scores
    enrich = BatchSpanProcessor(OTLPSpanExporter()) if "traces" in signals else None
    if os.environ.get("OTEL_EVAL_ISOLATION", "").strip().lower() == "process":
        # the evaluation process makes its own providers, exporting as OTEL_*_EXPORTER say
        processor = EvaluationSpanProcessor.from_env(enrich=enrich, sinks=[WATCH])
    else:
        processor = EvaluationSpanProcessor.from_env(
            tracer_provider=tracer_provider,  # evaluate {metric} spans, children of the evaluated invocation span
            meter_provider=meter_provider,  # gen_ai.evaluation.score / .results and the pipeline counters
            logger_provider=logger_provider,  # gen_ai.evaluation.result events
            enrich=enrich,
            sinks=[WATCH],
        )
    tracer_provider.add_span_processor(processor)
    run_agent(tracer_provider)
    # Evaluates what is buffered, exports the spans and waits (at most a minute) until the sinks' backends took the
    # scores: a backend still ingesting the spans makes the sinks retry, which shutdown alone gives only 5 s.
    processor.force_flush(60_000)
    tracer_provider.shutdown()  # first: drains the evaluations, which emit through the other two
    meter_provider.shutdown()
    logger_provider.shutdown()


if __name__ == "__main__":
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    if "--otlp" in sys.argv[1:]:
        otlp()
    else:
        console()
    sys.exit(WATCH.summary())
