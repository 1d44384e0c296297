"""What every backend score sink shares: a bounded queue, batches sent on a thread, retries, outages, counters.

:class:`BatchingSink` is the :data:`~otel_eval.emit.RecordSink`; a :class:`Backend` only turns records into its
requests and says what became of each. The sink never blocks its caller (the evaluation worker): records are
queued, or dropped and counted when the queue is full. A record the backend cannot take yet, because the span it
annotates has not arrived (the agent's exporter batches spans; the score is often faster) or the backend is down,
is retried with backoff until its retry window ends. An outage costs one WARNING when it starts, a summary at most
once a minute while it lasts and one INFO when it ends (:class:`~otel_eval._runtime.outages.OutageMonitor`, as for
the Kafka transport's outages); every failed attempt and every dropped score is counted (``otel_eval.sink.*`` by ``otel_eval.sink`` and ``otel_eval.sink.reason``).
Credentials stay in the HTTP client's headers: log lines name the endpoint and the error, never a header.
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

import httpx2
from opentelemetry.metrics import MeterProvider

from otel_eval import semconv
from otel_eval._runtime.forking import reinit_after_fork
from otel_eval._runtime.outages import SUMMARY_INTERVAL_S, OutageMonitor
from otel_eval.emit.attributes import utf8_record
from otel_eval.emit.sinks._counters import SinkMetrics
from otel_eval.model.messages import EvaluationRecord

logger = logging.getLogger("otel_eval.emit.sinks")

EXIT_FLUSH_S: Final = 5.0
"""At shutdown (and at interpreter exit, for all the sinks still open), a sink waits at most this many seconds for
what it holds to be delivered: a backend that is down must not hold up the agent's exit."""

OK: Final = "ok"
"""A :class:`Backend`'s outcome for a record the backend took."""
MISSING: Final = semconv.SINK_SPAN_MISSING
"""A :class:`Backend`'s outcome for a record whose span or trace is not in the backend yet (retried)."""


class Unreachable(Exception):
    """Raised by :meth:`Backend.send` when the backend did not take the batch for a passing reason (no connection,
    a timeout, a 5xx or 429 answer): the whole batch is retried after a backoff."""


@dataclass(frozen=True)
class Rejected:
    """A :class:`Backend`'s outcome for a record the backend refused (a 4xx answer): dropped, not retried."""

    detail: str


Outcome = str | Rejected
"""One record's fate in :meth:`Backend.send`: :data:`OK`, :data:`MISSING` or :class:`Rejected`."""


class Backend(Protocol):
    """One backend's half of a sink: its HTTP client and how records become its requests."""

    name: str
    """The sink's name (``otel_eval.sink``): ``phoenix``, ``mlflow``, ``langfuse``."""
    endpoint: str
    """The base URL, for log lines (never with credentials)."""

    def client(self) -> httpx2.Client:
        """A new client for the sink's thread, with the credentials in its headers."""

    def send(self, client: httpx2.Client, records: Sequence[EvaluationRecord]) -> list[Outcome]:
        """Sends ``records``; one outcome per record, in order.

        Raises:
            Unreachable: the backend could not take the batch now.
        """


def status_outcome(response: httpx2.Response) -> Outcome:
    """:data:`OK` for a 2xx answer, :class:`Rejected` for another 4xx (with the start of its body).

    Raises:
        Unreachable: a 5xx, 408 or 429 answer.
    """
    if response.is_success:
        return OK
    if response.status_code >= 500 or response.status_code in (408, 429):
        raise Unreachable(f"HTTP {response.status_code}")
    return Rejected(f"HTTP {response.status_code}: {_body_excerpt(response.text)}")


def _body_excerpt(text: str) -> str:
    """The start of a refusal's body, for the log, without the request's values a validation error echoes (FastAPI's
    ``input``, Phoenix's among them): they hold the explanation, which quotes the agent's text."""
    try:
        body = json.loads(text)
    except ValueError:
        pass
    else:
        text = json.dumps(_without_echo(body), ensure_ascii=False)
    return " ".join(text.split())[:200]


