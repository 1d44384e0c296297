"""Session windows: the turns of each open conversation, held until the conversation is judged.

A conversation is the invocations that share a session id, in time order; its turns are usually separate traces
that end seconds or minutes apart. Per-invocation metrics are scored when each turn arrives; conversation-level
metrics need the whole conversation, so the turns are held here until the session *closes*:

* it has been idle (no new turn) for ``idle_timeout`` seconds,
* it reached ``max_turns`` turns,
* or the process shuts down (:meth:`SessionWindows.close_all`).

A turn that arrives after its session was judged opens a new window of the same session: windows are numbered per
session (0, 1, …), and each closed window says which turns of the session it covered (``first_turn`` and
``last_turn``, counted from 0 over the whole session as this process saw it), so its results get their own
deterministic ids.

Sessions are keyed by (tenant, session id): a session id is not a secret, and a tenant's turns never join another
tenant's window of the same id (see ``docs/security.md``; the embedded worker has one tenant, ``""``). The buffer is
bounded by sessions (overall and per tenant), turns per session and bytes; a turn that would pass a bound is dropped
and counted by reason (:attr:`SessionWindows.dropped`), never an open session. The structure is not thread-safe and
takes the clock from its caller (monotonic seconds): the engine that owns it serialises calls.
"""

from __future__ import annotations

import bisect
import heapq
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from otel_eval import environment_variables as env
from otel_eval import semconv
from otel_eval._runtime.field_types import check_field_types
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.model import TracedInvocation

SessionKey = tuple[str, str]
"""(tenant, session id)."""


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """When a session closes, and how much is held.

    Args:
        idle_timeout: Seconds without a new turn after which a session is judged. 300 by default: long enough for
            a person to read an answer and type the next question (chat turns are usually seconds to a minute or
            two apart), short enough that a conversation's scores arrive within minutes and open sessions stay few
            (between Datadog's 3 idle minutes and AWS AgentCore's 15).
        max_turns: Turns after which a session is judged at once (its next turn opens a new window).
        max_sessions: Open sessions held at once; a turn of a new session beyond it is dropped.
        max_bytes: Approximate bytes held over all open sessions; a turn that would pass it is dropped.
        max_sessions_per_tenant: Open sessions one tenant may hold at once; a turn of a new session of a tenant at
            it is dropped (None: only ``max_sessions``).
    """

    idle_timeout: float = env.DEFAULT_SESSION_IDLE_TIMEOUT
    max_turns: int = env.DEFAULT_SESSION_MAX_TURNS
    max_sessions: int = env.DEFAULT_MAX_OPEN_SESSIONS
    max_bytes: int = env.DEFAULT_MAX_SESSION_BYTES
    max_sessions_per_tenant: int | None = None

    def __post_init__(self) -> None:
        check_field_types(self)
        if self.idle_timeout <= 0:
            raise ValueError(f"idle_timeout must be positive, got {self.idle_timeout!r}")
        for name in ("max_turns", "max_sessions", "max_bytes", "max_sessions_per_tenant"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value!r}")


@dataclass(slots=True)
class SessionWindow:
    """The turns of one session collected since its last window closed, in time order."""

    session_id: str
    window: int
    """0 for a session's first window, then 1, 2, … for turns that arrived after a window was judged."""
    first_turn: int
    """Index, over the whole session, of this window's first turn."""
    turns: list[TracedInvocation] = field(default_factory=list)
    size_bytes: int = 0
    last_seen: float = 0.0
    tenant: str = ""
    """Whose session it is (``""``: the default tenant)."""

    @property
    def key(self) -> SessionKey:
        """(tenant, session id)."""
        return self.tenant, self.session_id

    @property
    def last_turn(self) -> int:
        """Index, over the whole session, of this window's last turn."""
        return self.first_turn + len(self.turns) - 1


