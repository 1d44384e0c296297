"""Which spans of a GenAI semantic-convention trace are agents, model calls and tools (see
:mod:`otel_eval.reconstruct.genai`): read from ``gen_ai.operation.name`` (else the span name's first word) and
OpenLLMetry's ``traceloop.span.kind``, worked out once per trace by :class:`SpanKinds`."""

from __future__ import annotations

from collections.abc import Sequence

from otel_eval import semconv
from otel_eval.traces.span import Span

CONVENTION_NAME = "genai"
MODEL_OPERATIONS = frozenset({"chat", "generate_content", "text_completion"})
TOOL_OPERATION = "execute_tool"
AGENT_PREFIX = "invoke_"
KNOWN_OPERATIONS = MODEL_OPERATIONS | {TOOL_OPERATION, "invoke_agent", "invoke_workflow", "create_agent"}
_TRACELOOP_CONTAINERS = frozenset({"agent", "workflow"})
_TRACELOOP_TOOL = "tool"
_WORKFLOW_RUN, _WORKFLOW_SCOPE = semconv.AGENT_FRAMEWORK_WORKFLOW_RUN, semconv.AGENT_FRAMEWORK_SCOPE
"""Microsoft Agent Framework's ``workflow.run`` span: the run of a workflow of agents, whose ``invoke_agent`` spans are
its descendants and which no GenAI attribute names. An agent span, so one invocation, as an ``invoke_workflow`` is."""


def operation(span: Span) -> str:
    """``gen_ai.operation.name`` (unless empty or ``unknown``), else the span name's first word."""
    op = span.attributes.get(semconv.GEN_AI_OPERATION_NAME)
    if isinstance(op, str) and op and op != "unknown":
        return op
    return span.name.split(" ", 1)[0]


def traceloop_kind(span: Span) -> str:
    """``traceloop.span.kind`` lower-cased (``""`` when absent)."""
    kind = span.attributes.get(semconv.TRACELOOP_SPAN_KIND)
    return kind.lower() if isinstance(kind, str) else ""


def is_agent(span: Span) -> bool:
    """An agent or workflow span (an invocation root when nothing above it is one)."""
    op = operation(span)
    return (
        op.startswith(AGENT_PREFIX)
        or traceloop_kind(span) in _TRACELOOP_CONTAINERS
        or (op == _WORKFLOW_RUN and span.scope_name == _WORKFLOW_SCOPE)
    )


def is_model_call(span: Span) -> bool:
    """An inference span."""
    return operation(span) in MODEL_OPERATIONS and traceloop_kind(span) not in _TRACELOOP_CONTAINERS


def is_tool(span: Span) -> bool:
    """A tool execution span."""
    return operation(span) == TOOL_OPERATION or traceloop_kind(span) == _TRACELOOP_TOOL


class SpanKinds:
    """Which spans of a trace are agents, model calls and tools, worked out once (every step of a rebuild asks), in
    one pass that reads each span's operation and OpenLLMetry kind once (:func:`is_agent`, :func:`is_model_call` and
    :func:`is_tool` span by span)."""

    def __init__(self, spans: Sequence[Span]) -> None:
        self.agents: set[str] = set()
        self.model_calls: set[str] = set()
        self.tools: set[str] = set()
        for span in spans:  # operation() and traceloop_kind() inline: a call per span each costs more than the rest
            attributes = span.attributes
            op = attributes.get(semconv.GEN_AI_OPERATION_NAME)
            if not isinstance(op, str) or not op or op == "unknown":
                op = span.name.split(" ", 1)[0]
            kind = attributes.get(semconv.TRACELOOP_SPAN_KIND)
            kind = kind.lower() if isinstance(kind, str) else ""
            container = kind in _TRACELOOP_CONTAINERS
            if op.startswith(AGENT_PREFIX) or container or (op == _WORKFLOW_RUN and span.scope_name == _WORKFLOW_SCOPE):
                self.agents.add(span.span_id)
            if op in MODEL_OPERATIONS and not container:
                self.model_calls.add(span.span_id)
            if op == TOOL_OPERATION or kind == _TRACELOOP_TOOL:
                self.tools.add(span.span_id)

    def is_agent(self, span: Span) -> bool:
        """Whether the span is an agent or workflow span."""
        return span.span_id in self.agents

    def is_model_call(self, span: Span) -> bool:
        """Whether the span is a model call."""
        return span.span_id in self.model_calls

    def is_tool(self, span: Span) -> bool:
        """Whether the span is a tool execution."""
        return span.span_id in self.tools
