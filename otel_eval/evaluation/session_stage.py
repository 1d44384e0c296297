"""The embedded worker's session stage: the turns of open sessions held (thread-safe) until each session closes.

The engine hands every turn whose conversation-level metrics wait for its session to :meth:`SessionStage.hold`
(from the processor's thread), asks :meth:`SessionStage.expire` for idle sessions (from its loop thread), and
:meth:`SessionStage.close_all` at shutdown. Turns the bounds refuse are counted in the pipeline counters as
``otel_eval.invocations.dropped`` with their reason (``max_open_sessions``, ``max_session_bytes``, ``shutdown``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence

from otel_eval import semconv
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.evaluation.sessions import SessionKey, SessionLimits, SessionWindow, SessionWindows
from otel_eval.model import TracedInvocation


def turn_size(turn: TracedInvocation) -> int:
    """Approximate bytes ``turn`` holds (its JSON form's length)."""
    return len(turn.model_dump_json())


class SessionStage:
    """:class:`SessionWindows` behind a lock, on the monotonic clock, reporting drops to ``pipeline``.

    Args:
        limits: When sessions close and how much is held.
        pipeline: Where refused turns are counted (not counted when None).
    """

    def __init__(self, limits: SessionLimits | None = None, pipeline: PipelineMetrics | None = None) -> None:
        self.limits = limits or SessionLimits()
        self._pipeline = pipeline
        self._lock = threading.Lock()
        self._windows = SessionWindows(self.limits)
        self._closed = False

    def __len__(self) -> int:
        return len(self._windows)

    def hold(self, turns: Sequence[TracedInvocation], *, tenant: str = "") -> list[SessionWindow]:
        """Holds each of ``turns`` (each with a session id) of ``tenant`` in its session's window; returns the windows
        these turns filled (``max_turns``), closed, to be judged now. After :meth:`close_all`, turns are dropped
        (``shutdown``)."""
        if self._closed:
            self._count(semconv.DROP_SHUTDOWN, len(turns))
            return []
        full = []
        sized = [(turn, turn_size(turn)) for turn in turns]  # serialised before the lock, not under it
        with self._lock:
            before = dict(self._windows.dropped)
            for turn, size in sized:
                window = self._windows.add(turn, size_bytes=size, now=time.monotonic(), tenant=tenant)
                if window is not None:
                    full.append(window)
            dropped = {reason: n - before.get(reason, 0) for reason, n in self._windows.dropped.items()}
        for reason, count in dropped.items():
            self._count(reason, count)
        return full

    def is_open(self, session_id: str, tenant: str = "") -> bool:
        """Whether ``tenant``'s session ``session_id`` has an open window (its turns are held)."""
        with self._lock:
            return (tenant, session_id) in self._windows

    def discard(self, session_ids: Iterable[str | SessionKey]) -> None:
        """Forgets the open windows of ``session_ids`` (session ids of the default tenant, or (tenant, session id)
        pairs) without judging them (their turns are to be read again)."""
        with self._lock:
            for session_id in session_ids:
                self._windows.discard(session_id)

    def seconds_to_next_close(self) -> float | None:
        """Seconds until the next session may close for idleness (None: none open)."""
        with self._lock:
            deadline = self._windows.next_deadline()
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    def expire(self) -> list[SessionWindow]:
        """The sessions idle for the idle timeout now, closed, to be judged."""
        with self._lock:
            return self._windows.expire(time.monotonic())

    def close_all(self) -> list[SessionWindow]:
        """Closes every open session (at shutdown) and refuses later turns."""
        with self._lock:
            self._closed = True
            return self._windows.close_all()

    def reset(self) -> None:
        """Forgets every open session (in a forked child, whose parent holds them)."""
        self._lock = threading.Lock()
        self._windows = SessionWindows(self.limits)

    def _count(self, reason: str, count: int) -> None:
        if self._pipeline is not None and count > 0:
            self._pipeline.invocations_dropped(reason, count)
