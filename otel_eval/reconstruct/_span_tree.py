"""The one parent/child view of a trace every convention reads through: deduplicated, acyclic, and linear to walk.

Spans are untrusted, so :class:`SpanTree` repairs what it is given before anything walks it, deterministically and with
a warning naming the span (``problems``): a span id seen twice keeps its first span (by start time, end time, name)
and drops the others; a span that is its own parent, or whose parent links close a cycle, becomes a root where the
cycle closes; spans whose parent is missing become roots (silently: partial exports are common). After that the parent
links form a forest, visited once in pre-order (``order``). Questions about ancestors are answered by one pass over that
order (:meth:`SpanTree.fold_down`, :meth:`SpanTree.nearest`) and subtrees are slices of it (:meth:`SpanTree.bounds`),
never by walking up from every span, which is quadratic on a deep chain (so the tree offers no ancestor iterator).
Nothing here recurses or raises on malformed links.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TypeVar

from otel_eval.reconstruct._containment import containers_outside_subtree, tightest_containers
from otel_eval.traces.span import Span

T = TypeVar("T")

_MAX_PROBLEMS_PER_KIND = 5


def time_order(span: Span) -> tuple[int, int, str]:
    """The order spans are kept in: start time, then end time, then span id."""
    return (span.start_time_ns, span.end_time_ns, span.span_id)


_RANK = operator.attrgetter("start_time_ns", "end_time_ns", "span_id", "name", "parent_span_id")


def _ranked(spans: Sequence[Span]) -> list[Span]:
    """``spans`` in :func:`time_order`, then by name and parent (a missing parent first): duplicate span ids are kept
    in this order. The key is read in C; only spans alike up to their names, one with a parent and one without, need
    the Python key."""
    try:
        return sorted(spans, key=_RANK)
    except TypeError:  # None against a parent id
        return sorted(spans, key=lambda s: (s.start_time_ns, s.end_time_ns, s.span_id, s.name, s.parent_span_id or ""))


class SpanTree:
    """The spans of one trace as a forest (see the module docstring for how broken links are repaired).

    Children are kept in start-time order. ``spans`` holds every kept span in start-time order, ``order`` the same
    spans with every parent before its children, ``roots`` the spans without a parent in the tree. The links are
    made in one pass over the spans in rank order (:func:`_ranked`).
    """

    def __init__(self, spans: Sequence[Span]) -> None:
        self.problems: list[str] = []
        self._counts: dict[str, int] = {}
        ranked = _ranked(spans)
        # One pass in rank order: the first span of an id is kept, and a parent seen before its child is linked at
        # once; a child seen before its parent (or whose parent is missing) is a root until the pass ends.
        self.by_id: dict[str, Span] = {}
        self._parent: dict[str, str] = {}
        self._children: dict[str, list[Span]] = {}
        self.roots: list[Span] = []
        by_id, parents, children, roots = self.by_id, self._parent, self._children, self.roots
        duplicates: list[Span] = []
        own_parents: list[Span] = []
        early: list[Span] = []  # spans ranked before their parent, or whose parent is missing
        for span in ranked:
            span_id = span.span_id
            if span_id in by_id:
                duplicates.append(span)
                continue
            parent = span.parent_span_id
            if not parent:
                roots.append(span)
            elif parent in by_id:  # ranked before this span (it is not this span: that one is not in by_id yet)
                parents[span_id] = parent
                kids = children.get(parent)
                if kids is None:
                    children[parent] = [span]
                else:
                    kids.append(span)
            else:
                (own_parents if parent == span_id else early).append(span)
                roots.append(span)
            by_id[span_id] = span
        self.spans: list[Span] = [s for s in ranked if by_id[s.span_id] is s] if duplicates else ranked
        for span in duplicates:
            self._report(
                "duplicate", f"span {span.span_id}: span id used more than once; kept {by_id[span.span_id].name!r}"
            )
        for span in own_parents:
            self._report("self", f"span {span.span_id}: is its own parent; treated as a root")
        backward = [span for span in early if span.parent_span_id in by_id]
        if backward:  # a parent ranked after its child: only then can the links close a cycle
            self._link_backward(backward)
        self._order: list[Span] | None = None
        self._end: dict[str, int] = {}
        self._position: dict[str, int] = {}
        self._nearest: dict[Callable[[Span], bool], dict[str, Span]] = {}
        if self._counts:
            self._summarise_problems()

    def _link_backward(self, backward: list[Span]) -> None:
        """Links the spans whose parent is ranked after them, cuts the cycles that can close, and places every kept
        span under its parent (or among the roots) again, in rank order."""
        parents = self._parent
        for span in backward:
            parents[span.span_id] = span.parent_span_id  # type: ignore[assignment]  # in by_id: not None
        self._cut_cycles()
        self._children = {}
        self.roots = []
        children = self._children
        for span in self.spans:
            parent_id = parents.get(span.span_id)
            if parent_id is None:
                self.roots.append(span)
            else:
                children.setdefault(parent_id, []).append(span)

    @property
    def order(self) -> list[Span]:
        """Every kept span, each parent before its children (children in start-time order): made on first use."""
        if self._order is None:
            self._visit()
            assert self._order is not None
        return self._order

    def _report(self, kind: str, message: str) -> None:
        count = self._counts.get(kind, 0) + 1
        self._counts[kind] = count
        if count <= _MAX_PROBLEMS_PER_KIND:
            self.problems.append(message)

    def _summarise_problems(self) -> None:
        labels = {"duplicate": "duplicate span ids", "self": "self-parented spans", "cycle": "parent cycles"}
        for kind, count in self._counts.items():
            if count > _MAX_PROBLEMS_PER_KIND:
                self.problems.append(f"... and {count - _MAX_PROBLEMS_PER_KIND} more {labels[kind]}")

    def _cut_cycles(self) -> None:
        state: dict[str, int] = {}  # 1 = on the current path, 2 = done
        for span in self.spans:
            path: list[str] = []
            current: str | None = span.span_id
            while current is not None and current not in state:
                state[current] = 1
                path.append(current)
                current = self._parent.get(current)
            if current is not None and state[current] == 1:
                # ``current`` closes a cycle: make it a root so every span stays reachable.
                self._report("cycle", f"span {current}: parent links form a cycle; treated as a root")
                del self._parent[current]
            for span_id in path:
                state[span_id] = 2

    def _visited(self) -> dict[str, int]:
        """Span id -> its place in :attr:`order` (the pre-order made first when it was not)."""
        if self._order is None:
            self._visit()
        return self._position

    def _visit(self) -> None:
        """Pre-order over the forest, without recursion: ``_position`` and ``_end`` bound each subtree."""
        stack: list[tuple[Span, bool]] = [(root, False) for root in reversed(self.roots)]
        order: list[Span] = []
        self._order = order
        position, end, children = self._position, self._end, self._children
        while stack:
            span, done = stack.pop()
            if done:
                end[span.span_id] = len(order)
                continue
            kids = children.get(span.span_id)
            position[span.span_id] = len(order)
            order.append(span)
            if kids is None:  # a leaf: its subtree ends right after it
                end[span.span_id] = len(order)
                continue
            stack.append((span, True))
            stack.extend((child, False) for child in reversed(kids))

    def parent(self, span: Span) -> Span | None:
        """The parent span, when it is in the trace (and not cut off as the closing link of a cycle)."""
        parent_id = self._parent.get(span.span_id)
        return None if parent_id is None else self.by_id[parent_id]

    def has_parent_chain(self, span: Span) -> bool:
        """Whether the span names no parent, or its parent is in the tree (False for lost and cut links)."""
        return not span.parent_span_id or span.span_id in self._parent

    def children(self, span: Span) -> list[Span]:
        """Direct children in start-time order."""
        return self._children.get(span.span_id, [])

    def bounds(self, span: Span) -> tuple[int, int]:
        """Where ``span``'s subtree lies in ``order``: ``order[start:end]``, the span itself first.

        Raises:
            KeyError: the span is not in the tree.
        """
        position = self._visited()
        return position[span.span_id], self._end[span.span_id]

    def subtree(self, span: Span) -> list[Span]:
        """``span`` and every span below it, parents before children."""
        start = self._visited().get(span.span_id)
        return [] if start is None else self.order[start : self._end[span.span_id]]

    def fold_down(self, step: Callable[[T, Span], T], initial: T) -> dict[str, T]:
        """A value per span computed from its parent's: ``value[root] = initial``, ``value[child] = step(value[parent],
        parent)``. One pass in pre-order: this is how "walk up from every span" questions are answered linearly."""
        values: dict[str, T] = {}
        parents, by_id = self._parent, self.by_id
        for span in self.order:
            parent_id = parents.get(span.span_id)
            values[span.span_id] = initial if parent_id is None else step(values[parent_id], by_id[parent_id])
        return values

    def nearest(self, predicate: Callable[[Span], bool], within: Collection[str] | None = None) -> dict[str, Span]:
        """Span id -> its nearest strict ancestor satisfying ``predicate`` (spans without one are absent).

        With ``within`` (span ids), only ancestors in it are looked at and the search stops at the first parent that
        is not in it; only spans in ``within`` get an answer. Linear in the spans looked at.

        Without ``within`` the answer is kept for the predicate (the same function object: a module-level one is
        computed once per tree, however many steps ask) and shared between callers: it must not be changed.
        """
        if within is None and predicate in self._nearest:
            return self._nearest[predicate]
        found: dict[str, Span] = {}
        if within is None:
            spans: Iterable[Span] = self.order
        else:
            position = self._visited()
            spans = sorted((self.by_id[i] for i in within if i in position), key=lambda s: position[s.span_id])
        for span in spans:
            parent_id = self._parent.get(span.span_id)
            if parent_id is None or (within is not None and parent_id not in within):
                continue
            parent = self.by_id[parent_id]
            if predicate(parent):
                found[span.span_id] = parent
            elif parent_id in found:
                found[span.span_id] = found[parent_id]
        if within is None:
            self._nearest[predicate] = found
        return found

    def tops(self, spans: Iterable[Span], predicate: Callable[[Span], bool]) -> list[Span]:
        """The spans of ``spans`` (time order kept) that satisfy ``predicate`` with no ancestor that does."""
        above = self.nearest(predicate)
        return [s for s in spans if predicate(s) and s.span_id not in above]

    def tops_of(self, ids: Collection[str]) -> list[Span]:
        """The spans whose ids are in ``ids`` with no ancestor whose id is (:meth:`tops` of every span, for the
        predicate "its id is in ``ids``", without a call per span), in time order."""
        if len(ids) <= 1:  # one span has none of the others above it
            return [s for s in self.spans if s.span_id in ids] if ids else []
        under: set[str] = set()  # spans with an ancestor in ids
        parents = self._parent
        for span in self.order:
            parent_id = parents.get(span.span_id)
            if parent_id is not None and (parent_id in ids or parent_id in under):
                under.add(span.span_id)
        return [s for s in self.spans if s.span_id in ids and s.span_id not in under]

    def subtrees(self, roots: Sequence[Span]) -> dict[str, list[Span]]:
        """Root span id -> the root and the spans under it, in start-time order.

        A span under no given root (a lost parent, or a trace whose spans carry no parent links at all) joins the
        tightest given root whose time range contains it; spans that fit no root are left out.
        """
        if len(roots) == 1 and len(self.roots) == 1 and roots[0] is self.roots[0]:
            # The one tree root: every span is its own, and ``spans`` is already in time order.
            return {roots[0].span_id: list(self.spans)}
        members: dict[str, list[Span]] = {}
        claimed: set[str] = set()
        for root in roots:
            if root.span_id in claimed or root.span_id not in self._visited():
                continue
            group = [s for s in self.subtree(root) if s.span_id not in claimed]
            claimed.update(s.span_id for s in group)
            members[root.span_id] = group
        # Every unclaimed span sits in the subtree of an unclaimed tree root: place whole such trees by time.
        loose = [r for r in self.roots if r.span_id not in claimed]
        candidates = [r for r in roots if r.span_id in members]
        for top, container in zip(loose, tightest_containers(candidates, loose), strict=True):
            if container is not None:
                members[candidates[container].span_id].extend(self.subtree(top))
        for group in members.values():
            group.sort(key=time_order)
        return members


def covered_ns(intervals: Iterable[tuple[int, int]]) -> int:
    """Nanoseconds covered by ``(start, end)`` intervals, overlaps counted once; empty or inverted ones add nothing."""
    total = 0
    counted_to: int | None = None
    kept = [interval for interval in intervals if interval[1] > interval[0]]
    kept.sort()
    for start, end in kept:
        if counted_to is not None and end <= counted_to:
            continue
        total += end - (start if counted_to is None else max(start, counted_to))
        counted_to = end
    return total


def contains(outer: Span, inner: Span) -> bool:
    """Whether ``inner``'s time range lies within ``outer``'s (and they are different spans)."""
    return (
        outer.span_id != inner.span_id
        and outer.start_time_ns <= inner.start_time_ns
        and inner.end_time_ns <= outer.end_time_ns
    )


def nested_span_ids(
    tree: SpanTree,
    root: Span,
    members: Sequence[Span],
    is_tool: Callable[[Span], bool],
    is_agent: Callable[[Span], bool],
) -> set[str]:
    """Ids of the spans of one invocation that ran inside a tool (an agent used as a tool, a tool calling a model).

    A span is nested when a tool span lies between it and the invocation root. Some instrumentations (OpenAI Agents
    via OpenLLMetry) start an agent-as-tool's agent span as a *sibling* of the tool span rather than its child; such an
    agent span is recognised by lying within a top-level tool span's time range, and it is nested with everything below.
    """
    tools = [s for s in members if is_tool(s)]
    nested: set[str] = set()
    if tools and any(t.span_id in tree._children for t in tools):  # else no span lies below a tool
        member_ids = {s.span_id for s in members}
        tool_above = tree.nearest(is_tool, within=member_ids - {root.span_id})
        nested = {s.span_id for s in members if s.span_id in tool_above and s.span_id != root.span_id}
    top_tools = [s for s in tools if s.span_id not in nested]
    agents = [s for s in members if s.span_id not in nested and s.span_id != root.span_id and is_agent(s)]
    if not top_tools or not agents:
        return nested
    member_ids = {s.span_id for s in members}
    for agent in containers_outside_subtree(tree, top_tools, agents):
        if agent.span_id in nested:
            continue
        nested.add(agent.span_id)
        nested.update(d.span_id for d in tree.subtree(agent) if d.span_id in member_ids)
    return nested
