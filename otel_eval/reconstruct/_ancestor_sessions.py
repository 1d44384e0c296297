"""An invocation whose own spans name no session joins the session its nearest ancestor span in the trace names (the
application's request span above the agent's invocation span, say): the rule ``rebuild_trace`` applies after every
convention's rebuild, so ``otel-eval run``, the span processor and the Collector path group turns alike.

The ancestors are read through the trace's :class:`~otel_eval.reconstruct._span_tree.SpanTree` (deduplicated, cycles
cut) in one linear pass (:meth:`~otel_eval.reconstruct._span_tree.SpanTree.nearest`), and only when some invocation
names no session and some span of the trace names one.
"""

from __future__ import annotations

from collections.abc import Sequence

from otel_eval.model import TracedInvocation
from otel_eval.reconstruct._span_tree import SpanTree
from otel_eval.reconstruct.base import TraceInvocations
from otel_eval.reconstruct.plain import PlainInvocation
from otel_eval.reconstruct.sessions import session_id_of
from otel_eval.traces.span import Span


def _names_session(span: Span) -> bool:
    return session_id_of((span,)) is not None


def inherit_sessions(spans: Sequence[Span], trace: TraceInvocations) -> TraceInvocations:
    """``trace`` (rebuilt from ``spans``), each invocation that names no session given the one its nearest ancestor
    span names, if any (a session the invocation's own spans name always wins)."""
    views: Sequence[PlainInvocation | TracedInvocation] = trace.plain if trace.plain is not None else trace.invocations
    orphans = [view for view in views if not view.session_id]
    if not orphans or not any(_names_session(span) for span in spans):
        return trace
    tree = SpanTree(spans)
    above = tree.nearest(_names_session)
    for view in orphans:
        ancestor = above.get(view.span_id)
        if ancestor is not None:
            view.join_session(session_id_of((ancestor,)))
    return trace
