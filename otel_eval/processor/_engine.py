"""What :class:`~otel_eval.EvaluationSpanProcessor` delegates to: an engine (in-thread or evaluation process), the
options it is built from (:class:`EngineOptions`, the processor's arguments, declared once) and the limits both apply.

The processor is a thin facade: it checks its arguments, picks the engine ``isolation`` names, and forwards the
``SpanProcessor`` hooks to it, never letting an engine's failure reach the agent. Both engines take spans the same
way (a bounded queue per hook, drained by one background thread) and evaluate with the same assembler and core.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry._logs import LoggerProvider
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import TracerProvider

from otel_eval.emit import RecordSink
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.judge import Judge
from otel_eval.metrics import MetricRegistry
from otel_eval.model import EvalConfig
from otel_eval.processor._logs import EvaluationLogRecordProcessor
from otel_eval.transport.base import InvocationExporter

if TYPE_CHECKING:
    from otel_eval.processor._settings import ProcessorSettings


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of the span intake and the per-trace buffers (see :mod:`otel_eval.processor`).

    Raises:
        ValueError: a limit below 1, or a ``trace_idle_timeout`` that is not positive.
    """

    max_open_traces: int
    max_spans_per_trace: int
    max_buffer_bytes: int
    max_pending_spans: int
    trace_idle_timeout: float

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if field.name == "trace_idle_timeout":
                if value <= 0:
                    raise ValueError(f"trace_idle_timeout must be positive, got {value!r}")
            elif value < 1:
                raise ValueError(f"{field.name} must be at least 1, got {value!r}")


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
