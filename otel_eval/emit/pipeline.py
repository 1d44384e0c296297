"""The evaluation pipeline's own metrics: sampled, dropped (by reason), evaluated, errored, idle-flushed, queue size.

Each count is also kept in-process (:meth:`PipelineMetrics.snapshot`) so the demo and tests can read them without
a metric reader.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from otel_eval import semconv
from otel_eval.instruments import LogRecordDrops, observe_gauge

_SAMPLED = "invocations.sampled"
_EVALUATED = "invocations.evaluated"


class PipelineMetrics(LogRecordDrops):
    """Counters and the queue-size gauge shared by the processor, the transport and the worker core.

    Args:
        meter_provider: Provider to create instruments with; the global one (resolved lazily) when None.
        transport: Value of ``otel_eval.transport`` on the queue-size gauge (``embedded`` or ``kafka``).
    """

    def __init__(self, meter_provider: MeterProvider | None = None, *, transport: str = "embedded") -> None:
        super().__init__(meter_provider)
        self._transport = transport
        # Added to per invocation: observed at collection time, not an SDK measurement each.
        self._observed_counter(
            semconv.METRIC_INVOCATIONS_SAMPLED, "{invocation}", "Invocations selected for evaluation.", _SAMPLED
        )
        self._invocations_dropped = self._counter(
            semconv.METRIC_INVOCATIONS_DROPPED,
            "{invocation}",
            "Invocations (or whole traces) dropped before evaluation, by otel_eval.drop.reason.",
        )
        self._observed_counter(
            semconv.METRIC_INVOCATIONS_EVALUATED, "{invocation}", "Invocations evaluated.", _EVALUATED
        )
        self._spans_dropped = self._counter(
            semconv.METRIC_SPANS_DROPPED,
            "{span}",
            "Ended spans the processor did not buffer, by otel_eval.drop.reason.",
        )
        self._failed_attempts = self._failed_attempts_counter()
        self._errors = self._counter(
            semconv.METRIC_EVALUATION_ERRORS,
            "{error}",
            "Metric runs that could not evaluate, by metric and error.type.",
        )
        self._queues: dict[str, Callable[[], int]] = {}
        self._idle_flushed = self._counter(
            semconv.METRIC_TRACES_IDLE_FLUSHED,
            "{trace}",
            "Traces evaluated after the idle timeout because their root span never ended locally.",
        )
        observe_gauge(
            meter_provider,
            semconv.METRIC_QUEUE_SIZE,
            "{item}",
            "Items waiting in the evaluation pipeline's queues, by queue.",
            self,
            PipelineMetrics._observe_queues,
        )

    def sampled(self, count: int = 1) -> None:
        """Invocations that passed sampling and filters."""
        self._add_observed(_SAMPLED, count)

    def invocations_dropped(self, reason: str, count: int = 1) -> None:
        """Invocations (or traces) dropped for ``reason`` (one of :mod:`otel_eval.semconv`'s ``DROP_*``)."""
        self._add(
            self._invocations_dropped, f"invocations.dropped.{reason}", count, {semconv.OTEL_EVAL_DROP_REASON: reason}
        )

    def spans_dropped(self, reason: str, count: int = 1) -> None:
        """Spans dropped for ``reason``."""
        self._add(self._spans_dropped, f"spans.dropped.{reason}", count, {semconv.OTEL_EVAL_DROP_REASON: reason})

    def evaluated(self, count: int = 1) -> None:
        """Invocations whose evaluation finished (whatever the scores)."""
        self._add_observed(_EVALUATED, count)

    def errored(self, metric_name: str, error_type: str) -> None:
        """A metric that could not evaluate an invocation (a session's earlier turn of a conversation-level metric,
        :data:`~otel_eval.semconv.ERROR_TYPE_SCORED_ON_LAST_TURN`, is no error and not counted)."""
        if error_type == semconv.ERROR_TYPE_SCORED_ON_LAST_TURN:
            return
        attributes = {semconv.GEN_AI_EVALUATION_NAME: metric_name, semconv.ERROR_TYPE: error_type}
        self._add(self._errors, f"evaluation.errors.{error_type}", 1, attributes)

    def idle_flushed(self, count: int = 1) -> None:
        """Traces handed on by the idle timeout."""
        self._add(self._idle_flushed, "traces.idle_flushed", count)

    def transport_failed_attempts(self, count: int = 1) -> None:
        """Failed attempts of the transport to reach its broker (see :mod:`otel_eval.transport.kafka`)."""
        attributes = {semconv.OTEL_EVAL_TRANSPORT: self._transport}
        self._add(self._failed_attempts, "transport.failed_attempts", count, attributes)

    def register_queue(self, name: str, size: Callable[[], int]) -> None:
        """Reports ``size()`` as the queue-size gauge with ``otel_eval.queue.name``-like attribute ``name``."""
        self._queues[name] = size

    def _observe_queues(self, options: CallbackOptions) -> Iterable[Observation]:
        observations = []
        for name, size in list(self._queues.items()):
            try:
                value = size()
            except Exception:  # noqa: BLE001 - a gauge callback must not fail the whole collection
                continue
            observations.append(
                Observation(value, {semconv.OTEL_EVAL_TRANSPORT: self._transport, semconv.OTEL_EVAL_QUEUE: name})
            )
        return observations
