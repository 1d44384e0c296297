"""The worker's Kafka clients: the group consumer (manual commits), its rebalance listener, and message parsing.

The consumer never commits on its own (``enable_auto_commit=False``): the service commits a batch's offsets after the
batch's results were emitted and published. New groups start from the earliest offset, so no request is skipped;
group timeouts are generous because joins and rebalances can take several seconds.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafka.abc import ConsumerRebalanceListener
from pydantic import ValidationError

from otel_eval.errors import InputError
from otel_eval.model.messages import REQUEST_SCHEMA_VERSION, EvaluationRequest
from otel_eval.transport import KafkaSecurity
from otel_eval.worker.settings import WorkerSettings

logger = logging.getLogger(__name__)

PartitionsCallback = Callable[[set[Any]], Awaitable[None]]


def parse_request(value: bytes | None, source: str) -> EvaluationRequest:
    """An :class:`EvaluationRequest` from a requests-topic message.

    Raises:
        InputError: not JSON, an unknown ``schema_version``, or a field that does not validate (the message names
            ``source``, the field and the problem).
    """
    if not value:
        raise InputError(f"{source}: empty message, expected EvaluationRequest JSON")
    try:
        data = json.loads(value)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
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


class RebalanceListener(ConsumerRebalanceListener):  # type: ignore[misc]  # aiokafka ships no type information
    """Hands partition revocations and assignments to the service (awaited by aiokafka around each rebalance)."""

    def __init__(self, on_revoked: PartitionsCallback, on_assigned: PartitionsCallback) -> None:
        self._on_revoked = on_revoked
        self._on_assigned = on_assigned

    async def on_partitions_revoked(self, revoked: set[Any]) -> None:
        """Called before a rebalance: the service finishes and commits its current batch."""
        await self._on_revoked(set(revoked))

    async def on_partitions_assigned(self, assigned: set[Any]) -> None:
        """Called after a rebalance, before fetching: the service reads back recent results."""
        await self._on_assigned(set(assigned))


def client_options(settings: WorkerSettings, security: KafkaSecurity) -> dict[str, Any]:
    """Options every Kafka client of the worker shares."""
    return {"bootstrap_servers": settings.servers, **security.client_kwargs()}


def create_consumer(settings: WorkerSettings, security: KafkaSecurity, listener: RebalanceListener) -> Any:
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
        max_poll_interval_ms=max(300_000, int(settings.worker_shutdown_timeout * 1000) * 2),
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
        linger_ms=5,
        request_timeout_ms=settings.kafka_request_timeout_ms,
        **client_options(settings, security),
    )