def _without_echo(value: object) -> object:
    if isinstance(value, dict):
        return {key: _without_echo(item) for key, item in value.items() if key != "input"}
    if isinstance(value, list):
        return [_without_echo(item) for item in value]
    return value


def describe(error: BaseException) -> str:
    """A one-line description of a transport error (httpx2's messages carry no headers)."""
    text = " ".join(str(error).split())[:200]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


@dataclass
class _Pending:
    record: EvaluationRecord
    deadline: float
    not_before: float = 0.0
    attempts: int = 0
    reason: str = field(default=semconv.SINK_UNREACHABLE)


class BatchingSink:
    """A :data:`~otel_eval.emit.RecordSink` delivering records to ``backend`` from a daemon thread.

    Args:
        backend: The backend's requests.
        informational: Also deliver informational results (no threshold, so no verdict); default only pass, fail
            and not-evaluated ones.
        retry_seconds: How long a record is retried (its span not in the backend yet, the backend down).
        max_queue_size: Records held at most (queued and awaiting a retry); more are dropped (``queue_full``).
        max_batch: Records per :meth:`Backend.send`.
        linger: Seconds a batch waits for more records after the first.
        backoff: First and largest delay between retries of a record, doubled after each attempt.
        meter_provider: Where the ``otel_eval.sink.*`` counters go (global when None).
        clock: Monotonic seconds.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        informational: bool = False,
        retry_seconds: float = 120.0,
        max_queue_size: int = 10_000,
        max_batch: int = 100,
        linger: float = 0.2,
        backoff: tuple[float, float] = (0.5, 10.0),
        meter_provider: MeterProvider | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_queue_size < 1 or max_batch < 1:
            raise ValueError("max_queue_size and max_batch must be at least 1")
        self.backend = backend
        self.metrics = SinkMetrics(backend.name, meter_provider)
        self._informational = informational
        self._retry_seconds = retry_seconds
        self._max_queue_size = max_queue_size
        self._max_batch = max_batch
        self._linger = linger
        self._backoff = backoff
        self._clock = clock
        self._closed = False
        self._reset()
        _open_sinks.add(self)
        reinit_after_fork(self._reset)

    def _reset(self) -> None:
        self._changed = threading.Condition()
        self._queue: deque[_Pending] = deque()
        self._in_flight = 0
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._paused_until = 0.0
        self._failures = 0  # consecutive unreachable attempts: the backoff before the next one
        self._outage_dropped = 0
        self._last_drop_line = -SUMMARY_INTERVAL_S
        self._outage = OutageMonitor(
            f"{self.backend.name} sink",
            [self.backend.endpoint],
            logger,
            peer="backend",
            retrying=f"holding scores and retrying quietly for up to {self._retry_seconds:.0f} s each",
            counts=lambda: {"score(s) held": len(self._queue) + self._in_flight, "dropped": self._outage_dropped},
            clock=self._clock,
        )

    # --- the caller's side: never blocks -------------------------------------------------------------------------

    def __call__(self, records: Sequence[EvaluationRecord]) -> None:
        """Queues ``records`` (informational ones only when asked); drops and counts what does not fit."""
        wanted = [utf8_record(r) for r in records if self._informational or r.label != semconv.LABEL_INFORMATIONAL]
        if not wanted or self._closed:
            if wanted:
                self.metrics.dropped(semconv.SINK_SHUTDOWN, len(wanted))
            return
        deadline = self._clock() + self._retry_seconds
        with self._changed:
            room = self._max_queue_size - len(self._queue) - self._in_flight
            taken = wanted[: max(0, room)]
            self._queue.extend(_Pending(record, deadline) for record in taken)
            if self._thread is None:
                self._thread = threading.Thread(name=f"OtelEvalSink-{self.backend.name}", target=self._run, daemon=True)
                self._thread.start()
            self._changed.notify_all()
        if len(taken) < len(wanted):
            self._drop(semconv.SINK_QUEUE_FULL, len(wanted) - len(taken), "its queue is full")

    def wait_for_room(self, wanted: int, timeout_s: float) -> bool:
        """Waits until ``wanted`` more records fit in the queue (for a caller that may wait: ``otel-eval run``,
        which must not drop a backfill's scores for a full queue); False when ``timeout_s`` passed first."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while self._max_queue_size - len(self._queue) - self._in_flight < min(wanted, self._max_queue_size):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed:
                    return False
                self._changed.wait(min(remaining, 0.5))
        return True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Waits until every held record is delivered or given up; False when ``timeout_millis`` passed first."""
        deadline = time.monotonic() + max(0, timeout_millis) / 1000
        with self._changed:
            while self._queue or self._in_flight:
                remaining = deadline - time.monotonic()
                thread = self._thread
                if remaining <= 0 or thread is None or not thread.is_alive():
                    return False
                self._changed.wait(min(remaining, 0.5))
        return True

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """Delivers what it holds within ``timeout_millis`` (at most :data:`EXIT_FLUSH_S`), then stops; what is
        left is dropped and counted (``shutdown``). Idempotent."""
        if self._closed:
            return
        self._closed = True
        timeout_millis = min(max(0, timeout_millis), int(EXIT_FLUSH_S * 1000))
        deadline = time.monotonic() + timeout_millis / 1000
        with self._changed:
            # What waits out the backoff after a failed attempt is tried at once: the exit leaves no time for the
            # backoff (up to 10 s), and a backend that was slow or down a moment ago may answer now.
            self._paused_until = 0.0
            self._changed.notify_all()
        self.force_flush(timeout_millis)
        with self._changed:
            left = len(self._queue) + self._in_flight  # a request still out is not known delivered: counted too
            self._queue.clear()
            self._stopping = True
            self._changed.notify_all()
            thread = self._thread
        if left:
            self.metrics.dropped(semconv.SINK_SHUTDOWN, left)
            logger.warning("%s sink: shut down with %d score(s) not delivered", self.backend.name, left)
        if thread is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
        _open_sinks.discard(self)

    def stats(self) -> dict[str, int]:
        """In-process totals: ``delivered``, ``dropped.<reason>``, ``failed_attempts.<reason>``."""
        return self.metrics.snapshot()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.backend.name}, {self.backend.endpoint})"

    # --- the sink's thread ---------------------------------------------------------------------------------------

    def _run(self) -> None:
        client = self.backend.client()
        try:
            while True:
                batch = self._next_batch()
                if batch is None:
                    return
                try:
                    self._attempt(client, batch)
                except Exception:  # the thread boundary: a backend bug must not stop delivery
                    logger.exception("%s sink: delivering a batch failed", self.backend.name)
                    self._finish(batch, [])
                    self.metrics.dropped(semconv.SINK_REJECTED, len(batch))
        finally:
            client.close()

    def _next_batch(self) -> list[_Pending] | None:
        """Waits for due records (lingering once for more) and takes up to ``max_batch``; None to stop."""
        lingered = False
        with self._changed:
            while True:
                if self._stopping:
                    return None
                now = self._clock()
                self._expire(now)
                self._outage.tick()
                earliest = min((p.not_before for p in self._queue), default=None)
                if earliest is None:
                    self._changed.wait()  # idle until a record or the stop comes
                    continue
                if max(earliest, self._paused_until) > now:
                    self._changed.wait(min(max(earliest, self._paused_until) - now, 1.0))
                    continue
                due = [p for p in self._queue if p.not_before <= now]
                if self._linger and not lingered and len(due) < self._max_batch and not self._closed:
                    lingered = True
                    self._changed.wait(self._linger)
                    continue
                batch = due[: self._max_batch]
                taken = {id(p) for p in batch}
                self._queue = deque(p for p in self._queue if id(p) not in taken)
                self._in_flight += len(batch)
                return batch

    def _attempt(self, client: httpx2.Client, batch: list[_Pending]) -> None:
        records = [p.record for p in batch]
        try:
            outcomes = self.backend.send(client, records)
        except (Unreachable, httpx2.TransportError) as error:
            self._unreachable(describe(error) if isinstance(error, httpx2.TransportError) else str(error))
            for pending in batch:
                pending.attempts += 1
                pending.reason = semconv.SINK_UNREACHABLE
            self._finish(batch, batch)
            return
        self._reachable()
        retry: list[_Pending] = []
        delivered = 0
        rejected: list[str] = []
        now = self._clock()
        for pending, outcome in zip(batch, outcomes, strict=True):
            if outcome == OK:
                delivered += 1
            elif isinstance(outcome, Rejected):
                rejected.append(outcome.detail)
            else:
                pending.attempts += 1
                pending.reason = semconv.SINK_SPAN_MISSING
                pending.not_before = now + self._delay(pending.attempts)
                retry.append(pending)
        if retry:
            self.metrics.failed_attempt(semconv.SINK_SPAN_MISSING)
        self.metrics.delivered(delivered)
        if rejected:
            self.metrics.failed_attempt(semconv.SINK_REJECTED)
            self._drop(semconv.SINK_REJECTED, len(rejected), f"the backend refused them ({rejected[0]})")
        self._finish(batch, retry)

    def _finish(self, batch: list[_Pending], retry: list[_Pending]) -> None:
        with self._changed:
            self._in_flight -= len(batch)
            if not self._stopping:
                self._queue.extend(retry)
            self._changed.notify_all()

    def _delay(self, attempts: int) -> float:
        first, largest = self._backoff
        return float(min(largest, first * 2 ** max(0, attempts - 1)))

    def _expire(self, now: float) -> None:
        """Drops the records whose retry window ended (called with the lock held)."""
        if not any(p.deadline <= now for p in self._queue):
            return
        expired = [p for p in self._queue if p.deadline <= now]
        self._queue = deque(p for p in self._queue if p.deadline > now)
        self._changed.notify_all()
        for reason in {p.reason for p in expired}:
            count = sum(1 for p in expired if p.reason == reason)
            example = next(p.record for p in expired if p.reason == reason)
            why = (
                f"their span never reached the backend within {self._retry_seconds:.0f} s (e.g. trace_id="
                f"{example.trace_id} span_id={example.span_id}: does the agent export its traces there?)"
                if reason == semconv.SINK_SPAN_MISSING
                else f"the backend did not take them within {self._retry_seconds:.0f} s"
            )
            self._drop(reason, count, why)

    # --- outages and drops: few log lines ------------------------------------------------------------------------

    def _unreachable(self, error: str) -> None:
        self.metrics.failed_attempt(semconv.SINK_UNREACHABLE)
        with self._changed:
            self._failures += 1
            self._paused_until = self._clock() + self._delay(self._failures)
        self._outage.unreachable(error)

    def _reachable(self) -> None:
        self._outage.reachable()
        with self._changed:
            self._failures = self._outage_dropped = 0
            self._paused_until = 0.0

    def _drop(self, reason: str, count: int, why: str) -> None:
        """Counts ``count`` dropped records; one WARNING per minute at most, none during an outage (its summary
        and recovery lines report the drops)."""
        self.metrics.dropped(reason, count)
        now = self._clock()
        with self._changed:
            if self._outage.unavailable:
                self._outage_dropped += count
                return
            if now - self._last_drop_line < SUMMARY_INTERVAL_S:
                return
            self._last_drop_line = now
        logger.warning(
            "%s sink: dropped %d score(s) (%s): %s; further drops are counted in %s, logged at most once a minute",
            self.backend.name,
            count,
            reason,
            why,
            semconv.METRIC_SINK_DROPPED,
        )


_open_sinks: weakref.WeakSet[BatchingSink] = weakref.WeakSet()


@atexit.register
def _deliver_at_exit() -> None:
    """Gives the sinks still open :data:`EXIT_FLUSH_S` seconds in all to deliver what they hold."""
    deadline = time.monotonic() + EXIT_FLUSH_S
    for sink in list(_open_sinks):
        sink.shutdown(int(max(0.0, deadline - time.monotonic()) * 1000))


__all__ = [
    "MISSING",
    "OK",
    "Backend",
    "BatchingSink",
    "Outcome",
    "Rejected",
    "SinkMetrics",
    "Unreachable",
    "describe",
    "status_outcome",
]
