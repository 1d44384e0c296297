"""What :class:`~otel_eval.EvaluationSpanProcessor` delegates to: an engine (in-thread or evaluation process) and
the limits both apply.

The processor is a thin facade: it checks its arguments, picks the engine ``isolation`` names, and forwards the
``SpanProcessor`` hooks to it, never letting an engine's failure reach the agent. Both engines take spans the same
way (a bounded queue per hook, drained by one background thread) and evaluate with the same assembler and core.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Protocol

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span

from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.processor._logs import EvaluationLogRecordProcessor


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
