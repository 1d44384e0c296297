"""``KafkaInvocationExporter``: the processor's transport to Kafka, an aiokafka producer on its own thread.

The processor calls :meth:`KafkaInvocationExporter.export` from its own thread; the call only appends to a bounded
buffer and returns. A daemon thread runs an asyncio loop with the producer: it serialises each request as JSON (the
versioned :class:`~otel_eval.model.messages.EvaluationRequest`), sends it keyed by session id (else trace id) with ``acks=all``
and compression, and keeps it counted against the bound until the broker acknowledged it. When the broker is down
or slow, requests wait in the buffer (the producer reconnects with backoff and re-sends what timed out); once the
buffer holds ``max_queue_size`` requests, new ones are dropped and counted by reason on
``otel_eval.invocations.dropped``. Nothing here blocks or raises into the agent.

During an outage the log stays quiet (see :mod:`otel_eval.transport._kafka_outage`): one WARNING when the broker
becomes unreachable, a summary at most once a minute, one INFO when it is back; aiokafka's per-attempt errors of this
producer go to this module's logger at DEBUG and are counted on ``otel_eval.transport.failed_attempts``.
:meth:`~KafkaInvocationExporter.force_flush` and :meth:`~KafkaInvocationExporter.shutdown` give up once the broker
has acknowledged nothing for ``delivery_timeout_ms`` (``OTEL_EVAL_KAFKA_DELIVERY_TIMEOUT_MS``, default 5 s); at
shutdown what is left is dropped and counted (``shutdown``), and the producer is closed without waiting for it.

The buffer is :mod:`otel_eval.transport._request_buffer`, the sender thread :mod:`otel_eval.transport._kafka_sender`.

Delivery is at-least-once: a request whose acknowledgement was lost is sent again, so a worker may see it twice;
workers de-duplicate results by their deterministic result id. The idempotent producer is not used: aiokafka only
speaks ``InitProducerId`` v0, which several Kafka-compatible brokers reject.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry import metrics

from otel_eval import environment_variables as env_vars
from otel_eval import semconv
from otel_eval._runtime.forking import reinit_after_fork
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.errors import ConfigurationError
from otel_eval.instruments import ObservedCounter, observe_gauge
from otel_eval.model.messages import EvaluationRequest
from otel_eval.transport._kafka_config import KafkaSecurity, check_compression, split_servers
from otel_eval.transport._kafka_outage import BROKER, OutageMonitor
from otel_eval.transport._kafka_sender import STOP_RESERVE_S, KafkaSender
from otel_eval.transport._request_buffer import RequestBuffer
from otel_eval.transport.base import ExportResult, InvocationExporter

logger = logging.getLogger(__name__)

DEFAULT_LINGER_MS: Final = 0
"""Send each request at once (latency); ``OTEL_EVAL_KAFKA_LINGER_MS`` (e.g. 50) batches more for throughput."""
DEFAULT_DELIVERY_TIMEOUT_MS: Final = 5_000
_QUEUE_NAME: Final = "requests"


@dataclass(frozen=True, slots=True)
class ExporterStats:
    """A snapshot of the exporter's counters (the same numbers go to the ``otel_eval.*`` instruments)."""

    accepted: int
    """Requests taken into the buffer."""
    delivered: int
    """Requests acknowledged by the broker (a re-sent request counts once per acknowledgement)."""
    pending: int
    """Requests buffered or in flight, not yet acknowledged: never more than ``max_queue_size``."""
    dropped: Mapping[str, int] = field(default_factory=dict)
    """Dropped requests by ``otel_eval.drop.reason``."""
    retries: int = 0
    """Sends that failed retriably and were queued again."""
    connected: bool = False
    """Whether the producer is started (the broker was reachable at least once since the last failure)."""
    unavailable: bool = False
    """Whether the broker is unreachable now (an outage is under way)."""
    failed_attempts: int = 0
    """Failed attempts to reach the broker (connections, metadata and send requests) since the start."""

    @property
    def dropped_total(self) -> int:
        """All drops, whatever the reason."""
        return sum(self.dropped.values())


