"""``RequestBuffer``: the Kafka exporter's bounded buffer of evaluation requests, counted until acknowledged.

The caller's thread offers requests (never waiting); the sender thread takes them, and settles each one it sent
(delivered, dropped for a reason, or put back to be sent again). A request counts against the bound from the
moment it is accepted until it is settled, so the bound holds while the broker is slow or away.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence

from otel_eval import semconv
from otel_eval.model.messages import EvaluationRequest


class RequestBuffer:
    """Requests waiting to be sent or acknowledged, at most ``capacity`` of them; thread-safe.

    Args:
        capacity: requests buffered or in flight at once; beyond it new ones are dropped.
        on_drop: called with (reason, count) for every drop, outside the lock.
    """

    def __init__(self, capacity: int, on_drop: Callable[[str, int], None]) -> None:
        self.capacity = capacity
        self._on_drop = on_drop
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queue: deque[EvaluationRequest] = deque()
        self._in_flight = 0
        self.accepted = 0
        """Requests taken into the buffer."""
        self.delivered = 0
        """Requests acknowledged by the broker (a re-sent request counts once per acknowledgement)."""
        self.retries = 0
        """Sends that failed retriably and were queued again."""
        self._dropped: Counter[str] = Counter()
        self._closed = False
        self.last_ack = time.monotonic()
        """When the broker last acknowledged a request (monotonic seconds)."""

    @property
    def pending(self) -> int:
        """Requests buffered or in flight."""
        with self._lock:
            return len(self._queue) + self._in_flight

    @property
    def closed(self) -> bool:
        """Whether the buffer stopped accepting (shutdown)."""
        return self._closed

    def dropped(self) -> dict[str, int]:
        """Dropped requests by ``otel_eval.drop.reason``."""
        with self._lock:
            return dict(self._dropped)

    def offer(self, requests: Sequence[EvaluationRequest]) -> int:
        """Takes ``requests`` while there is room; returns how many were dropped (``transport_queue_full``, or
        ``shutdown`` once closed)."""
        dropped = 0
        with self._lock:
            closed = self._closed
            for request in requests:
                if closed or len(self._queue) + self._in_flight >= self.capacity:
                    dropped += 1
                else:
                    self._queue.append(request)
                    self.accepted += 1
            reason = semconv.DROP_SHUTDOWN if closed else semconv.DROP_TRANSPORT_QUEUE_FULL
            if dropped:
                self._dropped[reason] += dropped
        if dropped:
            self._on_drop(reason, dropped)
        return dropped

    def take(self, limit: int) -> list[EvaluationRequest]:
        """Up to ``limit`` requests to send, oldest first; they stay counted (in flight) until settled."""
        with self._lock:
            batch = [self._queue.popleft() for _ in range(min(limit, len(self._queue)))]
            self._in_flight += len(batch)
        return batch

    def settle(self, drop_reason: str | None) -> None:
        """One request in flight is finished: delivered (``None``) or dropped for ``drop_reason``."""
        with self._lock:
            self._in_flight -= 1
            if drop_reason is None:
                self.delivered += 1
                self.last_ack = time.monotonic()
            else:
                self._dropped[drop_reason] += 1
            if not self._queue and not self._in_flight:
                self._idle.notify_all()
        if drop_reason is not None:
            self._on_drop(drop_reason, 1)

    def requeue(self, requests: Sequence[EvaluationRequest]) -> None:
        """Requests in flight whose send failed retriably: first in line again."""
        with self._lock:
            self._in_flight -= len(requests)
            self.retries += len(requests)
            self._queue.extendleft(reversed(requests))

    def close(self) -> None:
        """Stops accepting: later offers are dropped (``shutdown``)."""
        with self._lock:
            self._closed = True

    def drop_remaining(self) -> int:
        """Closes the buffer and drops what it holds (``shutdown``); returns how many."""
        with self._lock:
            count = len(self._queue) + self._in_flight
            self._queue.clear()
            self._in_flight = 0
            self._closed = True
            if count:
                self._dropped[semconv.DROP_SHUTDOWN] += count
            self._idle.notify_all()
        if count:
            self._on_drop(semconv.DROP_SHUTDOWN, count)
        return count

    def wait_delivered(self, deadline: float, stall: float) -> bool:
        """Waits until nothing is pending; False at ``deadline`` (monotonic), or once the broker has acknowledged
        nothing for ``stall`` seconds."""
        started = time.monotonic()
        with self._idle:
            while self._queue or self._in_flight:
                now = time.monotonic()
                give_up = min(deadline, max(started, self.last_ack) + stall)
                if now >= give_up:
                    return False
                self._idle.wait(give_up - now)
        return True

    def reset_after_fork(self) -> None:
        """In a forked child: fresh locks and nothing held (the parent's requests stay the parent's to send)."""
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queue = deque()
        self._in_flight = 0
