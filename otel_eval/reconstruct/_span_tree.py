"""Parent/child navigation over the spans of one trace, safe against missing parents and parent cycles."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence

from otel_eval.traces.span import Span


class SpanTree:
    """The spans of one trace as a forest.

    A span whose parent is not in the trace (or that sits on a parent cycle) is a root. Children are kept in start-time
    order. Nothing here raises on malformed links: a cycle is cut where it closes, and it is reported in ``problems``.
    """

    def __init__(self, spans: Sequence[Span]) -> None:
        self.spans: list[Span] = sorted(spans, key=lambda s: (s.start_time_ns, s.end_time_ns, s.span_id))
        self.by_id: dict[str, Span] = {}
        for span in self.spans:
            self.by_id.setdefault(span.span_id, span)
        self.problems: list[str] = []
        self._parent: dict[str, str] = {}
        for span in self.spans:
            parent = span.parent_span_id
            if parent and parent != span.span_id and parent in self.by_id:
                self._parent[span.span_id] = parent
        self._cut_cycles()
        self._children: dict[str, list[Span]] = defaultdict(list)
        for span in self.spans:
            parent = self._parent.get(span.span_id)
            if parent is not None:
                self._children[parent].append(span)
        self.roots: list[Span] = [s for s in self.spans if s.span_id not in self._parent]

    def _cut_cycles(self) -> None:
        state: dict[str, int] = {}  # 1 = on the current path, 2 = done
        for span in self.spans:
            path: list[str] = []
            current: str | None = span.span_id
            while current is not None and state.get(current) is None:
                state[current] = 1
                path.append(current)
                current = self._parent.get(current)
            if current is not None and state.get(current) == 1:
                # ``current`` closes a cycle: make it a root so every span stays reachable.
                self.problems.append(f"span {current}: parent links form a cycle; treated as a root")
                del self._parent[current]
            for span_id in path:
                state[span_id] = 2

    def parent(self, span: Span) -> Span | None:
        """The parent span, when it is in the trace."""
        parent_id = self._parent.get(span.span_id)
        return None if parent_id is None else self.by_id[parent_id]

    def children(self, span: Span) -> list[Span]:
        """Direct children in start-time order."""
        return self._children.get(span.span_id, [])

    def ancestors(self, span: Span) -> Iterator[Span]:
        """Parent, grandparent, ... up to the root."""
        current = self.parent(span)
        while current is not None:
            yield current
            current = self.parent(current)

    def descendants(self, span: Span) -> list[Span]:
        """All spans below ``span`` (not itself), in start-time order."""
        found: list[Span] = []
        stack = list(reversed(self.children(span)))
        while stack:
            current = stack.pop()
            found.append(current)
            stack.extend(reversed(self.children(current)))
        found.sort(key=lambda s: (s.start_time_ns, s.end_time_ns, s.span_id))
        return found

    def has_ancestor(self, span: Span, predicate: Callable[[Span], bool]) -> bool:
        """Whether any ancestor satisfies ``predicate``."""
        return any(predicate(a) for a in self.ancestors(span))

    def subtrees(self, roots: Sequence[Span]) -> dict[str, list[Span]]:
        """Root span id -> the root and the spans under it, in start-time order.

        A span under no given root (a lost parent, or a trace whose spans carry no parent links at all) joins the
        tightest given root whose time range contains it; spans that fit no root are left out.
        """
        members: dict[str, list[Span]] = {}
        claimed: set[str] = set()
        for root in roots:
            if root.span_id in claimed:
                continue
            group = [root, *(d for d in self.descendants(root) if d.span_id not in claimed)]
            claimed.update(s.span_id for s in group)
            members[root.span_id] = group
        for span in self.spans:
            if span.span_id in claimed:
                continue
            top = span
            for ancestor in self.ancestors(span):
                top = ancestor
            if top.span_id in claimed:
                continue
            container = _tightest_container(top, [r for r in roots if r.span_id in members])
            if container is None:
                continue
            extra = [top, *self.descendants(top)]
            claimed.update(s.span_id for s in extra)
            members[container.span_id].extend(extra)
        for group in members.values():
            group.sort(key=lambda s: (s.start_time_ns, s.end_time_ns, s.span_id))
        return members


def _tightest_container(span: Span, candidates: Sequence[Span]) -> Span | None:
    best: Span | None = None
    for candidate in candidates:
        if candidate.span_id == span.span_id:
            continue
        fits = candidate.start_time_ns <= span.start_time_ns and span.end_time_ns <= candidate.end_time_ns
        if fits and (best is None or candidate.duration_ns < best.duration_ns):
            best = candidate
    return best


def covered_ns(intervals: Iterable[tuple[int, int]]) -> int:
    """Nanoseconds covered by ``(start, end)`` intervals, overlaps counted once; empty or inverted ones add nothing."""
    total = 0
    counted_to: int | None = None
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
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
    member_ids = {s.span_id for s in members}
    nested: set[str] = set()
    for span in members:
        if span.span_id == root.span_id:
            continue
        for ancestor in tree.ancestors(span):
            if ancestor.span_id == root.span_id or ancestor.span_id not in member_ids:
                break
            if is_tool(ancestor):
                nested.add(span.span_id)
                break
    top_tools = [s for s in members if is_tool(s) and s.span_id not in nested]
    for span in members:
        if span.span_id in nested or span.span_id == root.span_id or not is_agent(span):
            continue
        if any(contains(tool, span) and not _is_ancestor(tree, span, tool) for tool in top_tools):
            nested.add(span.span_id)
            nested.update(d.span_id for d in tree.descendants(span) if d.span_id in member_ids)
    return nested


def _is_ancestor(tree: SpanTree, candidate: Span, span: Span) -> bool:
    return any(a.span_id == candidate.span_id for a in tree.ancestors(span))
