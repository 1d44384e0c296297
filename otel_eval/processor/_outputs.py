"""Where an embedded processor's scores go: the console switch, and one warning when they would go nowhere.

Without a provider argument the emitters use the global OpenTelemetry providers, which are no-ops until an SDK
provider is set: a processor attached with one line would evaluate every invocation and show nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence

from opentelemetry._logs import LoggerProvider, get_logger_provider
from opentelemetry.metrics import MeterProvider, get_meter_provider
from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.trace import TracerProvider

from otel_eval import environment_variables as env
from otel_eval.emit import RecordSink
from otel_eval.emit.console import ConsoleRecordSink

logger = logging.getLogger(__name__)

NO_DESTINATION_WARNING = (
    "EvaluationSpanProcessor: the scores go nowhere: no logger_provider= or meter_provider= was passed and no "
    "OpenTelemetry SDK LoggerProvider or MeterProvider is set globally, so gen_ai.evaluation.result events and "
    "score metrics are dropped. Pass logger_provider= and meter_provider= (or set them with "
    "opentelemetry._logs.set_logger_provider / opentelemetry.metrics.set_meter_provider), sinks=[...], or set "
    f"{env.OTEL_EVAL_CONSOLE}=true to print one line per score."
)


def console_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``OTEL_EVAL_CONSOLE`` is ``true`` (case-insensitive; ``1`` and ``yes`` too)."""
    value = (os.environ if environ is None else environ).get(env.OTEL_EVAL_CONSOLE, "")
    return value.strip().lower() in ("true", "1", "yes")


def output_sinks(
    sinks: Sequence[RecordSink],
    *,
    tracer_provider: TracerProvider | None,
    meter_provider: MeterProvider | None,
    logger_provider: LoggerProvider | None,
    enriching: bool,
) -> list[RecordSink]:
    """``sinks``, plus a :class:`ConsoleRecordSink` when ``OTEL_EVAL_CONSOLE`` is true; logs
    :data:`NO_DESTINATION_WARNING` once when nothing would receive the scores.

    An explicit ``tracer_provider`` counts (the caller chose where the evaluation spans go); the global tracer
    provider does not: agents set it after making the processor (ADK's set-up), and it exports only if the agent
    added an exporting processor, which cannot be told from here.
    """
    result = list(sinks)
    if console_enabled():
        result.append(ConsoleRecordSink())
    has_events = logger_provider is not None or isinstance(get_logger_provider(), SdkLoggerProvider)
    has_metrics = meter_provider is not None or isinstance(get_meter_provider(), SdkMeterProvider)
    if not (result or enriching or has_events or has_metrics or tracer_provider is not None):
        logger.warning(NO_DESTINATION_WARNING)
    return result
