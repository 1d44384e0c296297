"""The worker's Kafka clients: the group consumer (manual commits), the producer and the read-back consumer, message
parsing, and the watch over the broker during outages.

The consumer never commits on its own (``enable_auto_commit=False``): the service commits a batch's offsets after the
batch's results were emitted and published. New groups start from the earliest offset, so no request is skipped;
group timeouts are generous because joins and rebalances can take several seconds.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Final

from aiokafka.abc import ConsumerRebalanceListener
from pydantic import ValidationError

from otel_eval.errors import InputError
from otel_eval.model.messages import REQUEST_SCHEMA_VERSION, EvaluationRequest
from otel_eval.transport import BROKER, KafkaSecurity, OutageMonitor, probe_broker
from otel_eval.worker._metrics import WorkerMetrics
from otel_eval.worker.health import HEARTBEAT_SECONDS, WorkerHealth
from otel_eval.worker.results import ResultsPublisher
from otel_eval.worker.settings import WorkerSettings

logger = logging.getLogger(__name__)

_PROBE_TIMEOUT_S: Final = 5.0
_PROBE_BACKOFF_MIN_S: Final = 1.0
_PROBE_BACKOFF_MAX_S: Final = 10.0
_PROBE_IDLE_S: Final = 10.0
"""A hung broker (it accepts connections and answers nothing) makes aiokafka report nothing for its request timeout:
the watch also probes this often when nothing looks wrong."""
_RESULTS_BATCH_BYTES: Final = 512 * 1024
"""A producer batch's size (aiokafka's default is 16 KiB): a worker batch's results fit in one batch per partition,
so they travel in one produce request (the producer has one in flight per broker), and well under the broker's
default 1 MB limit on a (compressed) batch."""


def parse_request(value: bytes | None, source: str) -> EvaluationRequest:
    """An :class:`EvaluationRequest` from a requests-topic message.

    Read in one pass by pydantic's JSON parser; a message it rejects is read again field by field to say why (or
    accepted, exactly as a mapping of its JSON would be).

    Raises:
        InputError: not JSON, an unknown ``schema_version``, or a field that does not validate (the message names
            ``source``, the field and the problem).
    """
    if not value:
        raise InputError(f"{source}: empty message, expected EvaluationRequest JSON")
    try:
        request = EvaluationRequest.model_validate_json(value)
    except ValidationError:
        return _parse_request_slowly(value, source)
    if "schema_version" not in request.model_fields_set:  # a request names its version: the default is no answer
        return _parse_request_slowly(value, source)
    return request


def _parse_request_slowly(value: bytes, source: str) -> EvaluationRequest:
    """:func:`parse_request` through a mapping of the JSON, to name what is wrong with the message."""
    try:
        data = json.loads(value)
    except ValueError as exc:  # also json.loads's int() of a number of more than sys.get_int_max_str_digits() digits
        raise InputError(f"{source}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"{source}: expected a JSON object (EvaluationRequest), got {type(data).__name__}")
    version = data.get("schema_version")
    if version != REQUEST_SCHEMA_VERSION:
        raise InputError(
            f"{source}: schema_version {version!r} is not supported (this worker reads {REQUEST_SCHEMA_VERSION})"
        )
    try:
        return EvaluationRequest.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        location = ".".join(str(part) for part in error["loc"]) or "request"
        raise InputError(f"{source}: field {location}: {error['msg']}") from None


class WorkerClients:
    """The worker's Kafka clients, once started (None before the worker's startup and after the shutdown)."""

    def __init__(self) -> None:
        self.consumer: Any = None
        self.producer: Any = None
        self.readback: Any = None
        self.publisher: ResultsPublisher | None = None

    def take(self) -> list[Any]:
        """The started clients, consumer first (it leaves the group); forgotten here, for the caller to stop."""
        clients = [c for c in (self.consumer, self.readback, self.producer) if c is not None]
        self.consumer = self.readback = self.producer = None
        return clients


def client_options(settings: WorkerSettings, security: KafkaSecurity) -> dict[str, Any]:
    """Options every Kafka client of the worker shares."""
    # aiokafka retries metadata and fetches every 100 ms by default: 10 failed attempts a second in an outage.
    return {"bootstrap_servers": settings.servers, "retry_backoff_ms": 500, **security.client_kwargs()}


def max_poll_interval_ms(settings: WorkerSettings) -> int:
    """How long the group consumer may go without polling before it leaves its group."""
    configured = settings.kafka_max_poll_interval_ms
    return configured or max(300_000, int(settings.worker_shutdown_timeout * 1000) * 2)


def create_consumer(settings: WorkerSettings, security: KafkaSecurity, listener: ConsumerRebalanceListener) -> Any:
    """The group consumer on the configured topics (not started)."""
    from aiokafka import AIOKafkaConsumer

    session = settings.kafka_session_timeout_ms
    consumer = AIOKafkaConsumer(
        group_id=settings.kafka_group_id,
        client_id=f"{settings.kafka_group_id}-consumer",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=session,
        heartbeat_interval_ms=max(1000, session // 10),
        rebalance_timeout_ms=max(session, 60_000),
        max_poll_interval_ms=max_poll_interval_ms(settings),
        fetch_max_wait_ms=settings.kafka_fetch_max_wait_ms,  # how soon an idle worker sees a new request
        **client_options(settings, security),
    )
    consumer.subscribe(topics=list(settings.topics), listener=listener)
    return consumer


def create_readback_consumer(settings: WorkerSettings, security: KafkaSecurity) -> Any:
    """A group-less consumer for reading recent results back (not started)."""
    from aiokafka import AIOKafkaConsumer

    return AIOKafkaConsumer(
        client_id=f"{settings.kafka_group_id}-readback",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **client_options(settings, security),
    )


def create_producer(settings: WorkerSettings, security: KafkaSecurity) -> Any:
    """The producer for results and dead letters (not started): ``acks=all``, no idempotence (see the exporter)."""
    from aiokafka import AIOKafkaProducer

    from otel_eval.transport import check_compression

    return AIOKafkaProducer(
        client_id=f"{settings.kafka_group_id}-producer",
        acks="all",
        enable_idempotence=False,
        compression_type=check_compression(settings.kafka_compression),
        linger_ms=0,  # a batch's results are sent together anyway: the worker awaits them all, then commits
        max_batch_size=_RESULTS_BATCH_BYTES,
        request_timeout_ms=settings.kafka_request_timeout_ms,
        **client_options(settings, security),
    )


def _probe_error(exc: BaseException, security: KafkaSecurity) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return f"no answer to a metadata request within {_PROBE_TIMEOUT_S:g} s"
    return security.describe_error(exc)


class BrokerWatch:
    """Whether the worker's broker answers, decided by metadata requests, and the few log lines that say so.

    aiokafka's records of the worker's clients (see :func:`~otel_eval.transport._kafka_outage.quiet_client_logs`) and
    the worker's failed Kafka operations are counted (``otel_eval.transport.failed_attempts``) and make the watch
    probe soon; an unanswered probe starts an outage (one WARNING, ``/readyz`` failing, the outage-duration gauge
    rising), an answered one ends it (one INFO).
    """

    def __init__(
        self, servers: list[str], security: KafkaSecurity, metrics: WorkerMetrics, health: WorkerHealth
    ) -> None:
        self._security = security
        self._metrics = metrics
        self._health = health
        self.outage = OutageMonitor(
            "worker",
            servers,
            logger,
            peer=BROKER,
            counts=self._counts,
            on_attempt=self._on_attempt,
            redact=security.redact,
        )
        metrics.watch_outage(self.outage.outage_seconds)
        self._next_probe = 0.0
        self._last_probe = 0.0

    def _counts(self) -> dict[str, int]:
        counts = self._metrics.snapshot()
        return {
            "batches retried": sum(v for k, v in counts.items() if k.startswith("errors.")),
            "invocations evaluated": counts.get("evaluated", 0),
        }

    def on_client_record(self, record: logging.LogRecord) -> None:
        """An aiokafka record of the worker's clients: counted when it reports a failure, kept at DEBUG."""
        self.outage.client_record(record)

    def failed(self, exc: BaseException) -> None:
        """An operation of the worker failed for want of the broker: counted; the next probe decides."""
        message = self._security.describe_error(exc)
        self.outage.attempt_failed(message)
        logger.debug("Kafka operation failed: %s", message)

    def _on_attempt(self) -> None:
        self._metrics.transport_failed_attempts(1)
        if not self.outage.unavailable:  # probe soon, but not more than every other second
            self._next_probe = max(min(self._next_probe, time.monotonic()), self._last_probe + 2 * _PROBE_BACKOFF_MIN_S)

    async def watch(self, consumer: Callable[[], Any]) -> None:
        """Probes the broker through ``consumer()`` (when started) and writes the outage summary. Runs until
        cancelled."""
        backoff = _PROBE_BACKOFF_MIN_S
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            self.outage.tick()
            client = consumer()
            if client is None or not self._health.started or time.monotonic() < self._next_probe:
                continue
            self._last_probe = time.monotonic()
            try:
                await probe_broker(client, _PROBE_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - any failure: not reachable
                error = _probe_error(exc, self._security)
                self.outage.unreachable(error)
                self._health.fetch_error = f"Kafka broker unreachable: {error}"
                self._next_probe = time.monotonic() + backoff
                backoff = min(backoff * 2, _PROBE_BACKOFF_MAX_S)
                continue
            backoff = _PROBE_BACKOFF_MIN_S
            self._next_probe = time.monotonic() + _PROBE_IDLE_S
            if self.outage.unavailable:
                self.outage.reachable()
                self._health.fetch_error = None
