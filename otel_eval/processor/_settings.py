"""What :class:`~otel_eval.EvaluationSpanProcessor` is built from: its settings (:class:`ProcessorSettings`, read
from ``OTEL_EVAL_*`` by :meth:`ProcessorSettings.from_env`; a bad variable fails at start-up, naming the variable and
the problem), the limits both engines apply (:class:`Limits`), the engine it delegates to (:class:`Engine`: in-thread
or evaluation process) and the options each engine is built from (:class:`EngineOptions`, the processor's arguments,
declared once).

The processor is a thin facade: it checks its arguments, picks the engine ``isolation`` names, and forwards the
``SpanProcessor`` hooks to it, never letting an engine's failure reach the agent. Both engines take spans the same
way (a bounded queue per hook, drained by one background thread) and evaluate with the same assembler and core.

Defaults shared with the transports and the worker are defined in :mod:`otel_eval.environment_variables`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Final, Protocol

from opentelemetry._logs import LoggerProvider
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import TracerProvider

from otel_eval import environment_variables as env
from otel_eval import semconv
from otel_eval._runtime.field_types import check_field_types
from otel_eval.emit import RecordSink
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.emit.selection import emit_setting, emit_signals
from otel_eval.environment_variables import flag_setting, names_setting, number_setting
from otel_eval.errors import ConfigurationError
from otel_eval.evaluation.criteria import criteria_from, metric_names_setting, registry_with_custom_metrics
from otel_eval.evaluation.embedded import EMBEDDED_OPTIONS
from otel_eval.evaluation.embedded_worker import check_worker_bounds
from otel_eval.evaluation.plan import plan_own_criteria
from otel_eval.evaluation.sessions import SessionLimits
from otel_eval.judge import Judge
from otel_eval.metrics import MetricRegistry
from otel_eval.model import EvalConfig, EvalSet
from otel_eval.model.loading import adk_eval_set, criteria_setting, eval_set_setting, setting_source
from otel_eval.processor._logs import EvaluationLogRecordProcessor
from otel_eval.transport.base import InvocationExporter

logger = logging.getLogger(__name__)

DEFAULT_SAMPLE_RATE = 1.0
DEFAULT_MAX_BUFFER_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_PENDING_SPANS = 8192
_THREAD_ONLY_PROVIDERS = ("logger_provider", "tracer_provider")
"""Where the in-thread evaluation emits; the evaluation process has its own (``meter_provider`` stays: the agent's
process reports its pipeline counters to it)."""


@dataclass(frozen=True, slots=True)
class ProcessorSettings:
    """The plain values of :class:`~otel_eval.EvaluationSpanProcessor` (its objects, such as the criteria, the
    exporter or the providers, are its arguments). Frozen: derive a variant with :func:`dataclasses.replace`.

    Attributes:
        eval_set: Golden cases (an ``EvalSet``, ADK's own ``google.adk.evaluation.eval_set.EvalSet``, or a path,
            loaded here): an invocation whose user text equals a case turn's is also scored with the reference
            metrics (online reference metrics).
        sample_rate: Fraction of traces evaluated, decided from a 64-bit hash of the session id a trace's spans
            name (a session's turns all or none), else from the low 64 bits of the trace id as ``TraceIdRatioBased``
            does (the same trace gets the same decision in every process).
        sample_priority: With ``sample_rate`` below 1, buffer every trace and decide it when its local root ends
            (by session), and also evaluate a left-out trace whose local root span ended in error or carries
            negative feedback (:mod:`otel_eval.processor._selection`). False: pure head sampling by trace id.
        agent_names: Evaluate only invocations of these agents (empty: all). Names, or one comma-separated string
            (as ``OTEL_EVAL_AGENT_NAMES``), kept as a tuple.
        root_span_names: Evaluate only subtrees whose top span name starts with one of these (empty: all). Names, or
            one comma-separated string, kept as a tuple.
        max_open_traces: Traces buffered at once.
        max_spans_per_trace: Spans buffered per trace.
        max_buffer_bytes: Approximate attribute bytes buffered over all traces.
        max_pending_spans: Ended spans waiting for the background thread.
        trace_idle_timeout: Seconds after a trace's last span before it is handed on without its root (not an
            invocation under way, which ``max_trace_age`` bounds); also the longest a local root waits for its open
            descendants after it ended.
        max_queue_size: Requests waiting for the embedded worker.
        concurrency: Requests the embedded worker evaluates at once.
        isolation: ``"thread"``: the embedded evaluation runs on background threads of this process. ``"process"``:
            in a child process fed the spans over a socket (:mod:`otel_eval.processor._process.feeder`).
        sessions: When a session's conversation-level metrics run, and how many open sessions are held.
        emit: The OpenTelemetry signals the scores are emitted as, any of ``events``, ``spans``, ``metrics`` and
            ``attributes`` (root-span score attributes, with ``enrich=``): a collection of names or one
            comma-separated string (``"events,metrics"``; ``"none"`` for none), kept as a ``frozenset``. What is not
            selected is not computed. Default all four. The sinks (``OTEL_EVAL_SINKS``, ``sinks=``) do not depend
            on it.
        kafka_bootstrap_servers: Read by :meth:`~otel_eval.EvaluationSpanProcessor.from_env`: set, the requests go
            to Kafka (the constructor takes an ``exporter`` instead).
        metrics: Run only these metrics, each with its criterion from ``criteria`` when it names it, else the
            metric's default, as ``otel-eval run --metric`` does; empty (default): the criteria or the defaults, plus
            ADK's efficiency metrics. Names, or one comma-separated string (``"tool_call_count_v1,token_usage_v1"``),
            kept as a tuple. An unknown name fails when the processor starts (``ConfigurationError``); the embedded
            worker runs them (with an ``exporter``, the evaluating side chooses: leave it empty).
        explanations: False: no result carries its explanation (the judge's rationale quotes the agent's text), on
            its event, its evaluation span, or to the sinks (``OTEL_EVAL_EXPLANATIONS``). Default true. With an
            ``exporter``, the evaluating side's setting applies.
        max_trace_age: Seconds an invocation under way (its local root running here with a span under it open: a
            slow model call, a tool awaiting approval) is waited for, however long no span ends; then what ended is
            handed on as it is (``otel_eval.invocations.incomplete``) and its later spans are dropped
            (``otel_eval.drop.reason=max_trace_age``). ``OTEL_EVAL_MAX_TRACE_AGE``.

    Raises:
        ValueError: a value of the wrong type (``sample_rate must be a number, got 'abc'``), a limit below 1,
            ``sample_rate`` outside [0, 1], an unknown ``isolation`` or ``emit`` signal.
        ConfigurationError: an ``eval_set`` path that cannot be read.
    """

    eval_set: EvalSet | str | Path | None = None
    sample_rate: float = DEFAULT_SAMPLE_RATE
    sample_priority: bool = env.DEFAULT_SAMPLE_PRIORITY
    agent_names: tuple[str, ...] = ()
    root_span_names: tuple[str, ...] = ()
    max_open_traces: int = env.DEFAULT_MAX_OPEN_TRACES
    max_spans_per_trace: int = env.DEFAULT_MAX_SPANS_PER_TRACE
    max_buffer_bytes: int = DEFAULT_MAX_BUFFER_BYTES
    max_pending_spans: int = DEFAULT_MAX_PENDING_SPANS
    trace_idle_timeout: float = env.DEFAULT_TRACE_IDLE_TIMEOUT
    max_queue_size: int = env.DEFAULT_QUEUE_SIZE
    concurrency: int = env.DEFAULT_CONCURRENCY
    isolation: str = env.DEFAULT_ISOLATION
    sessions: SessionLimits = field(default_factory=SessionLimits)
    emit: Collection[str] = env.DEFAULT_EMIT
    kafka_bootstrap_servers: str | None = None
    metrics: tuple[str, ...] = ()  # the fields before it keep their positions
    explanations: bool = env.DEFAULT_EXPLANATIONS
    max_trace_age: float = env.DEFAULT_MAX_TRACE_AGE  # last: the fields before it keep their positions

    def __post_init__(self) -> None:
        converted = adk_eval_set(self.eval_set, "eval_set")
        if converted is not None:  # frozen: set once, here
            object.__setattr__(self, "eval_set", converted)
        check_field_types(self)
        if not 0 <= self.sample_rate <= 1:
            raise ValueError(f"sample_rate must be in [0, 1], got {self.sample_rate!r}")
        if self.isolation not in (env.ISOLATION_THREAD, env.ISOLATION_PROCESS):
            raise ValueError(f"isolation must be 'thread' or 'process', got {self.isolation!r}")
        check_worker_bounds(max_queue_size=self.max_queue_size, concurrency=self.concurrency)
        try:
            object.__setattr__(self, "emit", emit_signals(self.emit))  # frozen: normalised once, here
        except ValueError as error:
            raise ValueError(f"emit={self.emit!r}: {error}") from None
        self.limits  # noqa: B018 (validates them)
        if isinstance(self.eval_set, (str, Path)):  # frozen: set once, here
            object.__setattr__(self, "eval_set", eval_set_setting(str(self.eval_set), setting="eval_set"))
        for name in ("agent_names", "root_span_names"):  # a string is read as the variable is, not as its characters
            object.__setattr__(self, name, names_setting(getattr(self, name)))
        object.__setattr__(self, "metrics", metric_names_setting(self.metrics))  # checked where the registry is

    @property
    def limits(self) -> Limits:
        """The bounds of the span intake and of the per-trace buffers."""
        return Limits(
            self.max_open_traces,
            self.max_spans_per_trace,
            self.max_buffer_bytes,
            self.max_pending_spans,
            self.trace_idle_timeout,
            self.max_trace_age,
        )

    @property
    def golden(self) -> EvalSet | None:
        """``eval_set``, loaded (a path given is read when the settings are made)."""
        return self.eval_set if isinstance(self.eval_set, EvalSet) else None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ProcessorSettings:
        """Settings from ``OTEL_EVAL_*``.

        Raises:
            ConfigurationError: a number that is not one or is out of range, an unknown signal in
                ``OTEL_EVAL_EMIT``, or ``OTEL_EVAL_EVAL_SET`` cannot be read (evaluating otherwise than configured
                would be worse than failing at start-up).
        """
        environ = os.environ if environ is None else environ
        eval_set_path = environ.get(env.OTEL_EVAL_EVAL_SET, "").strip()
        return cls(
            eval_set=eval_set_setting(eval_set_path, setting=env.OTEL_EVAL_EVAL_SET),
            sample_rate=number_setting(
                environ, env.OTEL_EVAL_SAMPLE_RATE, DEFAULT_SAMPLE_RATE, valid=_fraction, expected="a number in [0, 1]"
            ),
            sample_priority=flag_setting(environ, env.OTEL_EVAL_SAMPLE_PRIORITY, env.DEFAULT_SAMPLE_PRIORITY),
            agent_names=names_setting(environ.get(env.OTEL_EVAL_AGENT_NAMES, "")),
            root_span_names=names_setting(environ.get(env.OTEL_EVAL_ROOT_SPAN_NAMES, "")),
            max_open_traces=_count(environ, env.OTEL_EVAL_MAX_OPEN_TRACES, env.DEFAULT_MAX_OPEN_TRACES),
            max_spans_per_trace=_count(environ, env.OTEL_EVAL_MAX_SPANS_PER_TRACE, env.DEFAULT_MAX_SPANS_PER_TRACE),
            max_buffer_bytes=_count(environ, env.OTEL_EVAL_MAX_BUFFER_BYTES, DEFAULT_MAX_BUFFER_BYTES),
            max_pending_spans=_count(environ, env.OTEL_EVAL_MAX_PENDING_SPANS, DEFAULT_MAX_PENDING_SPANS),
            trace_idle_timeout=number_setting(
                environ,
                env.OTEL_EVAL_TRACE_IDLE_TIMEOUT,
                env.DEFAULT_TRACE_IDLE_TIMEOUT,
                valid=_positive,
                expected="seconds (a number > 0)",
            ),
            max_queue_size=_count(environ, env.OTEL_EVAL_QUEUE_SIZE, env.DEFAULT_QUEUE_SIZE),
            concurrency=_count(environ, env.OTEL_EVAL_WORKER_CONCURRENCY, env.DEFAULT_CONCURRENCY),
            isolation=_isolation(environ),
            sessions=_session_limits(environ),
            emit=emit_setting(environ.get(env.OTEL_EVAL_EMIT, ""), setting=env.OTEL_EVAL_EMIT),
            kafka_bootstrap_servers=environ.get(env.OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS, "").strip() or None,
            metrics=metric_names_setting(environ.get(env.OTEL_EVAL_METRICS, "")),
            explanations=flag_setting(environ, env.OTEL_EVAL_EXPLANATIONS, env.DEFAULT_EXPLANATIONS),
            max_trace_age=number_setting(
                environ,
                env.OTEL_EVAL_MAX_TRACE_AGE,
                env.DEFAULT_MAX_TRACE_AGE,
                valid=_positive,
                expected="seconds (a number > 0)",
            ),
        )


_SETTING_NAMES: Final = frozenset(setting.name for setting in fields(ProcessorSettings))
_SETTINGS_REPLACE_ENVIRONMENT: Final = (
    "EvaluationSpanProcessor.from_env(settings=...): the settings given replace every setting read from the "
    "OTEL_EVAL_* variables (OTEL_EVAL_EMIT, OTEL_EVAL_SAMPLE_RATE, ... are not used); to change some of them, pass "
    "them as keywords (from_env(sample_rate=0.1)), or use EvaluationSpanProcessor(settings=...) without from_env"
)
_EMBEDDED_OBJECTS: Final = EMBEDDED_OPTIONS - _SETTING_NAMES
"""The embedded worker's objects (``judge``, ``tracer_provider``, ``logger_provider``, ``sinks``): arguments of the
processor that are not used when an exporter (Kafka, or the caller's) does the evaluating."""


def _plan_criteria_setting(criteria: Mapping[str, Any], source: str) -> None:
    """Plans ``OTEL_EVAL_CRITERIA``'s criteria now, so that one the processor cannot run names the variable and the
    file it names, ``source`` (the processor names only the criterion: ``criteria.halucinations_v1: unknown ...``).

    Raises:
        ConfigurationError: ``OTEL_EVAL_CRITERIA: `` and the problem (a criterion, a metric, custom metric code).
    """
    try:
        parsed = criteria_from(criteria)
        registry = registry_with_custom_metrics(criteria)
    except ConfigurationError as error:
        raise ConfigurationError(f"{source}: {error}") from None
    plan_own_criteria(parsed or {}, registry=registry, source=source)


def processor_options(environ: Mapping[str, str] | None, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments of ``EvaluationSpanProcessor``: ``criteria``, ``settings`` and its objects, from the environment,
    then ``overrides`` (plain values, such as ``sample_rate=``, replace the settings' own).

    With ``OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS`` set (and no ``exporter`` override), includes a Kafka exporter and the
    pipeline counters it shares with the processor; the embedded worker's overrides (``judge=``, ``sinks=``, ...)
    then do not apply (the workers evaluate) and are left out, so the same line serves both set-ups.

    Raises:
        ConfigurationError: a bad ``OTEL_EVAL_*`` value, or bad Kafka settings.
        TypeError: an override that is neither a setting nor an argument of the processor (raised by it).
    """
    environ = os.environ if environ is None else environ
    if "settings" in overrides:  # passed on whole, as an object: the environment's are not merged into it
        logger.warning(_SETTINGS_REPLACE_ENVIRONMENT)
    settings = ProcessorSettings.from_env(environ)
    settings = replace(settings, **{name: value for name, value in overrides.items() if name in _SETTING_NAMES})
    raw = environ.get(env.OTEL_EVAL_CRITERIA)
    criteria = criteria_setting(raw, setting=env.OTEL_EVAL_CRITERIA)
    if criteria is not None and "criteria" not in overrides:
        _plan_criteria_setting(criteria, setting_source(raw, setting=env.OTEL_EVAL_CRITERIA))
    options: dict[str, Any] = {"criteria": criteria, "settings": settings}
    objects = {name: value for name, value in overrides.items() if name not in _SETTING_NAMES}
    if "exporter" in overrides or not settings.kafka_bootstrap_servers:
        options.update(objects)
        if settings.isolation == env.ISOLATION_PROCESS and "isolation" not in overrides:
            _leave_out_providers(options)
        return options
    from otel_eval.transport.kafka import KafkaInvocationExporter

    ignored = [f"{name}=" for name in sorted(set(overrides) & EMBEDDED_OPTIONS)]
    if settings.isolation != env.DEFAULT_ISOLATION:
        ignored.append(f"{env.OTEL_EVAL_ISOLATION}={settings.isolation}")
    if settings.metrics:  # the workers' own OTEL_EVAL_METRICS chooses what they run
        ignored.append(f"{env.OTEL_EVAL_METRICS}={','.join(settings.metrics)}")
    options["settings"] = replace(settings, isolation=env.DEFAULT_ISOLATION, metrics=())
    if ignored:
        logger.info("%s is set: the workers evaluate, so %s are not used here", env.OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS,
                    ", ".join(ignored))  # fmt: skip
    pipeline = PipelineMetrics(overrides.get("meter_provider"), transport=semconv.TRANSPORT_KAFKA)
    options["exporter"] = KafkaInvocationExporter.from_env(
        environ, meter_provider=overrides.get("meter_provider"), pipeline=pipeline
    )
    options["pipeline"] = pipeline
    options.update((name, value) for name, value in objects.items() if name not in _EMBEDDED_OBJECTS)
    return options


def _leave_out_providers(options: dict[str, Any]) -> None:
    """``OTEL_EVAL_ISOLATION=process`` chose where the scores go (the evaluation process's exporters): the providers
    the same ``from_env`` line passes for the in-thread set-up are left out, said once at INFO, as with Kafka.
    (Passed to the constructor with ``isolation="process"``, they are refused.)"""
    left_out = sorted(name for name in _THREAD_ONLY_PROVIDERS if options.get(name) is not None)
    for name in left_out:
        del options[name]
    if left_out:
        logger.info(
            "%s=process: the evaluation process exports the scores as OTEL_TRACES_EXPORTER, OTEL_LOGS_EXPORTER and "
            "OTEL_METRICS_EXPORTER say, so %s are not used there",
            env.OTEL_EVAL_ISOLATION,
            ", ".join(f"{name}=" for name in left_out),
        )


def _isolation(environ: Mapping[str, str]) -> str:
    value = environ.get(env.OTEL_EVAL_ISOLATION, "").strip().lower() or env.DEFAULT_ISOLATION
    if value not in (env.ISOLATION_THREAD, env.ISOLATION_PROCESS):
        raise ConfigurationError(
            f"{env.OTEL_EVAL_ISOLATION}={value!r}: expected {env.ISOLATION_THREAD!r} or {env.ISOLATION_PROCESS!r}"
        )
    return value


def _session_limits(environ: Mapping[str, str]) -> SessionLimits:
    return SessionLimits(
        idle_timeout=number_setting(
            environ,
            env.OTEL_EVAL_SESSION_IDLE_TIMEOUT,
            env.DEFAULT_SESSION_IDLE_TIMEOUT,
            valid=_positive,
            expected="seconds (a number > 0)",
        ),
        max_turns=_count(environ, env.OTEL_EVAL_SESSION_MAX_TURNS, env.DEFAULT_SESSION_MAX_TURNS),
        max_sessions=_count(environ, env.OTEL_EVAL_MAX_OPEN_SESSIONS, env.DEFAULT_MAX_OPEN_SESSIONS),
        max_bytes=_count(environ, env.OTEL_EVAL_MAX_SESSION_BYTES, env.DEFAULT_MAX_SESSION_BYTES),
    )


def _count(environ: Mapping[str, str], name: str, default: int) -> int:
    return number_setting(environ, name, default, valid=_positive, expected="an integer >= 1")


def _positive(value: float) -> bool:
    return value > 0


def _fraction(value: float) -> bool:
    return 0 <= value <= 1


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of the span intake and the per-trace buffers (see :mod:`otel_eval.processor`).

    Raises:
        ValueError: a limit below 1, or a ``trace_idle_timeout`` or ``max_trace_age`` that is not positive.
    """

    max_open_traces: int
    max_spans_per_trace: int
    max_buffer_bytes: int
    max_pending_spans: int
    trace_idle_timeout: float
    max_trace_age: float = env.DEFAULT_MAX_TRACE_AGE

    def __post_init__(self) -> None:
        for limit in fields(self):
            value = getattr(self, limit.name)
            if limit.name in ("trace_idle_timeout", "max_trace_age"):
                if value <= 0:
                    raise ValueError(f"{limit.name} must be positive, got {value!r}")
            elif value < 1:
                raise ValueError(f"{limit.name} must be at least 1, got {value!r}")


class Engine(Protocol):
    """The ``SpanProcessor`` hooks, the processor's counters and its companion log record processor.

    The processor calls ``shutdown`` once and nothing but ``stats`` after it (the flag is the processor's).
    """

    pipeline: PipelineMetrics
    log_record_processor: EvaluationLogRecordProcessor

    def on_start(self, span: Span, parent_context: Context | None) -> None:
        """Takes a span's start. Never blocks."""

    def on_end(self, span: ReadableSpan) -> None:
        """Takes an ended span. Never blocks."""

    def force_flush(self, timeout_millis: int) -> bool:
        """Evaluates what is complete; False when ``timeout_millis`` passed first."""

    def shutdown(self, timeout_millis: int) -> None:
        """Stops intake and drains within ``timeout_millis``."""

    def stats(self) -> dict[str, int]:
        """The pipeline counts and the current occupancy."""


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """The arguments of :class:`~otel_eval.EvaluationSpanProcessor`, as each engine is built from them (the in-thread
    engine, :func:`~otel_eval.processor._thread_engine.in_thread_engine`; the evaluation process's feeder,
    :func:`~otel_eval.processor._process.exporters.process_engine`; the in-thread engine inside that process). Each
    field is the processor's argument of the same name (see its docs)."""

    criteria: Mapping[str, Any] | EvalConfig | None
    settings: ProcessorSettings
    exporter: InvocationExporter | None = None
    registry: MetricRegistry | None = None
    meter_provider: MeterProvider | None = None
    tracer_provider: TracerProvider | None = None
    logger_provider: LoggerProvider | None = None
    judge: Judge | None = None
    sinks: Sequence[RecordSink] = ()
    enrich: SpanProcessor | None = None
    enrichment_wait_seconds: float = 5.0
    pipeline: PipelineMetrics | None = None

    @property
    def crossing(self) -> dict[str, object]:
        """The objects that cannot cross into the evaluation process (``isolation="process"``): None when not
        given."""
        return {
            "exporter": self.exporter, "registry": self.registry, "pipeline": self.pipeline, "judge": self.judge,
            "tracer_provider": self.tracer_provider, "logger_provider": self.logger_provider,
        }  # fmt: skip
