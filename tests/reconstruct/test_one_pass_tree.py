"""The span tree links a trace in one pass, and ``rebuild_traces`` leaves each trace's order to its tree: both proven
equal to the general path on every recorded, framework, hostile, demo and session trace, in the order read and
shuffled.

The reference below is the tree's former construction (a dict of the first span per id, a rank per span, a pass for
the parent links, a pass for the children): the one pass must give the same kept spans, roots, children, parent
links and problems, in the same order.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Sequence

import pytest

from otel_eval.reconstruct import group_by_trace, rebuild_trace, rebuild_traces, without_evaluator_spans
from otel_eval.reconstruct._span_tree import SpanTree
from otel_eval.traces.span import Span
from tests.reconstruct.test_rebuild_on_demand import _traces

_RANK = operator.attrgetter("start_time_ns", "end_time_ns", "span_id", "name", "parent_span_id")
Links = tuple[list[str], list[str], dict[str, list[str]], dict[str, str], list[str]]


def _reference(spans: Sequence[Span]) -> Links:
    """The former multi-pass construction: (kept ids, root ids, children ids, parent links, problems)."""
    try:
        ranked = sorted(spans, key=_RANK)
    except TypeError:
        ranked = sorted(
            spans, key=lambda s: (s.start_time_ns, s.end_time_ns, s.span_id, s.name, s.parent_span_id or "")
        )
    problems: list[str] = []
    counts: dict[str, int] = {}

    def report(kind: str, message: str) -> None:
        counts[kind] = counts.get(kind, 0) + 1
        if counts[kind] <= 5:
            problems.append(message)

    by_id = {span.span_id: span for span in reversed(ranked)}
    kept = []
    for span in ranked:
        if by_id[span.span_id] is span:
            kept.append(span)
        else:
            report("duplicate", f"span {span.span_id}: span id used more than once; kept {by_id[span.span_id].name!r}")
    rank = {span.span_id: index for index, span in enumerate(kept)}
    parents: dict[str, str] = {}
    backward = False
    for index, span in enumerate(kept):
        parent = span.parent_span_id
        if parent == span.span_id:
            report("self", f"span {span.span_id}: is its own parent; treated as a root")
        elif parent and parent in by_id:
            parents[span.span_id] = parent
            backward = backward or rank[parent] > index
    if backward:
        state: dict[str, int] = {}
        for span in kept:
            path: list[str] = []
            current: str | None = span.span_id
            while current is not None and current not in state:
                state[current] = 1
                path.append(current)
                current = parents.get(current)
            if current is not None and state[current] == 1:
                report("cycle", f"span {current}: parent links form a cycle; treated as a root")
                del parents[current]
            for span_id in path:
                state[span_id] = 2
    children: dict[str, list[str]] = {}
    roots = []
    for span in kept:
        parent_id = parents.get(span.span_id)
        if parent_id is None:
            roots.append(span.span_id)
        else:
            children.setdefault(parent_id, []).append(span.span_id)
    labels = {"duplicate": "duplicate span ids", "self": "self-parented spans", "cycle": "parent cycles"}
    problems += [f"... and {n - 5} more {labels[kind]}" for kind, n in counts.items() if n > 5]
    return [s.span_id for s in kept], roots, children, parents, problems


def _links(tree: SpanTree) -> Links:
    children = {parent: [s.span_id for s in kids] for parent, kids in tree._children.items()}
    parents = {s.span_id: parent.span_id for s in tree.spans if (parent := tree.parent(s)) is not None}
    return [s.span_id for s in tree.spans], [s.span_id for s in tree.roots], children, parents, tree.problems


def _span(span_id: str, parent: str | None, start: int, name: str = "s") -> Span:
    return Span("1" * 32, span_id, parent, name, start, start + 10)


_BROKEN = [  # duplicates, a self-parent, parents ranked after their children, a two-span and a three-span cycle
    _span("a", None, 0),
    _span("b", "a", 1),
    _span("b", "a", 1, name="again"),
    _span("c", "c", 2),
    _span("d", "e", 3),
    _span("e", "a", 4),
    _span("f", "g", 5),
    _span("g", "f", 6),
    _span("h", "j", 7),
    _span("i", "h", 8),
    _span("j", "i", 9),
    _span("k", "missing", 10),
    *(_span(f"x{i}", "x0", 11 + i, name=f"dup{i}") for i in range(8)),
    *(_span("y", None, 20, name=f"y{i}") for i in range(8)),
]


@pytest.mark.parametrize("seed", range(5))
def test_the_one_pass_links_a_broken_trace_as_the_former_passes_did(seed: int) -> None:
    spans = list(_BROKEN)
    random.Random(seed).shuffle(spans)
    assert _links(SpanTree(spans)) == _reference(spans)
    assert SpanTree(spans).problems  # the repairs are named


def test_the_one_pass_links_every_recorded_trace_as_the_former_passes_did() -> None:
    checked = 0
    for name, spans in _traces():
        for trace_spans in group_by_trace(spans).values():
            shuffled = list(trace_spans)
            random.Random(name).shuffle(shuffled)
            assert _links(SpanTree(shuffled)) == _reference(trace_spans), name
            checked += 1
    assert checked > 50


def test_rebuild_traces_leaves_the_order_to_the_tree() -> None:
    """Unsorted groups rebuild as the sorted ones did (``rebuild_trace`` of each ``group_by_trace`` group), whatever
    order the spans come in."""
    for name, spans in _traces():
        expected = [
            rebuild_trace(kept)
            for kept in (without_evaluator_spans(group) for group in group_by_trace(spans).values())
            if kept
        ]
        expected.sort(key=lambda t: (t.start_time_ns, t.trace_id))
        shuffled = list(spans)
        random.Random(name).shuffle(shuffled)
        for order in (spans, shuffled, shuffled[::-1]):
            assert rebuild_traces(order) == expected, name
