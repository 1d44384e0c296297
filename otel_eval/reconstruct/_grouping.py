"""How the GenAI, OpenInference and OpenLLMetry conventions group a trace's spans into invocations.

Each of those conventions finds its **invocation roots** (agent or workflow spans with none of their kind above them)
and reads every root with its subtree into an :class:`InvocationDraft` (:func:`invocations_of_roots`). A trace
without roots -- bare model-call spans, e.g. ``openai.chat`` without an agent instrumentation -- yields one invocation
per **user turn** (:func:`turn_invocations`): a model call whose input ends with tool results continues the turn
before it, and each tool span joins the turn during which it started.

The convention supplies a reader per root (:class:`RootReader`, or :class:`TurnReader` for the turn fallback) that
knows its own attributes; the grouping, ordering and empty-trace warning here are the same for all.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Protocol

from otel_eval.model import TracedInvocation
from otel_eval.reconstruct._draft import InvocationDraft, ModelCall, ToolRun, texts_of
from otel_eval.reconstruct._span_tree import SpanTree
from otel_eval.reconstruct._trajectory import plain_invocation
from otel_eval.reconstruct.base import TraceInvocations
from otel_eval.reconstruct.plain import PlainInvocation
from otel_eval.reconstruct.reads import Reads
from otel_eval.traces.span import Span


class InvocationReader:
    """Base of a convention's reader: the spans of one invocation (its root and the spans under it, time order) and
    the warnings met while reading them."""

    def __init__(self, tree: SpanTree, root: Span, members: Sequence[Span]) -> None:
        self.tree = tree
        self.root = root
        self.members = members
        self.member_ids = {s.span_id for s in members}
        self.warnings: list[str] = []


class RootReader(Protocol):
    """Reads one invocation root and the spans under it."""

    def draft(self) -> InvocationDraft:
        """Everything the convention read for the invocation."""


class TurnReader(Protocol):
    """Reads model calls and tool runs of a trace without invocation roots."""

    warnings: list[str]
    """Problems met while reading, shared by every turn of the trace."""

    def is_model_call(self, span: Span) -> bool:
        """Whether the span is one model call."""

    def is_tool(self, span: Span) -> bool:
        """Whether the span is one tool execution."""

    def model_call(self, span: Span) -> ModelCall:
        """A model-call span read."""

    def tool_run(self, span: Span) -> ToolRun:
        """A tool span read."""

    def has_content(self, span: Span) -> bool:
        """Whether the span carries message content (False when content capture was off)."""

    def session_id(self) -> str | None:
        """The session (conversation) id the spans name, if any."""


def invocations_of_roots(
    tree: SpanTree,
    roots: Sequence[Span],
    new_reader: Callable[[Span, Sequence[Span]], RootReader],
    reads: Reads = Reads.ALL,
) -> list[PlainInvocation]:
    """One invocation per root, read from the root's subtree (spans under no root join the tightest root in time),
    with the parts ``reads`` asks for (plain: :func:`trace_invocations` makes the models)."""
    groups = tree.subtrees(roots)
    invocations = []
    for root in roots:
        if root.span_id in groups:
            draft = new_reader(root, groups[root.span_id]).draft()
            draft.reads = reads
            draft.guardrail_tripped = guardrail_tripped(groups[root.span_id])
            invocations.append(plain_invocation(draft))
    return invocations


_TRIPWIRE = "Guardrail tripwire triggered"


def guardrail_tripped(members: Sequence[Span]) -> str | None:
    """The status message of the first span whose error says a guardrail's tripwire stopped the run (the OpenAI Agents
    SDK's ``Guardrail tripwire triggered``, as OpenInference and OpenLLMetry record it), or None."""
    for span in members:
        if span.status_code == "ERROR" and span.status_message and _TRIPWIRE in span.status_message:
            return span.status_message
    return None


