"""Session windows: a session's turns are held in time order until it is idle, full, or the process stops; a turn
after its session was judged opens a new window that says which turns it covers; overflow drops turns, counted."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from otel_eval.evaluation.sessions import SessionLimits, SessionWindows
from otel_eval.model import TracedInvocation
from otel_eval.semconv import DROP_MAX_OPEN_SESSIONS, DROP_MAX_SESSION_BYTES
from tests.worker._core_helpers import traced


def turn(session: str, index: int, *, start: int | None = None) -> TracedInvocation:
    base = traced(user=f"turn {index}", index=index)
    return base.model_copy(update={"session_id": session, "start_time_ns": start if start is not None else index})


def test_an_idle_session_closes_after_the_timeout_with_its_turns_in_time_order() -> None:
    windows = SessionWindows(SessionLimits(idle_timeout=10))
    assert windows.add(turn("a", 2, start=200), size_bytes=10, now=0.0) is None
    assert windows.add(turn("a", 1, start=100), size_bytes=10, now=5.0) is None  # ended later, started earlier

    assert windows.expire(14.9) == []
    assert windows.next_deadline() == 15.0
    (closed,) = windows.expire(15.0)
    assert [t.start_time_ns for t in closed.turns] == [100, 200]
    assert (closed.session_id, closed.window, closed.first_turn, closed.last_turn) == ("a", 0, 0, 1)
    assert len(windows) == 0 and windows.size_bytes == 0 and windows.next_deadline() is None


def test_sessions_close_independently_oldest_first() -> None:
    windows = SessionWindows(SessionLimits(idle_timeout=10))
    windows.add(turn("a", 1), size_bytes=1, now=0.0)
    windows.add(turn("b", 2), size_bytes=1, now=1.0)
    windows.add(turn("a", 3), size_bytes=1, now=4.0)  # a's deadline moves to 14

    assert [w.session_id for w in windows.expire(11.0)] == ["b"]
    assert [w.session_id for w in windows.expire(14.0)] == ["a"]


def test_a_full_session_closes_at_once_and_its_next_turn_opens_a_new_window() -> None:
    windows = SessionWindows(SessionLimits(idle_timeout=10, max_turns=2))
    assert windows.add(turn("a", 1), size_bytes=1, now=0.0) is None
    full = windows.add(turn("a", 2), size_bytes=1, now=1.0)
    assert full is not None and (full.window, full.first_turn, full.last_turn) == (0, 0, 1)
    assert windows.expire(100.0) == []  # the stale deadline of a closed window closes nothing

    windows.add(turn("a", 3), size_bytes=1, now=200.0)
    (resumed,) = windows.expire(210.0)
    assert (resumed.window, resumed.first_turn, resumed.last_turn) == (1, 2, 2)


def test_shutdown_closes_every_open_session() -> None:
    windows = SessionWindows()
    windows.add(turn("b", 1), size_bytes=1, now=2.0)
    windows.add(turn("a", 2), size_bytes=1, now=1.0)
    assert [w.session_id for w in windows.close_all()] == ["a", "b"]
    assert len(windows) == 0 and windows.next_deadline() is None


def test_overflow_drops_the_new_turn_and_counts_it_by_reason() -> None:
    windows = SessionWindows(SessionLimits(max_sessions=1, max_bytes=100))
    windows.add(turn("a", 1), size_bytes=60, now=0.0)
    assert windows.add(turn("b", 2), size_bytes=1, now=0.0) is None
    assert windows.add(turn("a", 3), size_bytes=50, now=0.0) is None
    assert windows.dropped == {DROP_MAX_OPEN_SESSIONS: 1, DROP_MAX_SESSION_BYTES: 1}
    (kept,) = windows.close_all()
    assert [t.invocation.invocation_id for t in kept.turns] == ["inv-1"]


def test_a_turn_without_a_session_is_refused() -> None:
    with pytest.raises(ValueError, match="session id"):
        SessionWindows().add(turn("a", 1).model_copy(update={"session_id": None}), size_bytes=1, now=0.0)


@pytest.mark.parametrize("field", ["idle_timeout", "max_turns", "max_sessions", "max_bytes"])
def test_limits_below_one_are_refused(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        SessionLimits(**{field: 0})


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 50), st.floats(0, 5)), max_size=40))
def test_every_turn_is_judged_exactly_once_whatever_the_arrivals(arrivals: list[tuple[str, int, float]]) -> None:
    """Property: with no overflow, the closed windows partition the turns, and each session's windows cover
    consecutive turn indexes from 0."""
    windows = SessionWindows(SessionLimits(idle_timeout=3, max_turns=4))
    closed = []
    now = 0.0
    for index, (session, start, gap) in enumerate(arrivals):
        now += gap
        closed += windows.expire(now)
        full = windows.add(turn(session, index, start=start), size_bytes=1, now=now)
        closed += [full] if full else []
    closed += windows.close_all()

    seen = sorted(t.invocation.invocation_id for w in closed for t in w.turns)
    assert seen == sorted(f"inv-{i}" for i in range(len(arrivals)))
    for session in "abc":
        mine = [w for w in closed if w.session_id == session]
        assert [w.window for w in mine] == list(range(len(mine)))
        assert [w.first_turn for w in mine] == [sum(len(p.turns) for p in mine[:i]) for i in range(len(mine))]
