"""The dead-letter topic: messages the worker cannot read go there unchanged, with the reason in headers."""

from __future__ import annotations

import logging
from typing import Any

from otel_eval import semconv

logger = logging.getLogger(__name__)

_MAX_ERROR_BYTES = 2000


def _header(value: object) -> bytes:
    return str(value).encode("utf-8", "replace")[:_MAX_ERROR_BYTES]


class DeadLetters:
    """Sends unreadable messages to the dead-letter topic, keeping key and value, adding the error as headers.

    Headers: ``otel_eval.error`` (one line: what is wrong), ``otel_eval.error.type`` (exception class),
    ``otel_eval.source.topic`` / ``.partition`` / ``.offset`` (where the message came from), after the message's own
    headers. A value over the producer's ``max_request_size`` is left out (``otel_eval.source.value_bytes`` gives its
    size; the source topic still holds it).

    Args:
        producer: a started ``AIOKafkaProducer``.
        topic: the dead-letter topic.
    """

    def __init__(self, producer: Any, topic: str) -> None:
        self._producer = producer
        self.topic = topic
        self.count = 0

    async def send(self, message: Any, error: BaseException) -> None:
        """Dead-letters ``message`` (an aiokafka ``ConsumerRecord``) and waits for the acknowledgement.

        Raises:
            aiokafka.errors.KafkaError: the dead-letter topic did not accept it (the batch is then not committed).
        """
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        headers = [
            *(message.headers or ()),
            (semconv.HEADER_DEAD_LETTER_ERROR, _header(reason)),
            (semconv.HEADER_DEAD_LETTER_ERROR_TYPE, _header(type(error).__name__)),
            (semconv.HEADER_DEAD_LETTER_TOPIC, _header(message.topic)),
            (semconv.HEADER_DEAD_LETTER_PARTITION, _header(message.partition)),
            (semconv.HEADER_DEAD_LETTER_OFFSET, _header(message.offset)),
        ]
        logger.warning(
            "dead-lettering %s/%d@%d to %s: %s", message.topic, message.partition, message.offset, self.topic, reason
        )
        from aiokafka.errors import MessageSizeTooLargeError

        value = message.value or b""
        try:
            future = await self._producer.send(
                self.topic, value=value, key=message.key, headers=headers, timestamp_ms=message.timestamp
            )
        except MessageSizeTooLargeError:
            # Too large to copy: the headers say where the original is (its source topic still holds it).
            headers.append((semconv.HEADER_DEAD_LETTER_VALUE_BYTES, _header(len(value))))
            future = await self._producer.send(
                self.topic, value=b"", key=message.key, headers=headers, timestamp_ms=message.timestamp
            )
        await future
        self.count += 1
