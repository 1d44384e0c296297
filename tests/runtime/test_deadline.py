"""DeadlineExecutor's step threads: reused while idle, never shared with a step that is still running."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

from otel_eval._runtime.deadline import DeadlineExecutor, RecordTimeoutError
from tests.waiting import wait_until


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


class _Built:
    """What a step returns (a rebuilt trace's requests, say)."""


def test_what_an_abandoned_step_returns_is_not_kept_once_it_finished() -> None:
    # The processor's rebuild executor never asks how many abandoned steps still run: each abandoned step's future,
    # with what the step returned (a huge trace's requests), stayed in the executor for as long as the process lived.
    executor = DeadlineExecutor(0.05, name="test-abandoned")
    built: list[weakref.ref[_Built]] = []
    release = threading.Event()

    def slow() -> _Built:
        release.wait()
        result = _Built()
        built.append(weakref.ref(result))
        return result

    for _ in range(5):
        with pytest.raises(RecordTimeoutError):
            executor.run("slow", slow)
    assert executor.timeouts == 5
    release.set()
    assert wait_until(lambda: len(built) == 5)
    for _ in range(3):  # the idle step thread takes new steps (it no longer holds the last outcome it handed on)
        executor.run("quick", _Built)
    assert wait_until(lambda: gc.collect() >= 0 and all(ref() is None for ref in built), timeout=5)
