"""The Kafka exporter's sender: a daemon thread running an asyncio loop with the aiokafka producer.

It takes requests from the exporter's :class:`~otel_eval.transport._request_buffer.RequestBuffer`, serialises each as
JSON and sends it keyed by :attr:`~otel_eval.model.messages.EvaluationRequest.record_key` (its session id, else
its trace id); each request stays counted in the buffer until the broker acknowledged it, and
is put back when a send fails retriably. When the broker is down it starts the producer again with backoff, checks
the broker with a metadata probe (at most once per backoff) and reports the outage through the exporter's
:class:`~otel_eval.transport._kafka_outage.OutageMonitor`; aiokafka's own records of this producer are counted there
and kept at DEBUG.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY

from otel_eval import semconv
from otel_eval.model.messages import EvaluationRequest
from otel_eval.transport._aiokafka import is_retriable, probe_broker, stop_client
from otel_eval.transport._kafka_config import KafkaSecurity
from otel_eval.transport._kafka_outage import OutageMonitor, quiet_client_logs
from otel_eval.transport._request_buffer import RequestBuffer

logger = logging.getLogger("otel_eval.transport.kafka")  # the exporter's logger: one place for its lines

THREAD_NAME: Final = "OtelEvalKafkaExporter"
STOP_RESERVE_S: Final = 1.0
"""At most this much of a shutdown's time is kept for stopping the producer."""
_SEND_CHUNK: Final = 256
_RECONNECT_BACKOFF_MIN_S: Final = 0.2
_RECONNECT_BACKOFF_MAX_S: Final = 5.0
_PROBE_TIMEOUT_S: Final = 5.0


