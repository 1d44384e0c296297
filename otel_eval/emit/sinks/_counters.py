"""The ``otel_eval.sink.*`` counters of one backend sink, by ``otel_eval.sink`` and ``otel_eval.sink.reason``."""

from __future__ import annotations

from opentelemetry.metrics import MeterProvider

from otel_eval import semconv
from otel_eval.instruments import InstrumentHolder


class SinkMetrics(InstrumentHolder):
    """``otel_eval.sink.delivered``, ``.dropped`` and ``.failed_attempts`` of one sink, with in-process totals."""

    def __init__(self, sink: str, meter_provider: MeterProvider | None = None) -> None:
        super().__init__(meter_provider)
        self._sink = sink
        self._delivered = self._counter(semconv.METRIC_SINK_DELIVERED, "{score}", "Scores a backend sink delivered.")
        self._dropped = self._counter(
            semconv.METRIC_SINK_DROPPED, "{score}", "Scores a backend sink gave up on, by otel_eval.sink.reason."
        )
        self._failed = self._counter(
            semconv.METRIC_SINK_FAILED_ATTEMPTS,
            "{attempt}",
            "A backend sink's requests that failed (retried or not), by otel_eval.sink.reason.",
        )

    def delivered(self, count: int) -> None:
        """Counts ``count`` results the backend took."""
        self._add(self._delivered, "delivered", count, {semconv.OTEL_EVAL_SINK: self._sink})

    def dropped(self, reason: str, count: int) -> None:
        """Counts ``count`` results given up for ``reason`` (``semconv.SINK_*``)."""
        attributes = {semconv.OTEL_EVAL_SINK: self._sink, semconv.OTEL_EVAL_SINK_REASON: reason}
        self._add(self._dropped, f"dropped.{reason}", count, attributes)

    def failed_attempt(self, reason: str) -> None:
        """Counts one failed request, for ``reason``."""
        attributes = {semconv.OTEL_EVAL_SINK: self._sink, semconv.OTEL_EVAL_SINK_REASON: reason}
        self._add(self._failed, f"failed_attempts.{reason}", 1, attributes)
