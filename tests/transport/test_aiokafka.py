"""What otel-eval relies on in aiokafka beyond its documented API (``otel_eval.transport._aiokafka``), pinned
against the installed aiokafka: run after every upgrade. A client closed without a graceful stop leaves no task
and no connection behind; the metadata probe works through a producer and a consumer; the retriable test."""

from __future__ import annotations

import asyncio
import gc
import warnings

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import (
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    RequestTimedOutError,
)

from otel_eval.transport import is_retriable, probe_broker, stop_client
from tests._kafka import TansuBroker, create_topics, random_topic

pytestmark = [pytest.mark.kafka, pytest.mark.integration]


def _others() -> set[asyncio.Task[object]]:
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()}


async def test_a_client_closed_without_a_graceful_stop_leaves_no_task_and_no_connection(
    kafka_bootstrap: str,
) -> None:
    topic = random_topic("pin")
    await create_topics(kafka_bootstrap, [topic])
    before = _others()
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, enable_idempotence=False)
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=kafka_bootstrap, group_id=random_topic("group"))
    await producer.start()
    await consumer.start()
    await producer.send_and_wait(topic, b"x")
    assert _others() - before  # the clients run background tasks (sender, coordinator, heartbeat, fetcher)

    # No time for a graceful stop: the private background tasks and connections are closed directly.
    assert await stop_client(producer, 0.0) is False
    assert await stop_client(consumer, 0.0) is False
    await asyncio.sleep(0.1)
    assert _others() - before == set()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del producer, consumer
        gc.collect()
    assert not [w for w in caught if "Unclosed" in str(w.message)]


async def test_the_probe_asks_the_broker_through_a_producer_or_a_consumer() -> None:
    broker = TansuBroker()
    broker.start()
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False, retry_backoff_ms=500)
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, retry_backoff_ms=500)
    try:
        await producer.start()
        await consumer.start()
        await probe_broker(producer, 5.0)
        await probe_broker(consumer, 5.0)
        broker.stop()
        for client in (producer, consumer):
            with pytest.raises((KafkaError, asyncio.TimeoutError)):  # no answer, or "Unable to get metadata"
                await probe_broker(client, 2.0)
    finally:
        broker.stop()
        await stop_client(producer, 1.0)
        await stop_client(consumer, 1.0)


def test_retriable_means_the_broker_did_not_answer() -> None:
    for error in (KafkaConnectionError(), KafkaTimeoutError(), RequestTimedOutError(), TimeoutError()):
        assert is_retriable(error), error
    assert not is_retriable(MessageSizeTooLargeError())
    assert not is_retriable(ValueError("not Kafka"))


class _HeldMetadataRequest:
    """A client whose metadata request waits until the test fails it (as closing its connections does)."""

    def __init__(self) -> None:
        self.request: asyncio.Future[object] | None = None

    async def topics(self) -> object:
        self.request = asyncio.get_running_loop().create_future()
        return await self.request


async def test_the_probe_is_cancelled_even_when_its_request_fails_in_the_same_turn() -> None:
    # A forced worker stop closes the clients' connections (failing the request in flight), then cancels the broker
    # watch: the watch must end, not take the failure for an outage and probe on.
    client = _HeldMetadataRequest()
    probing = asyncio.create_task(probe_broker(client, 5.0))
    await asyncio.sleep(0.01)
    assert client.request is not None
    client.request.set_exception(KafkaConnectionError("connection closed"))
    probing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await probing
