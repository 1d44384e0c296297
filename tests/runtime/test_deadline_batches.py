"""DeadlineExecutor.map_async: a batch of steps in one hand-off, each step within its own deadline."""

from __future__ import annotations

import asyncio
import threading

from otel_eval._runtime.deadline import DeadlineExecutor, RecordTimeoutError


async def test_a_batch_runs_in_one_hand_off_and_keeps_each_steps_outcome() -> None:
    executor = DeadlineExecutor(1.0, name="test-batch")

    def boom() -> int:
        raise ValueError("bad record")

    outcomes = await executor.map_async(
        [("a", threading.get_ident), ("b", boom), ("c", threading.get_ident), ("d", lambda: 4)]
    )
    assert outcomes[0] == outcomes[2] != threading.get_ident()  # one thread for the batch, not the caller's
    assert isinstance(outcomes[1], ValueError) and outcomes[3] == 4
    assert await executor.map_async([]) == []


async def test_a_step_past_its_deadline_is_given_up_and_the_rest_run_at_once_on_a_new_thread() -> None:
    executor = DeadlineExecutor(0.3, name="test-batch-deadline")
    release = threading.Event()
    ran: list[str] = []

    def stuck() -> str:
        ran.append("stuck")
        release.wait()
        ran.append("stuck ended")
        return "late"

    def step(name: str) -> str:
        ran.append(name)
        return name

    try:
        outcomes = await executor.map_async(
            [("first", lambda: step("first")), ("stuck one", stuck), ("after", lambda: step("after"))]
        )
    finally:
        release.set()
    assert outcomes[0] == "first" and outcomes[2] == "after"
    assert isinstance(outcomes[1], RecordTimeoutError) and "stuck one took longer than 0.3 s" in str(outcomes[1])
    assert ran[:3] == ["first", "stuck", "after"]  # "after" did not wait for the stuck step
    assert executor.timeouts == 1
    await asyncio.sleep(0.2)  # the abandoned thread ends its step, and stops there
    assert ran.count("after") == 1 and "stuck ended" in ran