class KafkaInvocationExporter(InvocationExporter):
    """Sends evaluation requests to a Kafka topic, keyed by session id (else trace id), without ever blocking the caller.

    Args:
        bootstrap_servers: ``host:port[,host:port...]``.
        topic: the requests topic.
        compression: ``zstd`` (default), ``gzip``, ``none``, ``snappy`` or ``lz4``.
        max_queue_size: requests buffered or in flight at once; beyond it new requests are dropped and counted.
        security: TLS/SASL settings passed through to aiokafka (passwords are never logged).
        client_id: the producer's client id.
        linger_ms: how long the producer waits to fill a batch: 0 (default) for latency, tens of ms for throughput.
        request_timeout_ms: how long a send may wait for the broker before it is retried.
        max_request_size: largest message in bytes; bigger requests are dropped (``message_too_large``).
        delivery_timeout_ms: how long :meth:`force_flush` and :meth:`shutdown` wait while the broker acknowledges
            nothing (an outage) before giving up; with the broker unreachable, ``shutdown`` returns within it.
        meter_provider: where the drop counter and queue gauge go (default: the global one).
        pipeline: the processor's pipeline counters; when given, drops and the queue size (``otel_eval.queue=requests``)
            are reported through it instead of the exporter's own instruments.

    Raises:
        ConfigurationError: bad bootstrap servers, compression, bound or security settings.
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        topic: str = env_vars.DEFAULT_KAFKA_REQUESTS_TOPIC,
        compression: str = env_vars.DEFAULT_KAFKA_COMPRESSION,
        max_queue_size: int = env_vars.DEFAULT_QUEUE_SIZE,
        security: KafkaSecurity | None = None,
        client_id: str = "otel-eval-exporter",
        linger_ms: int = DEFAULT_LINGER_MS,
        request_timeout_ms: int = 30_000,
        max_request_size: int = 1_048_576,
        delivery_timeout_ms: int = DEFAULT_DELIVERY_TIMEOUT_MS,
        meter_provider: metrics.MeterProvider | None = None,
        pipeline: PipelineMetrics | None = None,
    ) -> None:
        servers = bootstrap_servers if isinstance(bootstrap_servers, str) else ",".join(bootstrap_servers)
        self._servers = split_servers(servers)
        if not topic:
            raise ConfigurationError("KafkaInvocationExporter: topic must not be empty")
        if max_queue_size < 1:
            raise ConfigurationError(f"KafkaInvocationExporter: max_queue_size {max_queue_size} must be >= 1")
        if delivery_timeout_ms < 1:
            raise ConfigurationError(f"KafkaInvocationExporter: delivery_timeout_ms {delivery_timeout_ms} must be >= 1")
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.topic = topic
        self.max_queue_size = max_queue_size
        self._compression = check_compression(compression)
        self._security = security or KafkaSecurity()
        self._producer_kwargs: dict[str, Any] = {
            "client_id": client_id,
            "acks": "all",
            "enable_idempotence": False,
            "compression_type": self._compression,
            "linger_ms": linger_ms,
            "request_timeout_ms": request_timeout_ms,
            "max_request_size": max_request_size,
            "retry_backoff_ms": 500,  # aiokafka retries metadata every 100 ms by default: 10 failures/s in an outage
            **self._security.client_kwargs(),
        }
        self._max_request_size = max_request_size

        self._buffer = RequestBuffer(max_queue_size, self._count_drop)
        self._shutdown_lock = threading.Lock()
        self._shutdown_done = False
        self._outage = self._new_monitor()

        self._pipeline = pipeline
        if pipeline is not None:
            weak_self = weakref.ref(self)
            pipeline.register_queue(_QUEUE_NAME, lambda: _pending(weak_self))
        else:
            self._drop_counter = ObservedCounter(
                meter_provider,
                semconv.METRIC_INVOCATIONS_DROPPED,
                "{invocation}",
                "Invocations dropped before evaluation",
            )
            observe_gauge(
                meter_provider,
                semconv.METRIC_QUEUE_SIZE,
                "{item}",
                "Evaluation requests waiting for their transport",
                self,
                KafkaInvocationExporter._observe_queue,
            )
            self._attempt_counter = ObservedCounter(
                meter_provider,
                semconv.METRIC_TRANSPORT_FAILED_ATTEMPTS,
                "{attempt}",
                "Failed attempts to reach the transport's broker (connections, metadata, sends)",
            )
        observe_gauge(
            meter_provider,
            semconv.METRIC_TRANSPORT_OUTAGE_DURATION,
            "s",
            "Seconds since the transport's broker became unreachable; 0 while it is reachable",
            self,
            _observe_outage,
            combine=max,  # several exporters of the process: the longest outage
        )

        self._start_sender()
        reinit_after_fork(self._at_fork_reinit)

    def _new_monitor(self) -> OutageMonitor:
        return OutageMonitor(
            f"Kafka exporter (topic {self.topic})",
            self._servers,
            logger,
            peer=BROKER,
            counts=self._held_counts,
            on_attempt=self._count_attempt,
            redact=self._security.redact,
        )

    def _held_counts(self) -> dict[str, int]:
        return {"requests held": self._buffer.pending, "requests dropped": sum(self._buffer.dropped().values())}

    def _start_sender(self) -> None:
        self._sender = KafkaSender(
            self._buffer,
            self._outage,
            servers=self._servers,
            topic=self.topic,
            producer_options=self._producer_kwargs,
            max_request_size=self._max_request_size,
            security=self._security,
        )
        self._sender.start()

    def _at_fork_reinit(self) -> None:
        """In a forked child (e.g. a pre-fork web server): fresh locks, an empty buffer and a new sender thread.

        The parent's buffered requests stay the parent's to send; the child must not send them a second time.
        """
        self._buffer.reset_after_fork()
        self._shutdown_lock = threading.Lock()
        self._outage = self._new_monitor()
        if not self._buffer.closed:
            self._start_sender()

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        meter_provider: metrics.MeterProvider | None = None,
        pipeline: PipelineMetrics | None = None,
    ) -> KafkaInvocationExporter:
        """An exporter configured by the ``OTEL_EVAL_KAFKA_*`` and ``OTEL_EVAL_QUEUE_SIZE`` environment variables.

        Raises:
            ConfigurationError: ``OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS`` is unset, or a value is invalid.
        """
        environ = os.environ if environ is None else environ
        servers = environ.get(env_vars.OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS, "")
        if not servers.strip():
            raise ConfigurationError(f"{env_vars.OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS} is not set")
        max_queue_size = env_vars.number_setting(
            environ,
            env_vars.OTEL_EVAL_QUEUE_SIZE,
            env_vars.DEFAULT_QUEUE_SIZE,
            valid=_positive,
            expected="an integer >= 1",
        )
        delivery_timeout_ms = env_vars.number_setting(
            environ,
            env_vars.OTEL_EVAL_KAFKA_DELIVERY_TIMEOUT_MS,
            DEFAULT_DELIVERY_TIMEOUT_MS,
            valid=_not_negative,
            expected="milliseconds (an integer >= 0)",
        )
        linger_ms = env_vars.number_setting(
            environ,
            env_vars.OTEL_EVAL_KAFKA_LINGER_MS,
            DEFAULT_LINGER_MS,
            valid=_not_negative,
            expected="milliseconds (an integer >= 0)",
        )
        return cls(
            servers,
            topic=environ.get(env_vars.OTEL_EVAL_KAFKA_REQUESTS_TOPIC, "").strip()
            or env_vars.DEFAULT_KAFKA_REQUESTS_TOPIC,
            compression=environ.get(env_vars.OTEL_EVAL_KAFKA_COMPRESSION, "").strip()
            or env_vars.DEFAULT_KAFKA_COMPRESSION,
            max_queue_size=max_queue_size,
            linger_ms=linger_ms,
            delivery_timeout_ms=delivery_timeout_ms,
            security=KafkaSecurity.from_env(environ),
            meter_provider=meter_provider,
            pipeline=pipeline,
        )

    def __repr__(self) -> str:
        return f"KafkaInvocationExporter(servers={self._servers!r}, topic={self.topic!r}, security={self._security!r})"

    # --- the caller's side: never blocks for the broker, never raises --------------------------------------------

    def export(self, requests: Sequence[EvaluationRequest]) -> ExportResult:
        """Buffers ``requests`` for sending. Returns at once; FAILURE when any had to be dropped (counted)."""
        try:
            dropped = self._buffer.offer(requests)
            if len(requests) > dropped:
                self._sender.wake()
            return ExportResult.FAILURE if dropped else ExportResult.SUCCESS
        except Exception:  # a transport must never raise into the agent
            logger.exception("KafkaInvocationExporter.export failed")
            return ExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Waits until every buffered request is acknowledged. False when ``timeout_millis`` passed first, or when
        the broker acknowledged nothing for ``delivery_timeout_ms`` (the requests stay buffered)."""
        self._sender.wake()
        return self._buffer.wait_delivered(time.monotonic() + max(0, timeout_millis) / 1000, self.delivery_timeout)

    def shutdown(self, timeout_millis: int = 30_000) -> None:
        """Stops accepting, sends what is buffered, then stops the producer, all within ``timeout_millis``, and
        within ``delivery_timeout_ms`` when the broker acknowledges nothing. Idempotent.

        Requests still unsent at the end are dropped and counted (``shutdown``).
        """
        with self._shutdown_lock:
            if self._shutdown_done:
                return
            self._shutdown_done = True
        started = time.monotonic()
        deadline = started + max(0, timeout_millis) / 1000
        # The producer's stop gets a share of the time: it must not wait for a broker that does not answer.
        reserve = min(STOP_RESERVE_S, self.delivery_timeout / 4, max(0, timeout_millis) / 4000)
        self._sender.wake()
        self._buffer.wait_delivered(deadline - reserve, max(0.0, self.delivery_timeout - reserve))
        self._buffer.close()
        budget = max(0.0, min(reserve, deadline - time.monotonic()) - 0.05)
        if not self._sender.stop(budget, deadline):
            logger.warning("Kafka exporter thread did not stop within %d ms", timeout_millis)

    def stats(self) -> ExporterStats:
        """The counters right now."""
        buffer = self._buffer
        return ExporterStats(
            accepted=buffer.accepted,
            delivered=buffer.delivered,
            pending=buffer.pending,
            dropped=buffer.dropped(),
            retries=buffer.retries,
            connected=self._sender.connected,
            unavailable=self._outage.unavailable,
            failed_attempts=self._outage.attempts,
        )

    def _count_drop(self, reason: str, count: int) -> None:
        if self._pipeline is not None:
            self._pipeline.invocations_dropped(reason, count)
            return
        self._drop_counter.add(
            count, {semconv.OTEL_EVAL_DROP_REASON: reason, semconv.OTEL_EVAL_TRANSPORT: semconv.TRANSPORT_KAFKA}
        )

    def _observe_queue(self, _options: metrics.CallbackOptions) -> list[metrics.Observation]:
        pending = self._buffer.pending
        attributes = {semconv.OTEL_EVAL_TRANSPORT: semconv.TRANSPORT_KAFKA, semconv.OTEL_EVAL_QUEUE: _QUEUE_NAME}
        return [metrics.Observation(pending, attributes)]

    @property
    def pending(self) -> int:
        """Requests buffered or in flight."""
        return self._buffer.pending

    def _count_attempt(self) -> None:
        if self._pipeline is not None:
            self._pipeline.transport_failed_attempts(1)
        else:
            self._attempt_counter.add(1, {semconv.OTEL_EVAL_TRANSPORT: semconv.TRANSPORT_KAFKA})


def _pending(ref: weakref.ReferenceType[KafkaInvocationExporter]) -> int:
    exporter = ref()
    return exporter.pending if exporter is not None else 0


def _observe_outage(exporter: KafkaInvocationExporter, _options: metrics.CallbackOptions) -> list[metrics.Observation]:
    attributes = {semconv.OTEL_EVAL_TRANSPORT: semconv.TRANSPORT_KAFKA}
    return [metrics.Observation(exporter._outage.outage_seconds(), attributes)]


__all__ = ["ExporterStats", "KafkaInvocationExporter"]


def _positive(value: int) -> bool:
    return value >= 1


def _not_negative(value: int) -> bool:
    return value >= 0
