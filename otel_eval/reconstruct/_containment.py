"""Time-containment questions over many spans at once, in O(n log n) instead of one scan per span.

Conventions fall back on time when the parent links are missing ("the tightest root whose time range contains this
span", "an agent span inside a tool span's time range"). Asked span by span, each question scans every candidate, which
is quadratic on a trace of thousands of loose spans; here all questions of one kind are answered in one sweep over
start times with a Fenwick tree over end times.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

from otel_eval.traces.span import Span

if TYPE_CHECKING:
    from otel_eval.reconstruct._span_tree import SpanTree

K = TypeVar("K")


class _PrefixBest(Generic[K]):
    """Fenwick tree over positions ``0..size-1``: set a value at a position, get the best value over a prefix."""

    def __init__(self, size: int, better: Callable[[K, K], bool]) -> None:
        self._values: list[K | None] = [None] * (size + 1)
        self._better = better

    def offer(self, position: int, value: K) -> None:
        index = position + 1
        while index < len(self._values):
            current = self._values[index]
            if current is None or self._better(value, current):
                self._values[index] = value
            index += index & -index

    def best(self, length: int) -> K | None:
        """The best value among positions ``0..length-1``."""
        found: K | None = None
        index = length
        while index > 0:
            current = self._values[index]
            if current is not None and (found is None or self._better(current, found)):
                found = current
            index -= index & -index
        return found


def containing_range(
    candidates: Sequence[Span], keys: Sequence[K], queries: Sequence[Span]
) -> list[tuple[K, K] | None]:
    """For each query span, the smallest and largest key among the candidates whose time range contains it (start
    at or before the query's start, end at or after its end), or None when none does.

    Candidates and queries are expected to be different spans (a span is not compared with itself by id).
    """
    if not candidates or not queries:
        return [None] * len(queries)
    by_end = sorted(range(len(candidates)), key=lambda i: -candidates[i].end_time_ns)
    rank = {index: position for position, index in enumerate(by_end)}
    ascending_ends = sorted(c.end_time_ns for c in candidates)
    lowest: _PrefixBest[K] = _PrefixBest(len(candidates), lambda a, b: a < b)  # type: ignore[operator]
    highest: _PrefixBest[K] = _PrefixBest(len(candidates), lambda a, b: a > b)  # type: ignore[operator]
    # Sweep by start time; at equal starts candidates come first (a range contains one that starts with it).
    events = [(c.start_time_ns, 0, i) for i, c in enumerate(candidates)]
    events += [(q.start_time_ns, 1, i) for i, q in enumerate(queries)]
    events.sort()
    results: list[tuple[K, K] | None] = [None] * len(queries)
    for _, is_query, index in events:
        if not is_query:
            lowest.offer(rank[index], keys[index])
            highest.offer(rank[index], keys[index])
            continue
        ending_after = len(ascending_ends) - bisect.bisect_left(ascending_ends, queries[index].end_time_ns)
        low, high = lowest.best(ending_after), highest.best(ending_after)
        if low is not None and high is not None:
            results[index] = (low, high)
    return results


def tightest_containers(candidates: Sequence[Span], queries: Sequence[Span]) -> list[int | None]:
    """For each query span, the index of the shortest candidate containing it in time (the first one on ties)."""
    keys = [(c.duration_ns, i) for i, c in enumerate(candidates)]
    return [None if found is None else found[0][1] for found in containing_range(candidates, keys, queries)]


def containers_outside_subtree(tree: SpanTree, containers: Sequence[Span], spans: Sequence[Span]) -> list[Span]:
    """The spans of ``spans`` that lie within the time range of one of ``containers`` that is not below them in the
    tree (every span must be in ``tree``). O(k log k) for k containers and spans, whatever the size of the tree."""
    if not containers or not spans:
        return []
    places = sorted(tree.bounds(c)[0] for c in containers)  # where each container sits in the tree's pre-order
    size = len(places)
    before: _PrefixBest[int] = _PrefixBest(size, lambda a, b: a > b)  # latest end among containers left of a subtree
    after: _PrefixBest[int] = _PrefixBest(size, lambda a, b: a > b)  # ... and right of it (ranks mirrored)
    events = [(c.start_time_ns, 0, i) for i, c in enumerate(containers)]
    events += [(s.start_time_ns, 1, i) for i, s in enumerate(spans)]
    events.sort()
    found: list[Span] = []
    for _, is_span, index in events:
        if not is_span:
            container = containers[index]
            rank = bisect.bisect_left(places, tree.bounds(container)[0])
            before.offer(rank, container.end_time_ns)
            after.offer(size - 1 - rank, container.end_time_ns)
            continue
        span = spans[index]
        start, end = tree.bounds(span)
        left = bisect.bisect_left(places, start)  # containers placed before the span's subtree
        right = size - bisect.bisect_left(places, end)  # ... and after it
        latest = max(before.best(left) or -1, after.best(right) or -1)
        if latest >= span.end_time_ns:
            found.append(span)
    order = {s.span_id: i for i, s in enumerate(spans)}
    return sorted(found, key=lambda s: order[s.span_id])