def turn_invocations(
    tree: SpanTree,
    convention: str,
    new_reader: Callable[[Span, Sequence[Span]], TurnReader],
    reads: Reads = Reads.ALL,
) -> list[PlainInvocation]:
    """The model calls of a trace without invocation roots, one invocation per user turn (see the module docstring),
    with the parts ``reads`` asks for (plain: :func:`trace_invocations` makes the models).

    Calls and tools inside a tool span (an agent used as a tool) are left out, as everywhere else.
    """
    if not tree.spans:
        return []
    reader = new_reader(tree.spans[0], tree.spans)
    nested = tree.nearest(reader.is_tool)
    calls = [reader.model_call(s) for s in tree.spans if reader.is_model_call(s) and s.span_id not in nested]
    tools = [s for s in tree.spans if reader.is_tool(s) and s.span_id not in nested]
    tool_starts = [t.start_time_ns for t in tools]  # tree.spans is in start-time order
    turns = group_into_turns(calls)
    invocations = []
    for index, turn in enumerate(turns):
        first = bisect.bisect_left(tool_starts, turn[0].span.start_time_ns)
        last = (
            bisect.bisect_left(tool_starts, turns[index + 1][0].span.start_time_ns)
            if index + 1 < len(turns)
            else len(tools)
        )
        draft = InvocationDraft(convention=convention, root=turn[0].span, model_calls=turn, reads=reads)
        draft.tool_runs = [reader.tool_run(t) for t in tools[first:last]]
        draft.end_time_ns = max(c.span.end_time_ns for c in turn)
        draft.session_id = reader.session_id()
        draft.agent_name = next((c.author for c in turn if c.author), None)
        draft.content_captured = any(
            reader.has_content(s) for s in [c.span for c in turn] + [r.span for r in draft.tool_runs]
        )
        draft.warnings = reader.warnings
        invocations.append(plain_invocation(draft))
    return invocations


def starts_new_turn(call: ModelCall) -> bool:
    """Whether a model call begins a user turn: its last non-system input message is a user message with text.

    A call whose input ends with tool results (or the model's own tool calls) continues the turn before it.
    """
    for message in reversed(call.inputs):
        if message.role == "system":
            continue
        parts = message.parts or []
        if any(p.function_response or p.function_call for p in parts):
            return False
        return message.role == "user" and bool(texts_of(message))
    return True


def group_into_turns(calls: Sequence[ModelCall]) -> list[list[ModelCall]]:
    """Consecutive model calls (time order) grouped into user turns (see :func:`starts_new_turn`)."""
    turns: list[list[ModelCall]] = []
    for call in calls:
        if not turns or starts_new_turn(call):
            turns.append([call])
        else:
            turns[-1].append(call)
    return turns


def trace_invocations(
    tree: SpanTree, convention: str, invocations: list[PlainInvocation], empty_warning: str
) -> TraceInvocations:
    """The trace's result: its invocations in start-time order (the plain views, their models made when asked for),
    the tree's problems, and ``empty_warning`` (prefixed with the trace id) when nothing was rebuilt. A view whose root
    span ids or times are malformed (:attr:`PlainInvocation.trusted`) has its model made here, which validates them
    (and fails as it always did); the trace then hands on the models only."""
    trace_id = tree.spans[0].trace_id if tree.spans else ""
    warnings = list(tree.problems)
    if not invocations:
        warnings.append(f"trace {trace_id}: {empty_warning}")
    if all(view.trusted for view in invocations):  # the views' ids and times are the models'
        if len(invocations) > 1:
            invocations = sorted(invocations, key=_start_order)
        return TraceInvocations(trace_id=trace_id, convention=convention, warnings=warnings, plain=invocations)
    models = [view.traced() for view in invocations]
    if len(models) > 1:
        models.sort(key=_start_order)
    return TraceInvocations(trace_id=trace_id, convention=convention, invocations=models, warnings=warnings)


def _start_order(invocation: PlainInvocation | TracedInvocation) -> tuple[int, str]:
    return invocation.start_time_ns, invocation.span_id
