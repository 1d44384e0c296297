"""The collections an evaluation thread runs itself (``otel_eval._runtime.collector``), on CPython's own collector."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator

import pytest

from otel_eval._runtime.collector import collect_young_here, collections_deferred, collections_resumed


@pytest.fixture
def collections() -> Iterator[list[tuple[int, str]]]:
    """The collections that start while the test runs: (generation, thread name)."""
    seen: list[tuple[int, str]] = []

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append((info["generation"], threading.current_thread().name))

    enabled = gc.isenabled()
    gc.enable()
    gc.collect()
    gc.callbacks.append(callback)
    try:
        yield seen
    finally:
        gc.callbacks.remove(callback)
        (gc.enable if enabled else gc.disable)()


def _young_to(share: float) -> list[list[int]]:
    """Allocates tracked containers until the young generation's count is ``share`` of its threshold."""
    kept: list[list[int]] = []
    while gc.get_count()[0] < gc.get_threshold()[0] * share:
        kept.append([])
    return kept


def test_a_young_generation_near_its_threshold_is_collected_on_the_calling_thread(
    collections: list[tuple[int, str]],
) -> None:
    kept = _young_to(0.9)
    collections.clear()
    assert collect_young_here()
    assert collections == [(0, threading.current_thread().name)]
    assert gc.get_count()[0] < 10
    assert len(kept) > 0


def test_far_from_its_threshold_nothing_is_collected(collections: list[tuple[int, str]]) -> None:
    kept = _young_to(0.3)
    collections.clear()
    assert not collect_young_here()
    assert collections == []
    assert gc.get_count()[0] >= gc.get_threshold()[0] * 0.3 - 5
    del kept


def test_a_collector_the_application_turned_off_stays_off_and_collects_nothing(
    collections: list[tuple[int, str]],
) -> None:
    gc.disable()
    kept = _young_to(1.5)
    collections.clear()
    assert not collect_young_here()
    with collections_deferred():
        kept += _young_to(2.0)
    assert not gc.isenabled()
    assert collections == []


def test_the_block_defers_every_thread_s_collections_and_runs_them_here_after_it(
    collections: list[tuple[int, str]],
) -> None:
    threshold = gc.get_threshold()[0]
    inside, allocated = threading.Event(), threading.Event()
    kept: list[list[int]] = []

    def agent() -> None:  # another thread allocating past the threshold while the block runs
        inside.wait(10)
        kept.extend([] for _ in range(3 * threshold))
        allocated.set()

    thread = threading.Thread(target=agent, name="agent")
    thread.start()
    with collections_deferred():
        assert not gc.isenabled()
        inside.set()
        assert allocated.wait(10)
    thread.join(10)
    assert gc.isenabled()
    assert collections and all(name == threading.current_thread().name for _, name in collections)
    assert "agent" not in {name for _, name in collections}
    assert gc.get_count()[0] < threshold


def test_the_collector_is_on_again_after_a_block_that_raised(collections: list[tuple[int, str]]) -> None:
    with pytest.raises(ValueError), collections_deferred():
        assert not gc.isenabled()
        raise ValueError("the step failed")
    assert gc.isenabled()


def test_a_long_wait_inside_the_block_runs_with_the_collector_on(collections: list[tuple[int, str]]) -> None:
    with collections_resumed():
        assert gc.isenabled()  # outside a block: nothing changes
    with collections_deferred():
        with collections_resumed():
            assert gc.isenabled()
        assert not gc.isenabled()
        with collections_deferred():  # nested: the outer block keeps the pause
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_another_thread_pauses_the_collector_has_it_on(
    collections: list[tuple[int, str]],
) -> None:
    inside, done = threading.Event(), threading.Event()

    def evaluation() -> None:
        with collections_deferred():
            inside.set()
            done.wait(10)

    thread = threading.Thread(target=evaluation)
    thread.start()
    try:
        assert inside.wait(10)
        assert not gc.isenabled()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report and leave at once
            os.write(write, b"1" if gc.isenabled() else b"0")
            os._exit(0)
        os.close(write)
        reported = os.read(read, 1)
        os.close(read)
        os.waitpid(pid, 0)
    finally:
        done.set()
        thread.join(10)
    assert reported == b"1"
    assert gc.isenabled()
