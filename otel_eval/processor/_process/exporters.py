"""Where the evaluation process (``isolation="process"``) exports the scores, and what may cross into it.

Exporters follow the SDK's own environment contract.
The child cannot use the agent's provider objects, so it reads the variables ``opentelemetry-instrument`` reads:
``OTEL_TRACES_EXPORTER``, ``OTEL_LOGS_EXPORTER`` and ``OTEL_METRICS_EXPORTER`` (``otlp``, ``console``, ... ; unset or
``none``: that signal is not exported), with ``OTEL_EXPORTER_OTLP_*`` configuring the OTLP exporters. The names are
resolved as the SDK's configuration module (what ``opentelemetry-instrument`` runs) resolves them, through the public
entry points; ``tests/processor/test_exporters.py`` pins the two together.

Its metrics carry a ``service.instance.id`` of their own (:func:`evaluation_process_resource`): the agent's process
reports otel-eval's counters too (spans it dropped or could not hand on, its always-0 ``invocations.sampled``), and
two processes' cumulative streams with one identity would reach the backend as one series jumping between them.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, Protocol

from opentelemetry.environment_variables import OTEL_LOGS_EXPORTER, OTEL_METRICS_EXPORTER, OTEL_TRACES_EXPORTER
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_LOGS_PROTOCOL,
    OTEL_EXPORTER_OTLP_METRICS_PROTOCOL,
    OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_eval import environment_variables as env
from otel_eval.emit.enrichment import RootSpanEnricher
from otel_eval.emit.sinks import sink_names
from otel_eval.errors import ConfigurationError
from otel_eval.evaluation import (
    builtin_metric_names,
    check_metric_names,
    criteria_from,
    custom_metrics_of,
    registry_with_custom_metrics,
)
from otel_eval.judge.settings import JudgeSettings
from otel_eval.metrics import default_registry
from otel_eval.processor._process.feeder import EvaluationProcess
from otel_eval.processor._process.imports import check_child_imports
from otel_eval.processor._process.messages import ChildSettings
from otel_eval.processor._selection import Sampling
from otel_eval.processor._settings import EngineOptions

logger = logging.getLogger(__name__)

Signal = Literal["traces", "logs", "metrics"]
SIGNALS: Final[tuple[Signal, ...]] = ("traces", "logs", "metrics")
_VARIABLES: Final = {"traces": OTEL_TRACES_EXPORTER, "logs": OTEL_LOGS_EXPORTER, "metrics": OTEL_METRICS_EXPORTER}
_PROTOCOL_VARIABLES: Final = {
    "traces": OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    "logs": OTEL_EXPORTER_OTLP_LOGS_PROTOCOL,
    "metrics": OTEL_EXPORTER_OTLP_METRICS_PROTOCOL,
}
_OTLP: Final = "otlp"
_OTLP_BY_PROTOCOL: Final = {"grpc": "otlp_proto_grpc", "http/protobuf": "otlp_proto_http"}
EVALUATION_INSTANCE_SUFFIX: Final = "/evaluation"


class _Selectable(Protocol):
    def select(self, *, group: str, name: str) -> importlib.metadata.EntryPoints: ...


class _Installed:
    """The installed packages' entry points, read on first use: one scan of the installed packages for all the
    exporters named, not one per name and again to load it (about 10 ms each with a few hundred packages)."""

    def __init__(self) -> None:
        self._all: _Selectable | None = None

    def select(self, group: str, name: str) -> importlib.metadata.EntryPoints:
        every = self._all
        if every is None:
            every = self._all = importlib.metadata.entry_points()  # Python 3.11: SelectableGroups, later EntryPoints
        return every.select(group=group, name=name)


def exporter_names(installed: _Installed | None = None) -> dict[Signal, list[str]]:
    """The exporter entry-point names configured for each signal (empty: not exported), resolved as the SDK's
    configuration does (``otlp`` becomes ``otlp_proto_grpc`` or ``otlp_proto_http`` by the OTLP protocol variables;
    a test pins this to the SDK's own resolution), each checked to be installed.

    Raises:
        ConfigurationError: an unknown exporter or OTLP protocol, naming the variable.
    """
    installed = installed or _Installed()
    names: dict[Signal, list[str]] = {}
    for signal in SIGNALS:
        raw = os.environ.get(_VARIABLES[signal], "")
        listed = [] if not raw or raw.strip().lower() == "none" else [name.strip() for name in raw.split(",")]
        names[signal] = [_entry_point_name(name, signal) for name in listed]
        for name in names[signal]:
            if not installed.select(group=f"opentelemetry_{signal}_exporter", name=name):
                raise ConfigurationError(
                    f"{_VARIABLES[signal]}: no {signal} exporter named {name!r} is installed (the evaluation process "
                    "exports the scores with the exporters these variables name, as opentelemetry-instrument does)"
                )
    return names


def _entry_point_name(name: str, signal: Signal) -> str:
    if name not in (_OTLP, *_OTLP_BY_PROTOCOL.values()):
        return name
    protocol = (
        os.environ.get(_PROTOCOL_VARIABLES[signal]) or os.environ.get(OTEL_EXPORTER_OTLP_PROTOCOL) or ""
    ).strip()
    if name != _OTLP:
        return name  # the protocol is in the name (a conflicting protocol variable does not change it)
    if not protocol:
        return _OTLP_BY_PROTOCOL["grpc"]
    if protocol not in _OTLP_BY_PROTOCOL:
        raise ConfigurationError(f"{_VARIABLES[signal]}: Unsupported OTLP protocol {protocol!r} is configured")
    return _OTLP_BY_PROTOCOL[protocol]


def _load(signal: Signal, names: list[str], installed: _Installed) -> list[type[Any]]:
    """The exporter classes of ``names`` (each checked to be installed by :func:`exporter_names`)."""
    group = f"opentelemetry_{signal}_exporter"
    return [next(iter(installed.select(group=group, name=name))).load() for name in names]


def evaluation_process_resource(agent: Resource) -> Resource:
    """The resource of the evaluation process's metrics: the agent's (its ``service.name`` included), with a
    ``service.instance.id`` of its own, as OpenTelemetry asks of each process of one service (Prometheus' OTLP
    translation makes it the ``instance`` label): the agent's followed by ``/evaluation``, or a random UUID when
    the agent's resource has none (a restarted evaluation process continues the same series, as a restarted
    process does)."""
    instance = agent.attributes.get(SERVICE_INSTANCE_ID)
    own = f"{instance}{EVALUATION_INSTANCE_SUFFIX}" if instance not in (None, "") else str(uuid.uuid4())
    return Resource({**agent.attributes, SERVICE_INSTANCE_ID: own}, agent.schema_url)


class ExportingProviders:
    """A tracer and logger provider with the agent's ``resource``, and a meter provider with the evaluation
    process's own (:func:`evaluation_process_resource`), each exporting with its configured exporters.

    A signal without an exporter gets a provider anyway (the evaluation spans are then made and dropped: the
    processor takes an explicit provider as the choice of where its output goes).
    """

    def __init__(self, resource: Resource) -> None:
        installed = _Installed()
        names = exporter_names(installed)
        self.tracer_provider = TracerProvider(resource=resource)
        for span_exporter in _load("traces", names["traces"], installed):
            self.tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter()))
        self.logger_provider = LoggerProvider(resource=resource)
        for log_exporter in _load("logs", names["logs"], installed):
            self.logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exporter()))
        readers: list[MetricReader] = [
            exporter() if issubclass(exporter, MetricReader) else PeriodicExportingMetricReader(exporter())
            for exporter in _load("metrics", names["metrics"], installed)
        ]
        self.meter_provider = MeterProvider(resource=evaluation_process_resource(resource), metric_readers=readers)
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


ENRICHMENT_MARGIN: Final = 1.0
"""With ``isolation="process"``, how much longer than the evaluation process a root is held for its answer."""
NO_DESTINATION_WARNING: Final = (
    "EvaluationSpanProcessor(isolation='process'): the scores go nowhere: the evaluation process exports them as "
    "OTEL_TRACES_EXPORTER, OTEL_LOGS_EXPORTER and OTEL_METRICS_EXPORTER say (e.g. otlp, console) and none is set; "
    f"set them, or {env.OTEL_EVAL_CONSOLE}=true to print one line per score."
)


def check_process_options(
    given: Mapping[str, object], metric_names: Iterable[str], *, destination_in_code: bool = False
) -> None:
    """What ``isolation="process"`` checks at start-up, so the child never fails on it later.

    Args:
        given: The processor's objects that may not cross (``exporter``, ``registry``, ``pipeline``, ``judge``,
            the providers: None when not given).
        metric_names: The criteria's metrics (checked against the default registry, which the child uses).
        destination_in_code: The scores reach sinks or enriched root spans given in code (no warning that they go
            nowhere without exporters).

    Raises:
        TypeError: an object that cannot cross into the child.
        ConfigurationError: an unknown exporter name in ``OTEL_*_EXPORTER`` or sink in ``OTEL_EVAL_SINKS``, a metric
            reader that is scraped (``OTEL_METRICS_EXPORTER=prometheus``), or an unknown metric.
    """
    refused = sorted(name for name, value in given.items() if value is not None)
    if refused:
        raise TypeError(
            f"{', '.join(refused)}: objects of this process cannot cross into the evaluation process "
            "(isolation='process'), which exports the scores as OTEL_TRACES_EXPORTER, OTEL_LOGS_EXPORTER and "
            "OTEL_METRICS_EXPORTER say; use isolation='thread' to pass them"
        )
    installed = _Installed()
    names = exporter_names(installed)
    if not any(names.values()) and not sink_names() and not destination_in_code:
        logger.warning(NO_DESTINATION_WARNING)
    _refuse_pull_readers(names["metrics"], installed)
    registry = default_registry()
    for name in metric_names:
        registry.get(name)


def _refuse_pull_readers(names: list[str], installed: _Installed) -> None:
    """A metric reader that is scraped (``prometheus``) serves a port: the agent's process holds it, so the evaluation
    process would fail at each start, and each evaluation with it."""
    loaded = zip(names, _load("metrics", names, installed), strict=True)
    pulled = [name for name, kind in loaded if issubclass(kind, MetricReader)]
    if pulled:
        raise ConfigurationError(
            f"{OTEL_METRICS_EXPORTER}={','.join(pulled)}: the evaluation process (isolation='process') cannot serve "
            "its scores on the port the agent's process serves for scraping; export them with otlp (a Collector can "
            "expose them to Prometheus), or use isolation='thread', whose scores the agent's own reader serves"
        )


def process_engine(options: EngineOptions) -> EvaluationProcess:
    """The engine of ``isolation="process"``: the child gets the criteria and the settings (its own
    :func:`~otel_eval.processor._thread_engine.in_thread_engine` is built from them, ``settings.metrics`` included);
    the roots ``enrich`` holds and the ``sinks`` stay here.

    Raises:
        TypeError: an object that cannot cross into the child (see :func:`check_process_options`).
        ConfigurationError: an unknown metric (in the criteria, ``settings.metrics`` or ``OTEL_EVAL_JUDGE_BUDGET``,
            checked against the default registry and the criteria's custom metrics, which the child uses) or exporter
            name, a judge setting that is not valid, or custom metric code the child could not import (its module
            found here only through this process's ``sys.path``: :func:`check_child_imports`).
    """
    criteria, settings, meter_provider = options.criteria, options.settings, options.meter_provider
    enrich, sinks, enrichment_wait_seconds = options.enrich, options.sinks, options.enrichment_wait_seconds
    sampling = Sampling.create(settings.sample_rate, settings.sample_priority, meter_provider)
    enriches = enrich is not None and env.EMIT_ATTRIBUTES in settings.emit  # else the roots pass straight on
    metric_names = builtin_metric_names(criteria_from(criteria), criteria)
    check_process_options(options.crossing, metric_names, destination_in_code=bool(sinks) or enriches)
    # Custom metric code that cannot load, or a metric to run that the child's registry lacks, stops start-up here.
    registry = registry_with_custom_metrics(criteria)
    check_child_imports(custom_metrics_of(criteria))  # loaded here, but maybe only through this process's sys.path
    check_metric_names(settings.metrics, registry)
    budget = JudgeSettings.from_env().budget  # the child's judge reads the same environment
    if budget is not None:
        budget.check_metrics(registry)  # a metric the child does not know stops start-up here, not in the child
    child = ChildSettings(criteria, settings, enrichment_wait_seconds if enriches else None, relay_records=bool(sinks))
    # The roots are held here; the evaluation process says when, and with which scores.
    wait = enrichment_wait_seconds + ENRICHMENT_MARGIN if enriches else 0.0
    enricher = RootSpanEnricher(enrich, wait_seconds=wait) if enrich is not None else None
    limits = settings.limits
    return EvaluationProcess(
        child, meter_provider=meter_provider, max_pending=limits.max_pending_spans, sampling=sampling,
        idle_timeout=limits.trace_idle_timeout, enricher=enricher, sinks=sinks,
    )  # fmt: skip
