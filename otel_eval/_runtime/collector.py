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
from collections.abc import Iterator
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
