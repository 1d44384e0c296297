"""Time covered by spans, shared by every convention's model/tool seconds."""

from __future__ import annotations

from otel_eval.reconstruct._span_tree import covered_ns


def test_overlaps_count_once_and_malformed_intervals_add_nothing() -> None:
    assert covered_ns([]) == 0
    assert covered_ns([(0, 10), (5, 15), (20, 30)]) == 25
    assert covered_ns([(0, 30), (5, 15)]) == 30  # nested
    assert covered_ns([(10, 10), (50, 40)]) == 0  # empty and inverted (end before start)
    assert covered_ns([(50, 40), (0, 10)]) == 10
