"""Load shedding in ``on_end`` while the transport is full: spans are dropped at once, their traces remembered."""

from __future__ import annotations

import threading

MAX_SHED_TRACES = 65536
"""Shed trace ids remembered at most until the background thread takes them (beyond, spans are still shed)."""


class Shedder:
    """Whether spans are being shed, and what was shed since the background thread last looked.

    ``active`` is read without the lock on the agent's threads (a stale read sheds one span too many or too few);
    :meth:`shed` re-checks it under the lock.
    """

    __slots__ = ("_lock", "_spans", "_traces", "active")

    def __init__(self) -> None:
        self.active = False
        self._lock = threading.Lock()
        self._spans = 0
        self._traces: dict[int, None] = {}

    def shed(self, trace_id: int) -> bool:
        """Drops a span of ``trace_id`` (remembering the trace). False when shedding just stopped."""
        with self._lock:
            if not self.active:
                return False
            self._spans += 1
            if len(self._traces) < MAX_SHED_TRACES:
                self._traces[trace_id] = None
            return True

    def start(self) -> bool:
        """Starts shedding; True when it was not already on (the caller then drops the open traces whole)."""
        with self._lock:
            started, self.active = not self.active, True
            return started

    def take(self, *, full: bool) -> tuple[int, list[int]]:
        """The spans shed since the last call and their traces' ids; stops shedding unless the transport is ``full``."""
        with self._lock:
            spans, self._spans = self._spans, 0
            traces, self._traces = list(self._traces), {}
            if not full:
                self.active = False
        return spans, traces
