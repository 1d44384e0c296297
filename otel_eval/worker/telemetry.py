"""The worker's OpenTelemetry providers: where evaluation spans, result events and metrics are exported.

``otlp`` uses the standard OTLP exporters, configured by the standard variables (``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_EXPORTER_OTLP_{TRACES,LOGS,METRICS}_ENDPOINT``, ``_HEADERS``, ``_TIMEOUT``, ``_COMPRESSION``) and
``OTEL_EXPORTER_OTLP_PROTOCOL`` (``http/protobuf``, the default, or ``grpc``). ``prometheus`` serves the metrics
for a Prometheus scrape (the OpenTelemetry Python Prometheus exporter, ``otel-eval[prometheus]``; the worker serves
them on ``/metrics``) and sends spans and events over OTLP only when an OTLP endpoint variable is set. The resource
comes from ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``, with ``service.name=otel-eval-worker`` when neither
names one (the Collector configs drop this service's traces from evaluation).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, ConsoleLogRecordExporter
from opentelemetry.sdk.environment_variables import OTEL_METRIC_EXPORT_INTERVAL
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

from otel_eval import environment_variables as env
from otel_eval._runtime.log_filters import RedactUrlQueries
from otel_eval._runtime.urls import redact_url
from otel_eval.errors import ConfigurationError, optional_dependency

logger = logging.getLogger(__name__)

DEFAULT_SERVICE_NAME: Final = "otel-eval-worker"
_DEFAULT_METRIC_INTERVAL_MS: Final = 10_000
_PROTOCOL_VARIABLE: Final = "OTEL_EXPORTER_OTLP_PROTOCOL"
_SERVICE_NAME_VARIABLE: Final = "OTEL_SERVICE_NAME"
_RESOURCE_VARIABLE: Final = "OTEL_RESOURCE_ATTRIBUTES"
_UNKNOWN_ENDPOINT: Final = "the OTLP endpoint"
_OTLP_ENDPOINT_VARIABLES: Final = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
)


@dataclass(slots=True)
class ExportOutcomes:
    """What the OTLP exporters' latest exports did, per signal (exporters record from their own threads)."""

    failing: dict[str, str] = field(default_factory=dict)
    """Signal -> its endpoint (redacted), for each signal whose latest export failed and whose endpoint's host took
    no export since (a Collector taking the metrics, which export every interval, is back for the spans and events
    it also receives, with no traffic to export them)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def failed(self, signal: str, endpoint: str) -> None:
        with self._lock:
            self.failing[signal] = endpoint

    def succeeded(self, signal: str, endpoint: str) -> None:
        host = _host(endpoint)
        with self._lock:
            for each in [s for s, e in self.failing.items() if s == signal or (host and _host(e) == host)]:
                del self.failing[each]

    def snapshot(self) -> dict[str, str]:
        """A copy of :attr:`failing`."""
        with self._lock:
            return dict(self.failing)


def _host(endpoint: str) -> str:
    """``endpoint``'s host and port (``http://collector:4318/v1/logs`` or gRPC's ``collector:4317``)."""
    if endpoint == _UNKNOWN_ENDPOINT:
        return ""
    return urlsplit(endpoint if "//" in endpoint else "//" + endpoint).netloc.lower()


@dataclass(slots=True)
class WorkerTelemetry:
    """The providers the worker emits through (None when telemetry is off), and the Prometheus text of its metrics
    in ``prometheus`` mode."""

    tracer_provider: TracerProvider | None = None
    logger_provider: LoggerProvider | None = None
    meter_provider: MeterProvider | None = None
    metrics_text: Callable[[], bytes] | None = None
    export_failures: dict[str, str] = field(default_factory=dict)
    """Signal (``spans``, ``logs``, ``metrics``) -> its endpoint (redacted), for each OTLP exporter one of whose
    exports failed (the SDK logs it and goes on): what a command that must not report an export it did not do
    reads."""
    exports: ExportOutcomes = field(default_factory=lambda: ExportOutcomes())
    """The OTLP exporters' latest outcomes (what the worker's ``/readyz`` and log say)."""

    @property
    def buffers(self) -> bool:
        """Whether spans or result events are buffered between batches (there is something to :meth:`flush`)."""
        return self.tracer_provider is not None or self.logger_provider is not None

    def flush(self, timeout_seconds: float) -> bool:
        """Exports the buffered spans and result events. False when the exporters did not finish in time.

        Called before a batch's offsets are committed, so a crash after the commit cannot lose what was emitted.
        """
        ok = True
        timeout_ms = int(timeout_seconds * 1000)
        if self.tracer_provider is not None:
            ok = self.tracer_provider.force_flush(timeout_ms) and ok
        if self.logger_provider is not None:
            ok = self.logger_provider.force_flush(timeout_ms) and ok
        return ok

    def shutdown(self) -> None:
        """Flushes and shuts every provider down (metrics get a final export)."""
        for provider in (self.tracer_provider, self.logger_provider, self.meter_provider):
            if provider is None:
                continue
            try:
                provider.shutdown()
            except Exception:  # shutdown is best effort: one provider must not keep the others from stopping
                logger.exception("telemetry provider %s did not shut down cleanly", type(provider).__name__)


def worker_resource() -> Resource:
    """The resource of the worker's telemetry."""
    named = os.environ.get(_SERVICE_NAME_VARIABLE, "").strip() or "service.name=" in os.environ.get(
        _RESOURCE_VARIABLE, ""
    )
    return Resource.create({} if named else {"service.name": DEFAULT_SERVICE_NAME})