class SessionWindows:
    """Open session windows, bounded, closed when idle, full, or at shutdown (see the module's docstring)."""

    def __init__(self, limits: SessionLimits | None = None) -> None:
        self.limits = limits or SessionLimits()
        self._open: dict[SessionKey, SessionWindow] = {}
        self._per_tenant: Counter[str] = Counter()
        self._next: dict[SessionKey, tuple[int, int]] = {}
        """Per session whose window closed: the next window's number and first turn index (bounded like _open)."""
        self._deadlines: list[tuple[float, SessionKey]] = []
        self._bytes = 0
        self.dropped: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self._open)

    def held_turns(self, key: SessionKey) -> int:
        """Turns held in session ``key``'s open window (0: none open)."""
        window = self._open.get(key)
        return len(window.turns) if window is not None else 0

    def __contains__(self, key: object) -> bool:
        """Whether session ``key`` (a (tenant, session id) pair, or a session id of the default tenant) is open."""
        return (("", key) if isinstance(key, str) else key) in self._open

    def open_sessions(self, tenant: str) -> int:
        """Sessions of ``tenant`` open now."""
        return self._per_tenant[tenant]

    @property
    def size_bytes(self) -> int:
        """Approximate bytes held over all open sessions."""
        return self._bytes

    def add(self, turn: TracedInvocation, *, size_bytes: int, now: float, tenant: str = "") -> SessionWindow | None:
        """Holds ``turn`` (which must carry a session id) of ``tenant`` in its session's window.

        Returns:
            The session's window when this turn filled it (``max_turns``): it is closed, to be judged now.
            None otherwise, also when the turn was dropped (counted in :attr:`dropped`).
        """
        session_id = turn.session_id
        if not session_id:
            raise ValueError("a turn without a session id has no session window")
        key = (tenant, session_id)
        window = self._open.get(key)
        if window is None:
            if len(self._open) >= self.limits.max_sessions:
                self.dropped[semconv.DROP_MAX_OPEN_SESSIONS] += 1
                return None
            per_tenant = self.limits.max_sessions_per_tenant
            if per_tenant is not None and self._per_tenant[tenant] >= per_tenant:
                self.dropped[semconv.DROP_TENANT_MAX_OPEN_SESSIONS] += 1
                return None
        if self._bytes + size_bytes > self.limits.max_bytes:
            self.dropped[semconv.DROP_MAX_SESSION_BYTES] += 1
            return None
        if window is None:
            number, first = self._next.pop(key, (0, 0))
            window = self._open[key] = SessionWindow(session_id, number, first, tenant=tenant)
            self._per_tenant[tenant] += 1
        bisect.insort(window.turns, turn, key=_time_order)
        window.size_bytes += size_bytes
        window.last_seen = now
        self._bytes += size_bytes
        heapq.heappush(self._deadlines, (now + self.limits.idle_timeout, key))
        if len(window.turns) >= self.limits.max_turns:
            return self._close(key)
        return None

    def next_deadline(self) -> float | None:
        """The earliest time at which :meth:`expire` may close a session (None: nothing open)."""
        while self._deadlines:
            deadline, key = self._deadlines[0]
            window = self._open.get(key)
            if window is not None and window.last_seen + self.limits.idle_timeout == deadline:
                return deadline
            heapq.heappop(self._deadlines)  # stale: the session got a later turn, or was closed
        return None

    def expire(self, now: float) -> list[SessionWindow]:
        """Closes and returns the sessions idle for ``idle_timeout`` at ``now``, oldest first."""
        closed = []
        while (deadline := self.next_deadline()) is not None and deadline <= now:
            _, key = heapq.heappop(self._deadlines)
            closed.append(self._close(key))
        return closed

    def close_all(self) -> list[SessionWindow]:
        """Closes and returns every open session (at shutdown), oldest activity first."""
        windows = sorted(self._open.values(), key=lambda w: w.last_seen)
        for window in windows:
            self._close(window.key)
        self._deadlines.clear()
        return windows

    def discard(self, key: str | SessionKey) -> None:
        """Forgets session ``key``'s open window (a (tenant, session id) pair, or a session id of the default tenant)
        without closing it (its turns are to be read again, e.g. by another worker): the window read again gets the
        same number and turn indexes."""
        key = ("", key) if isinstance(key, str) else key
        window = self._open.pop(key, None)
        if window is not None:
            self._untrack(window)
            self._next[key] = (window.window, window.first_turn)

    def _close(self, key: SessionKey) -> SessionWindow:
        window = self._open.pop(key)
        self._untrack(window)
        if len(self._next) >= self.limits.max_sessions:  # forget the oldest closed session's numbering
            del self._next[next(iter(self._next))]
        self._next[key] = (window.window + 1, window.last_turn + 1)
        return window

    def _untrack(self, window: SessionWindow) -> None:
        self._bytes -= window.size_bytes
        self._per_tenant[window.tenant] -= 1
        if not self._per_tenant[window.tenant]:
            del self._per_tenant[window.tenant]


def _time_order(turn: TracedInvocation) -> tuple[int, str, str]:
    return turn.start_time_ns, turn.trace_id, turn.span_id


# --- the session stage: the windows behind a lock, for the embedded worker and the Kafka worker ---------------------
#
# The embedded worker hands every turn whose conversation-level metrics wait for its session to
# :meth:`SessionStage.hold` (from the processor's thread), asks :meth:`SessionStage.expire` for idle sessions (from its
# loop thread), and :meth:`SessionStage.close_all` at shutdown; the Kafka worker holds its partitions' turns in one.
# Turns the bounds refuse are counted in the pipeline counters as ``otel_eval.invocations.dropped`` with their reason
# (``max_open_sessions``, ``max_session_bytes``, ``shutdown``).


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

    def held_turns(self, session_id: str, tenant: str = "") -> int:
        """Turns held in the open window of ``tenant``'s session ``session_id`` (0: none open)."""
        with self._lock:
            return self._windows.held_turns((tenant, session_id))

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
