"""``KafkaInvocationExporter``: the processor's transport to Kafka, an aiokafka producer on its own thread.

The processor calls :meth:`KafkaInvocationExporter.export` from its own thread; the call only appends to a bounded
buffer and returns. A daemon thread runs an asyncio loop with the producer: it serialises each request as JSON (the
versioned :class:`~otel_eval.model.messages.EvaluationRequest`), sends it keyed by trace id with ``acks=all``
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

Delivery is at-least-once: a request whose acknowledgement was lost is sent again, so a worker may see it twice;
workers de-duplicate results by their deterministic result id. The idempotent producer is not used: aiokafka only
speaks ``InitProducerId`` v0, which several Kafka-compatible brokers reject.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
import weakref
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import metrics
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY

from otel_eval import environment_variables as env_vars
from otel_eval import semconv
from otel_eval._runtime.forking import reinit_after_fork
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.errors import ConfigurationError
from otel_eval.model.messages import EvaluationRequest
from otel_eval.transport._aiokafka import is_retriable, probe_broker, stop_client
from otel_eval.transport._kafka_config import KafkaSecurity, check_compression, split_servers
from otel_eval.transport._kafka_outage import OutageMonitor, quiet_client_logs
from otel_eval.transport.base import ExportResult, InvocationExporter
from otel_eval.version import __version__

logger = logging.getLogger(__name__)

DEFAULT_LINGER_MS: Final = 0
"""Send each request at once (latency); ``OTEL_EVAL_KAFKA_LINGER_MS`` (e.g. 50) batches more for throughput."""
DEFAULT_DELIVERY_TIMEOUT_MS: Final = 5_000
_SEND_CHUNK: Final = 256
_RECONNECT_BACKOFF_MIN_S: Final = 0.2
_RECONNECT_BACKOFF_MAX_S: Final = 5.0
_QUEUE_NAME: Final = "requests"
_PROBE_TIMEOUT_S: Final = 5.0
_STOP_RESERVE_S: Final = 1.0


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
    """Sends evaluation requests to a Kafka topic, keyed by trace id, without ever blocking the caller.

    Args:
        bootstrap_servers: ``host:port[,host:port...]``.
        topic: the requests topic.
        compression: ``gzip`` (default), ``none``, or ``snappy``/``lz4``/``zstd`` (these need ``cramjam``).
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

        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queue: deque[EvaluationRequest] = deque()
        self._in_flight = 0
        self._accepted = 0
        self._delivered = 0
        self._retries = 0
        self._dropped: Counter[str] = Counter()
        self._connected = False
        self._closing = False
        self._shutdown_done = False
        self._last_ack = time.monotonic()
        self._outage = self._new_monitor()

        self._pipeline = pipeline
        if pipeline is not None:
            weak_self = weakref.ref(self)
            pipeline.register_queue(_QUEUE_NAME, lambda: _pending(weak_self))
        else:
            meter = (meter_provider or metrics.get_meter_provider()).get_meter(
                semconv.INSTRUMENTATION_SCOPE, __version__
            )
            self._drop_counter = meter.create_counter(
                semconv.METRIC_INVOCATIONS_DROPPED,
                unit="{invocation}",
                description="Invocations dropped before evaluation",
            )
            meter.create_observable_gauge(
                semconv.METRIC_QUEUE_SIZE,
                callbacks=[self._observe_queue],
                unit="{item}",
                description="Evaluation requests waiting for their transport",
            )
            self._attempt_counter = meter.create_counter(
                semconv.METRIC_TRANSPORT_FAILED_ATTEMPTS,
                unit="{attempt}",
                description="Failed attempts to reach the transport's broker (connections, metadata, sends)",
            )
        weak_outage = weakref.ref(self)
        (meter_provider or metrics.get_meter_provider()).get_meter(
            semconv.INSTRUMENTATION_SCOPE, __version__
        ).create_observable_gauge(
            semconv.METRIC_TRANSPORT_OUTAGE_DURATION,
            callbacks=[lambda options: _observe_outage(weak_outage)],
            unit="s",
            description="Seconds since the transport's broker became unreachable; 0 while it is reachable",
        )

        self._start_sender()
        reinit_after_fork(self._at_fork_reinit)

    def _new_monitor(self) -> OutageMonitor:
        return OutageMonitor(
            f"Kafka exporter (topic {self.topic})",
            self._servers,
            logger,
            counts=self._held_counts,
            on_attempt=self._count_attempt,
            redact=self._security.redact,
        )

    def _held_counts(self) -> dict[str, int]:
        with self._lock:
            return {
                "requests held": len(self._queue) + self._in_flight,
                "requests dropped": sum(self._dropped.values()),
            }

    def _start_sender(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        self._main: asyncio.Task[None] | None = None
        self._next_probe = 0.0
        self._stop_budget = _STOP_RESERVE_S
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._thread_main, name="OtelEvalKafkaExporter", daemon=True)
        self._thread.start()
        self._ready.wait()

    def _at_fork_reinit(self) -> None:
        """In a forked child (e.g. a pre-fork web server): fresh locks, an empty buffer and a new sender thread.

        The parent's buffered requests stay the parent's to send; the child must not send them a second time.
        """
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queue = deque()
        self._in_flight = 0
        self._connected = False
        self._outage = self._new_monitor()
        if not self._closing:
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
            dropped = 0
            with self._lock:
                closing = self._closing
                for request in requests:
                    if closing or len(self._queue) + self._in_flight >= self.max_queue_size:
                        dropped += 1
                    else:
                        self._queue.append(request)
                        self._accepted += 1
                reason = semconv.DROP_SHUTDOWN if closing else semconv.DROP_TRANSPORT_QUEUE_FULL
                if dropped:
                    self._dropped[reason] += dropped
            if dropped:
                self._count_drop(reason, dropped)
            if len(requests) > dropped:
                self._wake()
            return ExportResult.FAILURE if dropped else ExportResult.SUCCESS
        except Exception:  # a transport must never raise into the agent
            logger.exception("KafkaInvocationExporter.export failed")
            return ExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Waits until every buffered request is acknowledged. False when ``timeout_millis`` passed first, or when
        the broker acknowledged nothing for ``delivery_timeout_ms`` (the requests stay buffered)."""
        return self._wait_delivered(time.monotonic() + max(0, timeout_millis) / 1000, self.delivery_timeout)

    def _wait_delivered(self, deadline: float, stall: float) -> bool:
        started = time.monotonic()
        self._wake()
        with self._idle:
            while self._queue or self._in_flight:
                now = time.monotonic()
                give_up = min(deadline, max(started, self._last_ack) + stall)
                if now >= give_up:
                    return False
                self._idle.wait(give_up - now)
        return True

    def shutdown(self, timeout_millis: int = 30_000) -> None:
        """Stops accepting, sends what is buffered, then stops the producer, all within ``timeout_millis``, and
        within ``delivery_timeout_ms`` when the broker acknowledges nothing. Idempotent.

        Requests still unsent at the end are dropped and counted (``shutdown``).
        """
        with self._lock:
            if self._shutdown_done:
                return
            self._shutdown_done = True
        started = time.monotonic()
        deadline = started + max(0, timeout_millis) / 1000
        # The producer's stop gets a share of the time: it must not wait for a broker that does not answer.
        reserve = min(_STOP_RESERVE_S, self.delivery_timeout / 4, max(0, timeout_millis) / 4000)
        self._wait_delivered(deadline - reserve, max(0.0, self.delivery_timeout - reserve))
        with self._lock:
            self._closing = True
        self._stop_budget = max(0.0, min(reserve, deadline - time.monotonic()) - 0.05)
        loop, main = self._loop, self._main
        if loop is not None and main is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(main.cancel)
        self._thread.join(max(0.05, deadline - time.monotonic()))
        if self._thread.is_alive():
            logger.warning("Kafka exporter thread did not stop within %d ms", timeout_millis)

    def stats(self) -> ExporterStats:
        """The counters right now."""
        with self._lock:
            return ExporterStats(
                accepted=self._accepted,
                delivered=self._delivered,
                pending=len(self._queue) + self._in_flight,
                dropped=dict(self._dropped),
                retries=self._retries,
                connected=self._connected,
                unavailable=self._outage.unavailable,
                failed_attempts=self._outage.attempts,
            )

    def _wake(self) -> None:
        loop, wakeup = self._loop, self._wakeup
        if loop is not None and wakeup is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed between the check and the call
                loop.call_soon_threadsafe(wakeup.set)

    def _count_drop(self, reason: str, count: int) -> None:
        if self._pipeline is not None:
            self._pipeline.invocations_dropped(reason, count)
            return
        self._drop_counter.add(
            count, {semconv.OTEL_EVAL_DROP_REASON: reason, semconv.OTEL_EVAL_TRANSPORT: semconv.TRANSPORT_KAFKA}
        )

    def _observe_queue(self, _options: metrics.CallbackOptions) -> list[metrics.Observation]:
        with self._lock:
            pending = len(self._queue) + self._in_flight
        attributes = {semconv.OTEL_EVAL_TRANSPORT: semconv.TRANSPORT_KAFKA, semconv.OTEL_EVAL_QUEUE: _QUEUE_NAME}
        return [metrics.Observation(pending, attributes)]

    @property
    def pending(self) -> int:
        """Requests buffered or in flight."""
        with self._lock:
            return len(self._queue) + self._in_flight

    # --- the sender thread --------------------------------------------------------------------------------------

    def _thread_main(self) -> None:
        # The producer's own work must never be traced into the agent's telemetry.
        token = otel_context.attach(otel_context.set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            asyncio.run(self._sender())
        except Exception:  # thread boundary: log, then fail what is left so flush() returns
            logger.exception("Kafka exporter thread crashed")
        finally:
            otel_context.detach(token)
            self._drop_remaining()

    async def _sender(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wakeup = asyncio.Event()
        self._main = asyncio.current_task()
        quiet_client_logs(self._loop, self._on_client_record)
        self._ready.set()
        producer: Any = None
        backoff = _RECONNECT_BACKOFF_MIN_S
        try:
            while not self._closing:
                self._outage.tick()
                if producer is None:
                    producer = await self._start_producer()
                    if producer is None:
                        await self._sleep_or_wake(backoff)
                        backoff = min(backoff * 2, _RECONNECT_BACKOFF_MAX_S)
                        continue
                    backoff = _RECONNECT_BACKOFF_MIN_S
                batch = self._take(_SEND_CHUNK)
                if batch:
                    if await self._send_batch(producer, batch):
                        continue
                elif not (self._outage.unavailable or self._outage.suspect):
                    await self._sleep_or_wake(None)
                    continue
                # A send failed, or the broker is unreachable, or aiokafka reported errors: check with a metadata
                # request (at most once per backoff) before going on.
                if time.monotonic() >= self._next_probe:
                    if await self._probe(producer) and not batch:
                        backoff = _RECONNECT_BACKOFF_MIN_S
                        continue
                    self._next_probe = time.monotonic() + backoff
                await self._sleep_or_wake(backoff)
                backoff = min(backoff * 2, _RECONNECT_BACKOFF_MAX_S)
        except asyncio.CancelledError:  # shutdown() cancels this task to stop waiting for the broker
            pass
        finally:
            if producer is not None:
                with self._lock:
                    self._connected = False
                await stop_client(producer, self._stop_budget, describe=self._security.describe_error)

    async def _start_producer(self) -> Any:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(bootstrap_servers=self._servers, **self._producer_kwargs)
        try:
            await producer.start()
        except Exception as exc:  # noqa: BLE001 - any start failure means "not reachable yet": retry with backoff
            self._unreachable(exc)
            await stop_client(producer, _PROBE_TIMEOUT_S, describe=self._security.describe_error)
            return None
        except asyncio.CancelledError:
            await stop_client(producer, self._stop_budget, describe=self._security.describe_error)
            raise
        with self._lock:
            self._connected = True
        self._outage.reachable()
        logger.debug("Kafka producer connected to %s, topic %s", self._servers, self.topic)
        return producer

    async def _probe(self, producer: Any) -> bool:
        """One metadata request to the brokers: whether they answer (and the outage state updated)."""
        try:
            await probe_broker(producer, _PROBE_TIMEOUT_S)
        except asyncio.TimeoutError:
            self._unreachable(f"no answer to a metadata request within {_PROBE_TIMEOUT_S:g} s")
            return False
        except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
            self._unreachable(exc)
            return False
        self._outage.reachable()
        return True

    def _on_client_record(self, record: logging.LogRecord) -> None:
        """An aiokafka record of this exporter's producer (on the sender loop): counted, kept at DEBUG."""
        if self._outage.client_record(record) and self._wakeup is not None:
            self._wakeup.set()  # check the broker now

    def _count_attempt(self) -> None:
        if self._pipeline is not None:
            self._pipeline.transport_failed_attempts(1)
        else:
            self._attempt_counter.add(1, {semconv.OTEL_EVAL_TRANSPORT: semconv.TRANSPORT_KAFKA})

    def _unreachable(self, exc: BaseException | str) -> None:
        self._outage.unreachable(exc if isinstance(exc, str) else self._security.describe_error(exc))

    async def _sleep_or_wake(self, seconds: float | None) -> None:
        """Waits for :meth:`_wake` or ``seconds`` (forever when None)."""
        wakeup = self._wakeup
        if wakeup is None:  # not on the sender loop
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(wakeup.wait(), timeout=seconds)
        wakeup.clear()

    def _take(self, limit: int) -> list[EvaluationRequest]:
        with self._lock:
            batch = [self._queue.popleft() for _ in range(min(limit, len(self._queue)))]
            self._in_flight += len(batch)
        return batch

    async def _send_batch(self, producer: Any, batch: list[EvaluationRequest]) -> bool:
        """Hands ``batch`` to the producer. False when the broker was unreachable (the rest is re-queued)."""
        from aiokafka.errors import KafkaError

        for index, request in enumerate(batch):
            try:
                value = request.model_dump_json().encode()
            except Exception as exc:  # noqa: BLE001 - one bad request must not stop the others
                logger.warning("evaluation request of trace %s cannot be serialised: %r", request.trace_id, exc)
                self._settle(semconv.DROP_TRANSPORT_SERIALIZATION_ERROR)
                continue
            if len(value) > self._max_request_size:
                logger.warning(
                    "evaluation request of trace %s is %d bytes, over max_request_size %d: dropped",
                    request.trace_id,
                    len(value),
                    self._max_request_size,
                )
                self._settle(semconv.DROP_TRANSPORT_MESSAGE_TOO_LARGE)
                continue
            try:
                future = await producer.send(self.topic, value=value, key=request.trace_id.encode() or None)
            except KafkaError as exc:
                if is_retriable(exc):
                    self._requeue(batch[index:])
                    self._unreachable(exc)
                    return False
                logger.warning("Kafka rejected a request of trace %s: %s", request.trace_id, exc)
                self._settle(semconv.DROP_TRANSPORT_ERROR)
                continue
            future.add_done_callback(lambda fut, req=request: self._on_delivery(fut, req))
        return True

    def _on_delivery(self, future: asyncio.Future[Any], request: EvaluationRequest) -> None:
        if future.cancelled():
            self._requeue([request])
            return
        exc = future.exception()
        if exc is None:
            self._last_ack = time.monotonic()
            self._settle(None)
            self._outage.reachable()
            return
        if is_retriable(exc):
            logger.debug("Kafka delivery of trace %s failed, re-queued: %r", request.trace_id, exc)
            self._requeue([request])
            self._unreachable(exc)
            self._wake()
            return
        logger.warning("Kafka delivery of trace %s failed: %s", request.trace_id, self._security.describe_error(exc))
        self._settle(semconv.DROP_TRANSPORT_ERROR)

    def _settle(self, drop_reason: str | None) -> None:
        """One in-flight request is finished: delivered (``None``) or dropped for ``drop_reason``."""
        with self._lock:
            self._in_flight -= 1
            if drop_reason is None:
                self._delivered += 1
            else:
                self._dropped[drop_reason] += 1
            if not self._queue and not self._in_flight:
                self._idle.notify_all()
        if drop_reason is not None:
            self._count_drop(drop_reason, 1)

    def _requeue(self, requests: Sequence[EvaluationRequest]) -> None:
        with self._lock:
            self._in_flight -= len(requests)
            self._retries += len(requests)
            self._queue.extendleft(reversed(requests))

    def _drop_remaining(self) -> None:
        with self._lock:
            count = len(self._queue) + self._in_flight
            self._queue.clear()
            self._in_flight = 0
            self._closing = True
            if count:
                self._dropped[semconv.DROP_SHUTDOWN] += count
            self._idle.notify_all()
        if count:
            why = " (the broker was unreachable)" if self._outage.unavailable else ""
            logger.warning("Kafka exporter stopped: %d undelivered evaluation requests dropped%s", count, why)
            self._count_drop(semconv.DROP_SHUTDOWN, count)


def _pending(ref: weakref.ReferenceType[KafkaInvocationExporter]) -> int:
    exporter = ref()
    return exporter.pending if exporter is not None else 0


def _observe_outage(ref: weakref.ReferenceType[KafkaInvocationExporter]) -> list[metrics.Observation]:
    exporter = ref()
    if exporter is None:
        return []
    attributes = {semconv.OTEL_EVAL_TRANSPORT: semconv.TRANSPORT_KAFKA}
    return [metrics.Observation(exporter._outage.outage_seconds(), attributes)]


__all__ = ["ExporterStats", "KafkaInvocationExporter"]


def _positive(value: int) -> bool:
    return value >= 1


def _not_negative(value: int) -> bool:
    return value >= 0
