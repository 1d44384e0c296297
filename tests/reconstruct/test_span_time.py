"""Time covered by spans, shared by every convention's model/tool seconds."""

from __future__ import annotations

from otel_eval.reconstruct._span_tree import covered_ns


def test_overlaps_count_once_and_malformed_intervals_add_nothing() -> None:
    assert covered_ns([]) == 0
    assert covered_ns([(0, 10), (5, 15), (20, 30)]) == 25
    assert covered_ns([(0, 30), (5, 15)]) == 30  # nested
    assert covered_ns([(10, 10), (50, 40)]) == 0  # empty and inverted (end before start)
    assert covered_ns([(50, 40), (0, 10)]) == 10


def test_tool_time_is_known_exactly_when_a_tool_interval_covers_time() -> None:
    """The rebuild asks whether any tool interval has an end after its start instead of summing them:
    the same answer as ``covered_ns(...) != 0`` on every interval list (empty, inverted, overlapping, negative)."""
    import itertools
    import random

    picks = [(a, b) for a, b in itertools.product((-5, 0, 3, 10), repeat=2)]
    generator = random.Random(36)
    for size in range(5):
        for _ in range(200):
            intervals = [generator.choice(picks) for _ in range(size)]
            assert (covered_ns(intervals) != 0) == any(end > start for start, end in intervals), intervals
