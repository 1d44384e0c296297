"""Scores -> OpenTelemetry: ``gen_ai.evaluation.result`` events, evaluation spans in the agent's trace, metrics.

:class:`Emitters` bundles what the worker core emits each :class:`~otel_eval.model.messages.EvaluationRecord`
through. Every emitter uses the global tracer/logger/meter provider unless one is passed in. Which emitters are made
is the configuration's (``OTEL_EVAL_EMIT``, :mod:`otel_eval.emit.selection`): one not made costs nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from opentelemetry._logs import LoggerProvider
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from otel_eval.emit.events import EvaluationEventEmitter
from otel_eval.emit.metrics import ScoreMetricsEmitter
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.emit.spans import EvaluationSpan, EvaluationSpanEmitter
from otel_eval.model.messages import EvaluationRecord

logger = logging.getLogger(__name__)

RecordSink = Callable[[Sequence[EvaluationRecord]], None]
"""Called once per evaluated request with all its records (root-span enrichment, the demo's table, tests)."""


class RecordEmitter(Protocol):
    """Turns one record into telemetry."""

    def emit(self, record: EvaluationRecord) -> None:
        """Emits ``record``."""


class Emitters:
    """The evaluation span emitter (wraps each metric run), per-record emitters and per-request sinks.

    An emitter or sink that raises is logged and skipped; the others still get the record.
    """

    def __init__(
        self,
        spans: EvaluationSpanEmitter | None,
        record_emitters: Sequence[RecordEmitter] = (),
        sinks: Sequence[RecordSink] = (),
    ) -> None:
        self.spans = spans
        self._record_emitters = list(record_emitters)
        self._sinks = list(sinks)

    @classmethod
    def create(
        cls,
        *,
        tracer_provider: TracerProvider | None = None,
        logger_provider: LoggerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        spans: bool = True,
        events: bool = True,
        metrics: bool = True,
        sinks: Sequence[RecordSink] = (),
    ) -> Emitters:
        """Evaluation spans, result events and score metrics (each can be switched off), plus ``sinks``."""
        record_emitters: list[RecordEmitter] = []
        if events:
            record_emitters.append(EvaluationEventEmitter(logger_provider))
        if metrics:
            record_emitters.append(ScoreMetricsEmitter(meter_provider))
        return cls(EvaluationSpanEmitter(tracer_provider) if spans else None, record_emitters, sinks)

    def add_sink(self, sink: RecordSink) -> None:
        """Also hands every request's records to ``sink``."""
        self._sinks.append(sink)

    def emit(self, record: EvaluationRecord) -> None:
        """Emits ``record`` through every per-record emitter."""
        for emitter in self._record_emitters:
            try:
                emitter.emit(record)
            except Exception:  # one broken exporter must not lose the other signals
                logger.exception("emitter %s failed on result %s", type(emitter).__name__, record.result_id)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Waits for the sinks that deliver later (the backend sinks) to deliver what they hold; False when
        ``timeout_millis`` passed first."""
        deadline = time.monotonic() + max(0, timeout_millis) / 1000
        flushed = True
        for sink in self._sinks:
            flush = getattr(sink, "force_flush", None)
            if callable(flush):
                flushed = bool(flush(max(0, int((deadline - time.monotonic()) * 1000)))) and flushed
        return flushed

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """Lets the sinks that deliver later deliver within ``timeout_millis``, then stops them."""
        deadline = time.monotonic() + max(0, timeout_millis) / 1000
        for sink in self._sinks:
            stop = getattr(sink, "shutdown", None)
            if callable(stop):
                try:
                    stop(max(0, int((deadline - time.monotonic()) * 1000)))
                except Exception:  # one sink must not keep the others from stopping
                    logger.exception("result sink %r failed to shut down", sink)

    def deliver(self, records: Sequence[EvaluationRecord]) -> None:
        """Hands one request's records to every sink."""
        for sink in self._sinks:
            try:
                sink(records)
            except Exception:  # a failing sink must not affect the others
                logger.exception("result sink %r failed", sink)


__all__ = [
    "Emitters",
    "EvaluationEventEmitter",
    "EvaluationSpan",
    "EvaluationSpanEmitter",
    "PipelineMetrics",
    "RecordEmitter",
    "RecordSink",
    "ScoreMetricsEmitter",
]
