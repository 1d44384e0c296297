"""The processor's ``OTEL_EVAL_*`` settings: parsed, logged and defaulted like the SDK's ``OTEL_BSP_*`` ones."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from otel_eval import environment_variables as env
from otel_eval import semconv
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.model import EvalSet
from otel_eval.model.loading import criteria_setting, eval_set_setting

logger = logging.getLogger(__name__)

DEFAULT_SAMPLE_RATE = 1.0
DEFAULT_MAX_OPEN_TRACES = 2048
DEFAULT_MAX_SPANS_PER_TRACE = 2048
DEFAULT_MAX_BUFFER_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_PENDING_SPANS = 8192
DEFAULT_TRACE_IDLE_TIMEOUT = 30.0
DEFAULT_QUEUE_SIZE = 1024
DEFAULT_CONCURRENCY = 16

NumberT = TypeVar("NumberT", int, float)


@dataclass(frozen=True, slots=True)
class ProcessorSettings:
    """Everything :meth:`EvaluationSpanProcessor.from_env` reads from the environment."""

    criteria: dict[str, Any] | None = None
    eval_set: EvalSet | None = None
    sample_rate: float = DEFAULT_SAMPLE_RATE
    agent_names: tuple[str, ...] = ()
    root_span_names: tuple[str, ...] = ()
    max_open_traces: int = DEFAULT_MAX_OPEN_TRACES
    max_spans_per_trace: int = DEFAULT_MAX_SPANS_PER_TRACE
    max_buffer_bytes: int = DEFAULT_MAX_BUFFER_BYTES
    max_pending_spans: int = DEFAULT_MAX_PENDING_SPANS
    trace_idle_timeout: float = DEFAULT_TRACE_IDLE_TIMEOUT
    max_queue_size: int = DEFAULT_QUEUE_SIZE
    concurrency: int = DEFAULT_CONCURRENCY
    kafka_bootstrap_servers: str | None = field(default=None)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ProcessorSettings:
        """Settings from ``OTEL_EVAL_*``. A bad number is logged and replaced by its default.

        Raises:
            ConfigurationError: ``OTEL_EVAL_CRITERIA`` or ``OTEL_EVAL_EVAL_SET`` cannot be read (evaluating other
                metrics than configured would be worse than failing at startup).
        """
        environ = os.environ if environ is None else environ
        eval_set_path = environ.get(env.OTEL_EVAL_EVAL_SET, "").strip()
        return cls(
            criteria=criteria_setting(environ.get(env.OTEL_EVAL_CRITERIA), setting=env.OTEL_EVAL_CRITERIA),
            eval_set=eval_set_setting(eval_set_path, setting=env.OTEL_EVAL_EVAL_SET),
            sample_rate=_number(environ, env.OTEL_EVAL_SAMPLE_RATE, float, DEFAULT_SAMPLE_RATE, lambda v: 0 <= v <= 1),
            agent_names=_names(environ.get(env.OTEL_EVAL_AGENT_NAMES, "")),
            root_span_names=_names(environ.get(env.OTEL_EVAL_ROOT_SPAN_NAMES, "")),
            max_open_traces=_number(environ, env.OTEL_EVAL_MAX_OPEN_TRACES, int, DEFAULT_MAX_OPEN_TRACES, _positive),
            max_spans_per_trace=_number(
                environ, env.OTEL_EVAL_MAX_SPANS_PER_TRACE, int, DEFAULT_MAX_SPANS_PER_TRACE, _positive
            ),
            max_buffer_bytes=_number(environ, env.OTEL_EVAL_MAX_BUFFER_BYTES, int, DEFAULT_MAX_BUFFER_BYTES, _positive),
            max_pending_spans=_number(
                environ, env.OTEL_EVAL_MAX_PENDING_SPANS, int, DEFAULT_MAX_PENDING_SPANS, _positive
            ),
            trace_idle_timeout=_number(
                environ, env.OTEL_EVAL_TRACE_IDLE_TIMEOUT, float, DEFAULT_TRACE_IDLE_TIMEOUT, _positive
            ),
            max_queue_size=_number(environ, env.OTEL_EVAL_QUEUE_SIZE, int, DEFAULT_QUEUE_SIZE, _positive),
            concurrency=_number(environ, env.OTEL_EVAL_WORKER_CONCURRENCY, int, DEFAULT_CONCURRENCY, _positive),
            kafka_bootstrap_servers=environ.get(env.OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS, "").strip() or None,
        )


def processor_options(environ: Mapping[str, str] | None, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments of ``EvaluationSpanProcessor`` from the environment (``overrides`` are merged by the caller).

    With ``OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS`` set (and no ``exporter`` override), includes a Kafka exporter and the
    pipeline counters it shares with the processor.

    Raises:
        ConfigurationError: unreadable ``OTEL_EVAL_CRITERIA`` / ``OTEL_EVAL_EVAL_SET``, or bad Kafka settings.
    """
    settings = ProcessorSettings.from_env(environ)
    options: dict[str, Any] = {
        "criteria": settings.criteria,
        "eval_set": settings.eval_set,
        "sample_rate": settings.sample_rate,
        "agent_names": settings.agent_names,
        "root_span_names": settings.root_span_names,
        "max_open_traces": settings.max_open_traces,
        "max_spans_per_trace": settings.max_spans_per_trace,
        "max_buffer_bytes": settings.max_buffer_bytes,
        "max_pending_spans": settings.max_pending_spans,
        "trace_idle_timeout": settings.trace_idle_timeout,
        "max_queue_size": settings.max_queue_size,
        "concurrency": settings.concurrency,
    }
    if settings.kafka_bootstrap_servers and "exporter" not in overrides:
        from otel_eval.transport.kafka import KafkaInvocationExporter

        pipeline = PipelineMetrics(overrides.get("meter_provider"), transport=semconv.TRANSPORT_KAFKA)
        options["exporter"] = KafkaInvocationExporter.from_env(
            environ, meter_provider=overrides.get("meter_provider"), pipeline=pipeline
        )
        options["pipeline"] = pipeline
    return options


def _positive(value: float) -> bool:
    return value > 0


def _number(
    environ: Mapping[str, str],
    name: str,
    kind: Callable[[str], NumberT],
    default: NumberT,
    valid: Callable[[Any], bool],
) -> NumberT:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        logger.warning("%s=%r is not a valid number; using the default %s", name, raw, default)
        return default
    if not valid(value):
        logger.warning("%s=%r is out of range; using the default %s", name, raw, default)
        return default
    return value


def _names(raw: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in raw.split(",") if name.strip())
