"""The worker's task supervision: a stop ends every task, even one whose code swallowed a cancellation."""

from __future__ import annotations

import asyncio
import contextlib

from otel_eval.worker._supervisor import Supervisor


async def _swallows_one_cancellation() -> None:
    # What asyncio.wait_for (before Python 3.12) does when its call fails in the turn the caller is cancelled: the
    # call's error is returned, and a loop that catches errors (the broker watch) goes on.
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.sleep(60)
    await asyncio.Event().wait()


async def test_a_stop_ends_a_task_that_swallowed_the_first_cancellation() -> None:
    errors: list[BaseException] = []
    tasks = Supervisor(errors.append)
    stubborn = tasks.start(_swallows_one_cancellation(), "stubborn")
    plain = tasks.start(asyncio.sleep(60), "plain")
    await asyncio.sleep(0)
    await asyncio.wait_for(tasks.stop(), timeout=5)
    assert stubborn.cancelled() and plain.cancelled()
    assert errors == []
