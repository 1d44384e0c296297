"""The worker service's own instruments: consumer lag, batch duration, dead letters, duplicates, published results,
errors, broker outages. (The judge reports its own calls, tokens, cost and latency: ``otel_eval.judge.telemetry``.)"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from otel_eval import semconv
from otel_eval.evaluation.request_criteria import Refusal
from otel_eval.instruments import LogRecordDrops, observe_gauge


class WorkerMetrics(LogRecordDrops):
    """Instruments of one worker, with in-process totals (:meth:`snapshot`) for tests and logs."""

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        super().__init__(meter_provider)
        meter = self.meter
        self._lag: dict[tuple[str, int], int] = {}
        # One gauge per meter provider and name, fed by every worker (and Kafka exporter) on it: the SDK keeps the
        # first callbacks of a name only. A partition two workers report (two groups) is the one further behind.
        observe_gauge(
            meter_provider,
            semconv.METRIC_CONSUMER_LAG,
            "{message}",
            "Messages not yet consumed, per topic partition (high watermark minus position).",
            self,
            WorkerMetrics._observe_lag,
            combine=max,
        )
        self._batch_duration = meter.create_histogram(
            semconv.METRIC_BATCH_DURATION,
            unit="s",
            description="From fetching a batch to committing its offsets.",
            explicit_bucket_boundaries_advisory=semconv.BATCH_DURATION_BUCKETS,
        )
        self._duplicates = self._counter(
            semconv.METRIC_WORKER_DUPLICATES_SKIPPED,
            "{invocation}",
            "Redelivered invocations skipped: already emitted.",
        )
        self._dead_letters = self._counter(
            semconv.METRIC_WORKER_DEAD_LETTERS, "{message}", "Messages sent to the dead-letter topic."
        )
        self._errors = self._counter(semconv.METRIC_WORKER_ERRORS, "{error}", "Worker failures by error.type.")
        self._criteria_refused = self._counter(
            semconv.METRIC_WORKER_CRITERIA_REFUSED, "{request}", "Request criteria refused by the worker's policy."
        )
        self._spans_dropped = self._counter(  # the pipeline's instrument (same name, unit and description)
            semconv.METRIC_SPANS_DROPPED,
            "{span}",
            "Ended spans the processor did not buffer, by otel_eval.drop.reason.",
        )
        self._failed_attempts = self._failed_attempts_counter()
        self._published = self._counter(
            semconv.METRIC_WORKER_RESULTS_PUBLISHED, "{result}", "Results published to Kafka."
        )
        self._outage_seconds: Callable[[], float] = lambda: 0.0
        observe_gauge(
            meter_provider,
            semconv.METRIC_TRANSPORT_OUTAGE_DURATION,
            "s",
            "Seconds since the transport's broker became unreachable; 0 while it is reachable",
            self,
            WorkerMetrics._observe_outage,
            combine=max,  # several workers or exporters of the process: the longest outage
        )

    def lag(self, topic: str, partition: int, value: int) -> None:
        """Records the lag of one partition."""
        with self._lock:
            self._lag[(topic, partition)] = max(0, value)

    def forget_lag(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Stops reporting the lag of revoked partitions."""
        with self._lock:
            for key in partitions:
                self._lag.pop(key, None)

    def batch(self, seconds: float, source: str) -> None:
        """One batch finished."""
        self._batch_duration.record(seconds, {semconv.OTEL_EVAL_SOURCE: source})
        self._count("batches", 1)

    def dead_lettered(self, topic: str, reason: str = semconv.DROP_UNREADABLE) -> None:
        """One message went to the dead-letter topic, for ``reason`` (unreadable, or past its deadline)."""
        self._add(
            self._dead_letters, "dead_letters", 1, {semconv.KAFKA_TOPIC: topic, semconv.OTEL_EVAL_DROP_REASON: reason}
        )
        self._count(f"dead_letters.{reason}", 1)

    def criteria_refused(self, refusal: Refusal) -> None:
        """A request's criteria were refused (see :mod:`otel_eval.evaluation.request_criteria`)."""
        reason = refusal.reason
        self._add(self._criteria_refused, f"criteria_refused.{reason}", 1, {semconv.OTEL_EVAL_REFUSAL_REASON: reason})

    def duplicates_skipped(self, count: int) -> None:
        """Invocations skipped as already evaluated."""
        self._add(self._duplicates, "duplicates_skipped", count)

    def spans_dropped(self, reason: str, count: int) -> None:
        """Collector-path spans not gathered into a trace, for ``reason`` (``late``, ``tenant_max_open_traces``,
        ``max_spans_per_trace``)."""
        self._add(self._spans_dropped, f"spans.dropped.{reason}", count, {semconv.OTEL_EVAL_DROP_REASON: reason})

    def published(self, count: int) -> None:
        """Results acknowledged by the results topic."""
        self._add(self._published, "results_published", count)

    def error(self, error_type: str) -> None:
        """A worker-level failure (commit, publish, telemetry flush, ...)."""
        self._add(self._errors, f"errors.{error_type}", 1, {semconv.ERROR_TYPE: error_type})

    def transport_failed_attempts(self, count: int) -> None:
        """Failed attempts of the worker's Kafka clients to reach the broker."""
        attributes = {semconv.OTEL_EVAL_TRANSPORT: semconv.TRANSPORT_KAFKA}
        self._add(self._failed_attempts, "transport.failed_attempts", count, attributes)

    def watch_outage(self, outage_seconds: Callable[[], float]) -> None:
        """Reports ``outage_seconds()`` as the outage-duration gauge."""
        self._outage_seconds = outage_seconds

    def assigned(self) -> None:
        """The group assigned partitions to this worker (at each rebalance; in-process total ``assignments``)."""
        self._count("assignments", 1)

    def evaluated(self, count: int) -> None:
        """Invocations evaluated by this worker (in-process total only; the core counts them as telemetry)."""
        self._count("evaluated", count)

    def _observe_outage(self, _options: CallbackOptions) -> list[Observation]:
        return [Observation(self._outage_seconds(), {semconv.OTEL_EVAL_TRANSPORT: semconv.TRANSPORT_KAFKA})]

    def _observe_lag(self, _options: CallbackOptions) -> list[Observation]:
        with self._lock:
            items = list(self._lag.items())
        return [
            Observation(value, {semconv.KAFKA_TOPIC: topic, semconv.KAFKA_PARTITION: str(partition)})
            for (topic, partition), value in items
        ]
