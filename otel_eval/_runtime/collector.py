"""The garbage collector of a process otel-eval owns for serving (the Kafka worker), set up once it has started, and
during an offline ``run``.

A worker keeps a large, unchanging heap after start-up (the imported libraries, google-genai's and pydantic's types,
the evaluation core) and then allocates short-lived objects per request. With CPython's default thresholds the young
generation is collected every 700 net allocations, and each full collection walks the whole start-up heap: in
``bench_kafka`` that was about 60 µs of a worker's CPU per invocation, a sixth of it. Freezing the start-up heap takes
it out of every later collection, and a higher young-generation threshold collects the per-request garbage in larger,
rarer passes. Reference counting still frees everything that is not in a cycle at once.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Iterator
from itertools import repeat
from types import TracebackType
from typing import Final

SERVING_YOUNG_THRESHOLD: Final = 10_000
"""Net allocations of container objects between collections of the youngest generation (CPython's default: 700)."""


def tune_for_serving() -> None:
    """Collects what start-up left as garbage, freezes the rest (``gc.freeze``: never examined again) and raises the
    young generation's threshold to :data:`SERVING_YOUNG_THRESHOLD` (never lowers it). Call it once, in the process's
    own entry point after start-up, never from a library running in someone else's process."""
    gc.collect()
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, SERVING_YOUNG_THRESHOLD), middle, old)


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """The young generation collected every :data:`SERVING_YOUNG_THRESHOLD` allocations while the block runs (an
    offline ``run`` rebuilding and scoring traces: at CPython's default, ~50 collections took ~8% of the CPU of a run
    of 500 small ADK traces; 3 at this threshold). Restored after, since ``run`` may share its process with other
    work; a collector turned off stays off."""
    previous = gc.get_threshold()
    if 0 < previous[0] < SERVING_YOUNG_THRESHOLD:
        gc.set_threshold(SERVING_YOUNG_THRESHOLD, *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def collections_deferred() -> contextlib.AbstractContextManager[None]:
    """The collector paused while the block runs on this thread, and the collection it deferred run here after it.

    CPython collects on whichever thread allocates past the young generation's threshold. A background thread that
    evaluates in an agent's process (``EvaluationSpanProcessor``'s) runs while the agent's thread runs: a collection
    the agent's allocations trigger then walks the evaluation's live objects too, on the agent's thread. Paused for
    the block (``gc.disable()``: reference counting still frees what is not in a cycle) and resumed after it, the
    collections due meanwhile, the agent's included, run on this thread at the end (:func:`collect_young_here`),
    when the block's temporaries are gone. Which generation is collected, the older generations' thresholds and the
    full collection's long-lived ratio stay the collector's own.

    A collector the application turned off (``gc.isenabled()`` False when the block starts) is left off and nothing
    is collected; it is turned on again after the block whatever the block raised. One race is left: another thread
    of the application that turns the collector off *while* the block runs finds it on again after the block (an
    application that saves ``gc.isenabled()`` and restores it around its own section keeps its state). Not for long
    blocks: what the process allocates in cycles meanwhile waits for the block's end.

    A class, not a generator: an engine's thread enters it at every step, and a generator's context manager costs
    five more Python calls each time.
    """
    return _Deferred()


class _Deferred:
    """:func:`collections_deferred`'s context manager."""

    __slots__ = ("_ident",)
    _ident: int | None
    """The thread that paused the collector here, None when the block runs with it as it was."""

    def __enter__(self) -> None:
        if _paused.here or not gc.isenabled():
            self._ident = None
            return
        self._ident = ident = threading.get_ident()
        gc.disable()
        _paused.here = True
        _pausing.add(ident)  # a child forked meanwhile turns the collector on again (:func:`_after_fork_in_child`)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        ident = self._ident
        if ident is None:
            return
        _pausing.discard(ident)
        _paused.here = False
        gc.enable()
        if exc_type is None:  # as the block's end: what it raised goes on at once
            collect_young_here()


@contextlib.contextmanager
def collections_resumed() -> Iterator[None]:
    """Inside :func:`collections_deferred` on this thread, the collector on again while the block runs: for a wait
    that may be long (a large trace rebuilt under a deadline). Elsewhere, nothing."""
    if not _paused.here:
        yield
        return
    gc.enable()
    try:
        yield
    finally:
        gc.disable()


class _Paused(threading.local):
    here = False
    """This thread paused the collector (:func:`collections_deferred`)."""


_paused = _Paused()
_pausing: set[int] = set()
"""Threads in :func:`collections_deferred` now (``set.add``/``discard`` are atomic)."""


def _after_fork_in_child() -> None:
    """A process forked while a thread of its parent had the collector paused: that thread does not exist here, so
    nothing would turn it on again."""
    if _pausing:
        _pausing.clear()
        _paused.here = False
        gc.enable()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


_NEAR_SHARE: Final = 4
""":func:`collect_young_here` collects when the young generation is past 1 / this share of its threshold."""


def collect_young_here() -> bool:
    """Runs the collection the young generation is heading for now, on the calling thread, when it is past three quarters of
    its threshold; returns whether it did.

    CPython collects on whichever thread allocates past the young generation's threshold: in an agent's process,
    the objects a background thread leaves allocated (the evaluation's records and queued telemetry) make the agent's
    own thread pay for collections. A background thread calls this after its work: it allocates the rest of the way
    past the threshold (placeholders it frees at once) so that the collector's own trigger runs here, exactly as it
    would have on the agent's thread: which generation to collect, the older generations' thresholds and the full
    collection's long-lived ratio stay the collector's. Nothing global is changed, so nothing can be left changed,
    and a collector the application turned off (``gc.disable()``, or a threshold of 0) collects nothing here.
    """
    young = gc.get_threshold()[0]
    if young <= 0 or not gc.isenabled():
        return False
    missing = young - gc.get_count()[0] + 1  # the collector runs when the count passes the threshold
    if missing > young // _NEAR_SHARE:
        return False
    placeholders: list[list[object]] = list(map(list, repeat((), max(1, missing))))  # tracked, made in C
    del placeholders
    return True
