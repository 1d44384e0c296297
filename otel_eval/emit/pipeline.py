"""The evaluation pipeline's own metrics: sampled, dropped (by reason), evaluated, errored, idle-flushed, queue size.

Each count is also kept in-process (:meth:`PipelineMetrics.snapshot`) so the demo and tests can read them without
a metric reader.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterable

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from otel_eval import semconv
from otel_eval.version import __version__


class PipelineMetrics:
    """Counters and the queue-size gauge shared by the processor, the transport and the worker core.

    Args:
        meter_provider: Provider to create instruments with; the global one (resolved lazily) when None.
        transport: Value of ``otel_eval.transport`` on the queue-size gauge (``embedded`` or ``kafka``).
    """

    def __init__(self, meter_provider: MeterProvider | None = None, *, transport: str = "embedded") -> None:
        meter = metrics.get_meter(semconv.INSTRUMENTATION_SCOPE, __version__, meter_provider=meter_provider)
        self._transport = transport
        self._sampled = meter.create_counter(
            semconv.METRIC_INVOCATIONS_SAMPLED, unit="{invocation}", description="Invocations selected for evaluation."
        )
        self._invocations_dropped = meter.create_counter(
            semconv.METRIC_INVOCATIONS_DROPPED,
            unit="{invocation}",
            description="Invocations (or whole traces) dropped before evaluation, by otel_eval.drop.reason.",
        )
        self._spans_dropped = meter.create_counter(
            semconv.METRIC_SPANS_DROPPED,
            unit="{span}",
            description="Ended spans the processor did not buffer, by otel_eval.drop.reason.",
        )
        self._log_records_dropped = meter.create_counter(
            semconv.METRIC_LOG_RECORDS_DROPPED,
            unit="{log_record}",
            description="GenAI content log records not joined to their trace, by otel_eval.drop.reason.",
        )
        self._evaluated = meter.create_counter(
            semconv.METRIC_INVOCATIONS_EVALUATED, unit="{invocation}", description="Invocations evaluated."
        )
        self._errors = meter.create_counter(
            semconv.METRIC_EVALUATION_ERRORS,
            unit="{error}",
            description="Metric runs that could not evaluate, by metric and error.type.",
        )
        self._idle_flushed = meter.create_counter(
            semconv.METRIC_TRACES_IDLE_FLUSHED,
            unit="{trace}",
            description="Traces evaluated after the idle timeout because their root span never ended locally.",
        )
        self._failed_attempts = meter.create_counter(
            semconv.METRIC_TRANSPORT_FAILED_ATTEMPTS,
            unit="{attempt}",
            description="Failed attempts to reach the transport's broker (connections, metadata, sends).",
        )
        self._queues: dict[str, Callable[[], int]] = {}
        meter.create_observable_gauge(
            semconv.METRIC_QUEUE_SIZE,
            callbacks=[_weak_callback(weakref.ref(self))],
            unit="{item}",
            description="Items waiting in the evaluation pipeline's queues, by queue.",
        )
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _count(self, key: str, amount: int) -> None:
        with self._lock:
            self._counts[key] += amount

    def sampled(self, count: int = 1) -> None:
        """Invocations that passed sampling and filters."""
        if count:
            self._sampled.add(count)
            self._count("invocations.sampled", count)

    def invocations_dropped(self, reason: str, count: int = 1) -> None:
        """Invocations (or traces) dropped for ``reason`` (one of :mod:`otel_eval.semconv`'s ``DROP_*``)."""
        if count:
            self._invocations_dropped.add(count, {semconv.OTEL_EVAL_DROP_REASON: reason})
            self._count(f"invocations.dropped.{reason}", count)

    def spans_dropped(self, reason: str, count: int = 1) -> None:
        """Spans dropped for ``reason``."""
        if count:
            self._spans_dropped.add(count, {semconv.OTEL_EVAL_DROP_REASON: reason})
            self._count(f"spans.dropped.{reason}", count)

    def log_records_dropped(self, reason: str, count: int = 1) -> None:
        """GenAI content log records dropped for ``reason`` (``late``, ``no_trace``, a limit, ``shutdown``)."""
        if count:
            self._log_records_dropped.add(count, {semconv.OTEL_EVAL_DROP_REASON: reason})
            self._count(f"log_records.dropped.{reason}", count)

    def evaluated(self, count: int = 1) -> None:
        """Invocations whose evaluation finished (whatever the scores)."""
        if count:
            self._evaluated.add(count)
            self._count("invocations.evaluated", count)

    def errored(self, metric_name: str, error_type: str) -> None:
        """A metric that could not evaluate an invocation."""
        self._errors.add(1, {semconv.GEN_AI_EVALUATION_NAME: metric_name, semconv.ERROR_TYPE: error_type})
        self._count(f"evaluation.errors.{error_type}", 1)

    def idle_flushed(self, count: int = 1) -> None:
        """Traces handed on by the idle timeout."""
        if count:
            self._idle_flushed.add(count)
            self._count("traces.idle_flushed", count)

    def transport_failed_attempts(self, count: int = 1) -> None:
        """Failed attempts of the transport to reach its broker (see :mod:`otel_eval.transport.kafka`)."""
        if count:
            self._failed_attempts.add(count, {semconv.OTEL_EVAL_TRANSPORT: self._transport})
            self._count("transport.failed_attempts", count)

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

    def snapshot(self) -> dict[str, int]:
        """In-process totals, e.g. ``{"spans.dropped.queue_full": 3, "invocations.evaluated": 10}``."""
        with self._lock:
            return dict(self._counts)


def _weak_callback(
    weak_pipeline: weakref.ref[PipelineMetrics],
) -> Callable[[CallbackOptions], Iterable[Observation]]:
    # The meter (often the global one) lives forever; it must not keep the pipeline and its queues alive.
    def observe(options: CallbackOptions) -> Iterable[Observation]:
        pipeline = weak_pipeline()
        return pipeline._observe_queues(options) if pipeline is not None else ()

    return observe