class KafkaSender:
    """Sends what ``buffer`` holds to ``topic`` from its own thread (started by :meth:`start`).

    Args:
        buffer: the exporter's requests.
        outage: the exporter's view of the broker's reachability.
        servers: the bootstrap servers.
        topic: the requests topic.
        producer_options: ``AIOKafkaProducer`` keyword arguments (besides the servers).
        max_request_size: largest message in bytes; bigger requests are dropped (``message_too_large``).
        security: describes errors without secrets.
    """

    def __init__(
        self,
        buffer: RequestBuffer,
        outage: OutageMonitor,
        *,
        servers: Sequence[str],
        topic: str,
        producer_options: dict[str, Any],
        max_request_size: int,
        security: KafkaSecurity,
    ) -> None:
        self._buffer = buffer
        self._outage = outage
        self._servers = list(servers)
        self.topic = topic
        self._producer_kwargs = producer_options
        self._max_request_size = max_request_size
        self._security = security
        self.connected = False
        """Whether the producer is started (the broker was reachable at least once since the last failure)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        self._main: asyncio.Task[None] | None = None
        self._next_probe = 0.0
        self._stop_budget = STOP_RESERVE_S
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._thread_main, name=THREAD_NAME, daemon=True)

    def start(self) -> None:
        """Starts the thread and waits until its loop runs."""
        self._thread.start()
        self._ready.wait()

    def wake(self) -> None:
        """Something to send (or to stop for): the sender looks now. Thread-safe."""
        loop, wakeup = self._loop, self._wakeup
        if loop is not None and wakeup is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed between the check and the call
                loop.call_soon_threadsafe(wakeup.set)

    def stop(self, budget: float, deadline: float) -> bool:
        """Stops sending (the buffer should be closed): the producer gets ``budget`` seconds to stop, the thread
        until ``deadline`` (monotonic) to end. Returns whether it ended."""
        self._stop_budget = budget
        loop, main = self._loop, self._main
        if loop is not None and main is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(main.cancel)
        self._thread.join(max(0.05, deadline - time.monotonic()))
        return not self._thread.is_alive()

    def _thread_main(self) -> None:
        # The producer's own work must never be traced into the agent's telemetry.
        token = otel_context.attach(otel_context.set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            asyncio.run(self._send())
        except Exception:  # thread boundary: log, then fail what is left so flush() returns
            logger.exception("Kafka exporter thread crashed")
        finally:
            otel_context.detach(token)
            dropped = self._buffer.drop_remaining()
            if dropped:
                why = " (the broker was unreachable)" if self._outage.unavailable else ""
                logger.warning("Kafka exporter stopped: %d undelivered evaluation requests dropped%s", dropped, why)

    async def _send(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wakeup = asyncio.Event()
        self._main = asyncio.current_task()
        quiet_client_logs(self._loop, self._on_client_record)
        self._ready.set()
        producer: Any = None
        backoff = _RECONNECT_BACKOFF_MIN_S
        try:
            while not self._buffer.closed:
                self._outage.tick()
                if producer is None:
                    producer = await self._start_producer()
                    if producer is None:
                        await self._sleep_or_wake(backoff)
                        backoff = min(backoff * 2, _RECONNECT_BACKOFF_MAX_S)
                        continue
                    backoff = _RECONNECT_BACKOFF_MIN_S
                batch = self._buffer.take(_SEND_CHUNK)
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
                self.connected = False
                # shutdown()'s cancel may land while the producer stops (the loop had already seen the buffer
                # closed): stop_client then closes it at once, and the thread ends as it would have.
                with contextlib.suppress(asyncio.CancelledError):
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
        self.connected = True
        self._outage.reachable()
        logger.debug("Kafka producer connected to %s, topic %s", self._servers, self.topic)
        return producer

    async def _probe(self, producer: Any) -> bool:
        """One metadata request to the brokers: whether they answer (and the outage state updated)."""
        try:
            await probe_broker(producer, _PROBE_TIMEOUT_S)
        except TimeoutError:
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

    async def _send_batch(self, producer: Any, batch: list[EvaluationRequest]) -> bool:
        """Hands ``batch`` to the producer. False when the broker was unreachable (the rest is re-queued)."""
        from aiokafka.errors import KafkaError

        for index, request in enumerate(batch):
            try:
                value = request.to_wire()
            except Exception as exc:  # noqa: BLE001 - one bad request must not stop the others
                logger.warning("evaluation request of trace %s cannot be serialised: %r", request.trace_id, exc)
                self._buffer.settle(semconv.DROP_TRANSPORT_SERIALIZATION_ERROR)
                continue
            if len(value) > self._max_request_size:
                logger.warning(
                    "evaluation request of trace %s is %d bytes, over max_request_size %d: dropped",
                    request.trace_id,
                    len(value),
                    self._max_request_size,
                )
                self._buffer.settle(semconv.DROP_TRANSPORT_MESSAGE_TOO_LARGE)
                continue
            try:
                future = await producer.send(
                    self.topic, value=value, key=request.record_key.encode("utf-8", "surrogatepass") or None
                )
            except KafkaError as exc:
                if is_retriable(exc):
                    self._buffer.requeue(batch[index:])
                    self._unreachable(exc)
                    return False
                logger.warning("Kafka rejected a request of trace %s: %s", request.trace_id, exc)
                self._buffer.settle(semconv.DROP_TRANSPORT_ERROR)
                continue
            future.add_done_callback(lambda fut, req=request: self._on_delivery(fut, req))
        return True

    def _on_delivery(self, future: asyncio.Future[Any], request: EvaluationRequest) -> None:
        if future.cancelled():
            self._buffer.requeue([request])
            return
        exc = future.exception()
        if exc is None:
            self._buffer.settle(None)
            self._outage.reachable()
            return
        if is_retriable(exc):
            logger.debug("Kafka delivery of trace %s failed, re-queued: %r", request.trace_id, exc)
            self._buffer.requeue([request])
            self._unreachable(exc)
            self.wake()
            return
        logger.warning("Kafka delivery of trace %s failed: %s", request.trace_id, self._security.describe_error(exc))
        self._buffer.settle(semconv.DROP_TRANSPORT_ERROR)