def create_telemetry(mode: str, *, metric_interval_ms: int | None = None) -> WorkerTelemetry:
    """Providers for ``mode``: ``otlp``, ``prometheus``, ``console`` or ``none``.

    The metrics export every ``metric_interval_ms``; by default every ``OTEL_METRIC_EXPORT_INTERVAL`` ms when that is
    set (read by the SDK), else every 10 s.

    Raises:
        ConfigurationError: an unknown mode or OTLP protocol, or ``prometheus`` without its exporter installed.
    """
    if mode == "none":
        return WorkerTelemetry()
    if mode == "prometheus":
        return _prometheus_telemetry()
    resource = worker_resource()
    failures: dict[str, str] = {}
    outcomes = ExportOutcomes()
    span_exporter: Any
    log_exporter: Any
    metric_exporter: Any
    if mode == "console":
        span_exporter, log_exporter, metric_exporter = (
            ConsoleSpanExporter(),
            ConsoleLogRecordExporter(),
            ConsoleMetricExporter(),
        )
    elif mode == "otlp":
        span_exporter, log_exporter, metric_exporter = _otlp_exporters(failures, outcomes)
    else:
        raise ConfigurationError(f"worker telemetry {mode!r}: expected otlp, prometheus, console or none")
    tracer_provider, logger_provider = _trace_and_log_providers(resource, span_exporter, log_exporter)
    if metric_interval_ms is None and not os.environ.get(OTEL_METRIC_EXPORT_INTERVAL, "").strip():
        metric_interval_ms = _DEFAULT_METRIC_INTERVAL_MS
    reader = PeriodicExportingMetricReader(metric_exporter, export_interval_millis=metric_interval_ms)
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    return WorkerTelemetry(tracer_provider, logger_provider, meter_provider, export_failures=failures, exports=outcomes)


def _trace_and_log_providers(resource: Resource, span_exporter: Any, log_exporter: Any) -> tuple[Any, Any]:
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exporter))
    return tracer_provider, logger_provider


def _prometheus_telemetry() -> WorkerTelemetry:
    with optional_dependency(f"{env.OTEL_EVAL_WORKER_TELEMETRY}=prometheus", extra="prometheus"):
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import CollectorRegistry, generate_latest
    resource = worker_resource()
    registry = CollectorRegistry()
    meter_provider = MeterProvider(resource=resource, metric_readers=[PrometheusMetricReader(registry=registry)])
    tracer_provider = logger_provider = None
    failures: dict[str, str] = {}
    outcomes = ExportOutcomes()
    if any(os.environ.get(name, "").strip() for name in _OTLP_ENDPOINT_VARIABLES):
        span_exporter, log_exporter, _ = _otlp_exporters(failures, outcomes)
        tracer_provider, logger_provider = _trace_and_log_providers(resource, span_exporter, log_exporter)
    return WorkerTelemetry(
        tracer_provider,
        logger_provider,
        meter_provider,
        lambda: generate_latest(registry),
        export_failures=failures,
        exports=outcomes,
    )


def _otlp_exporters(failures: dict[str, str], outcomes: ExportOutcomes) -> tuple[Any, Any, Any]:
    """The span, log and metric OTLP exporters of ``OTEL_EXPORTER_OTLP_PROTOCOL``, each recording a failed export
    in ``failures`` and its outcomes in ``outcomes`` (:func:`_watched`)."""
    protocol = os.environ.get(_PROTOCOL_VARIABLE, "http/protobuf").strip().lower()
    exporters: tuple[Any, Any, Any]
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetricExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter

        exporters = GrpcSpanExporter(), GrpcLogExporter(), GrpcMetricExporter()
    elif protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporters = OTLPSpanExporter(), OTLPLogExporter(), OTLPMetricExporter()
    else:
        raise ConfigurationError(f"{_PROTOCOL_VARIABLE}={protocol!r}: expected http/protobuf or grpc")
    for signal, exporter in zip(("spans", "logs", "metrics"), exporters, strict=True):
        _watched(exporter, signal, failures, outcomes)
    return exporters


_REDACT_QUERIES: Final = RedactUrlQueries()


def _watched(exporter: Any, signal: str, failures: dict[str, str], outcomes: ExportOutcomes) -> None:
    """Makes ``exporter`` record ``signal`` -> its endpoint (redacted) in ``failures`` when an export does not
    succeed (the SDK's processors and readers only log it), and every outcome in ``outcomes``; and scrubs URL
    queries from its module's log lines."""
    export = exporter.export

    def failed() -> None:
        failures[signal] = _endpoint(exporter)
        outcomes.failed(signal, failures[signal])

    def recorded(*args: Any, **kwargs: Any) -> Any:
        try:
            result = export(*args, **kwargs)
        except Exception:
            failed()
            raise
        if getattr(result, "name", "SUCCESS") != "SUCCESS":
            failed()
        else:
            outcomes.succeeded(signal, _endpoint(exporter))
        return result

    exporter.export = recorded
    for cls in type(exporter).__mro__:
        if cls.__module__.startswith("opentelemetry.exporter.otlp"):
            logging.getLogger(cls.__module__).addFilter(_REDACT_QUERIES)


def _endpoint(exporter: Any) -> str:
    endpoint = getattr(exporter, "_endpoint", None)
    return redact_url(endpoint) if isinstance(endpoint, str) and endpoint else _UNKNOWN_ENDPOINT


def install_global(telemetry: WorkerTelemetry) -> None:
    """Makes ``telemetry``'s providers the global ones (the worker process owns its telemetry)."""
    from opentelemetry import _logs, metrics, trace

    if telemetry.tracer_provider is not None:
        trace.set_tracer_provider(telemetry.tracer_provider)
    if telemetry.logger_provider is not None:
        _logs.set_logger_provider(telemetry.logger_provider)
    if telemetry.meter_provider is not None:
        metrics.set_meter_provider(telemetry.meter_provider)
