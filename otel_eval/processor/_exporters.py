"""Where the evaluation process (``isolation="process"``) exports the scores, and what may cross into it.

Exporters follow the SDK's own environment contract.
The child cannot use the agent's provider objects, so it reads the variables ``opentelemetry-instrument`` reads:
``OTEL_TRACES_EXPORTER``, ``OTEL_LOGS_EXPORTER`` and ``OTEL_METRICS_EXPORTER`` (``otlp``, ``console``, ... ; unset or
``none``: that signal is not exported), with ``OTEL_EXPORTER_OTLP_*`` configuring the OTLP exporters. The names are
resolved by the SDK's configuration module, the same code ``opentelemetry-instrument`` runs, so the two agree.
"""

from __future__ import annotations

import importlib.metadata
import logging
from collections.abc import Iterable, Mapping
from typing import Final, Literal

from opentelemetry.sdk._configuration import _get_exporter_names, _import_exporters
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_eval import environment_variables as env
from otel_eval.emit.sinks import sink_names
from otel_eval.errors import ConfigurationError
from otel_eval.metrics import default_registry

logger = logging.getLogger(__name__)

Signal = Literal["traces", "logs", "metrics"]
SIGNALS: Final[tuple[Signal, ...]] = ("traces", "logs", "metrics")
_VARIABLES: Final = {"traces": "OTEL_TRACES_EXPORTER", "logs": "OTEL_LOGS_EXPORTER", "metrics": "OTEL_METRICS_EXPORTER"}


def exporter_names() -> dict[Signal, list[str]]:
    """The exporter entry-point names configured for each signal (empty: not exported).

    Raises:
        ConfigurationError: an unknown exporter or OTLP protocol, naming the variable.
    """
    names: dict[Signal, list[str]] = {}
    for signal in SIGNALS:
        try:
            names[signal] = _get_exporter_names(signal)
        except RuntimeError as error:  # an unsupported OTEL_EXPORTER_OTLP_PROTOCOL
            raise ConfigurationError(f"{_VARIABLES[signal]}: {error}") from None
        for name in names[signal]:
            if not importlib.metadata.entry_points(group=f"opentelemetry_{signal}_exporter", name=name):
                raise ConfigurationError(
                    f"{_VARIABLES[signal]}: no {signal} exporter named {name!r} is installed (the evaluation process "
                    "exports the scores with the exporters these variables name, as opentelemetry-instrument does)"
                )
    return names


class ExportingProviders:
    """A tracer, logger and meter provider with ``resource``, each exporting with its configured exporters.

    A signal without an exporter gets a provider anyway (the evaluation spans are then made and dropped: the
    processor takes an explicit provider as the choice of where its output goes).
    """

    def __init__(self, resource: Resource) -> None:
        names = exporter_names()
        span_exporters, metric_exporters, log_exporters = _import_exporters(
            names["traces"], names["metrics"], names["logs"]
        )
        self.tracer_provider = TracerProvider(resource=resource)
        for span_exporter in span_exporters.values():
            self.tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter()))
        self.logger_provider = LoggerProvider(resource=resource)
        for log_exporter in log_exporters.values():
            self.logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exporter()))
        readers: list[MetricReader] = [
            exporter() if issubclass(exporter, MetricReader) else PeriodicExportingMetricReader(exporter())
            for exporter in metric_exporters.values()
        ]
        self.meter_provider = MeterProvider(resource=resource, metric_readers=readers)
        self.exporting = any(names.values())

    def force_flush(self, timeout_millis: int) -> bool:
        """Exports what each provider holds. False when any did not finish in time."""
        flushed = self.tracer_provider.force_flush(timeout_millis)
        flushed = self.logger_provider.force_flush(timeout_millis) and flushed
        return self.meter_provider.force_flush(timeout_millis) and flushed

    def shutdown(self) -> None:
        """Exports what is left and stops the exporters."""
        self.tracer_provider.shutdown()
        self.logger_provider.shutdown()
        self.meter_provider.shutdown()


PROCESS_OPTIONS: Final = frozenset({"max_queue_size", "concurrency"})
"""The embedded worker's settings that cross into the evaluation process; its objects cannot."""
NO_DESTINATION_WARNING: Final = (
    "EvaluationSpanProcessor(isolation='process'): the scores go nowhere: the evaluation process exports them as "
    "OTEL_TRACES_EXPORTER, OTEL_LOGS_EXPORTER and OTEL_METRICS_EXPORTER say (e.g. otlp, console) and none is set; "
    f"set them, or {env.OTEL_EVAL_CONSOLE}=true to print one line per score."
)


def check_process_options(given: Mapping[str, object], metric_names: Iterable[str]) -> None:
    """What ``isolation="process"`` checks at start-up, so the child never fails on it later.

    Args:
        given: The processor's keyword arguments that may not cross (``exporter``, ``registry``, ``pipeline``: None
            when not given) and its embedded settings.
        metric_names: The criteria's metrics (checked against the default registry, which the child uses).

    Raises:
        TypeError: an object that cannot cross into the child.
        ConfigurationError: an unknown exporter name in ``OTEL_*_EXPORTER`` or sink in ``OTEL_EVAL_SINKS``, or an
            unknown metric.
    """
    refused = sorted(name for name, value in given.items() if value is not None and name not in PROCESS_OPTIONS)
    if refused:
        raise TypeError(
            f"{', '.join(refused)}: objects of this process cannot cross into the evaluation process "
            "(isolation='process'), which exports the scores as OTEL_TRACES_EXPORTER, OTEL_LOGS_EXPORTER and "
            "OTEL_METRICS_EXPORTER say; use isolation='thread' to pass them"
        )
    if not any(exporter_names().values()) and not sink_names():
        logger.warning(NO_DESTINATION_WARNING)
    registry = default_registry()
    for name in metric_names:
        registry.get(name)
