"""DeadlineExecutor's step threads: reused while idle, never shared with a step that is still running."""

from __future__ import annotations

import threading

import pytest

from otel_eval._runtime.deadline import DeadlineExecutor, RecordTimeoutError


def test_steps_in_turn_reuse_one_thread_and_a_step_past_its_deadline_keeps_its_own() -> None:
    executor = DeadlineExecutor(0.2, name="test-reuse")
    first, second = executor.run("a", threading.get_ident), executor.run("b", threading.get_ident)
    assert first == second != threading.get_ident()  # one thread for steps in turn, not the caller's

    release = threading.Event()
    stuck_on: list[int] = []

    def stuck() -> None:
        stuck_on.append(threading.get_ident())
        release.wait()

    with pytest.raises(RecordTimeoutError):
        executor.run("stuck", stuck)
    after = executor.run("after", threading.get_ident)
    assert after != stuck_on[0]  # the next step does not queue behind the abandoned one
    assert executor.run("again", threading.get_ident) == after
    release.set()


def test_a_step_that_arrives_while_another_runs_gets_a_thread_of_its_own() -> None:
    executor = DeadlineExecutor(5.0, name="test-concurrent")
    started, release = threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    def long_step() -> None:
        seen["long"] = threading.get_ident()
        started.set()
        release.wait()

    caller = threading.Thread(target=executor.run, args=("long", long_step))
    caller.start()
    assert started.wait(5)
    seen["short"] = executor.run("short", threading.get_ident)  # returns while the long step still runs
    release.set()
    caller.join(5)
    assert seen["short"] != seen["long"]
