"""OpenTelemetry GenAI semantic-convention traces (Strands, Pydantic AI, OpenAI Agents via the OTel-contrib or
OpenLLMetry instrumentations, AutoGen, hand-instrumented apps, ...) -> ADK invocations.

**Invocation roots** are agent spans -- ``gen_ai.operation.name`` ``invoke_agent``/``invoke_workflow`` (or another
``invoke_*``, e.g. Strands' ``invoke_swarm``), span names starting so, ``traceloop.span.kind`` ``agent``/``workflow``, or
Microsoft Agent Framework's ``workflow.run`` -- that have no agent span above them. So an OpenAI Agents ``Agent
workflow`` span whose agents hand off to one another, or an Agent Framework workflow's run, is one invocation (one user
turn), and its agents' model calls and tools are its trajectory in time order. A trace
without agent spans yields one invocation per user turn of its model calls: a model call whose input ends with tool
results continues the turn before it.

**Content** is read, per span, from the ``gen_ai.input.messages``/``gen_ai.output.messages`` attributes (JSON strings
or structured), from ``gen_ai.client.inference.operation.details`` events, or from the deprecated per-message events
(``gen_ai.user.message`` ... ``gen_ai.choice``, see ``_genai_events``); parts-based and content-based messages are both
accepted (``_genai_messages``). Model calls are ``chat``/``generate_content``/``text_completion`` spans. Tool runs are
``execute_tool`` spans: ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments`` (parsed to a
dict) and ``gen_ai.tool.call.result`` (see ``_values`` for how results become response dicts, and ``_envelopes`` for the
framework wrappers unwrapped first, e.g. OpenLLMetry's LangChain callback envelopes); a failed tool without a
result (``error.type``, error status) gets the result the model was sent back, else ``{"error": <the status
description>}`` (the exception's text), else the ``exception`` event's ``<type>: <message>`` (Pydantic AI), else
``{"error": <error.type>}``.

The user message is the last user text of the root's input messages (or its deprecated ``gen_ai.user.message``
events), else of the first model call's input. Only that message is taken from the input: the cumulative history a
later turn re-sends never adds earlier turns' content. The final response is the root's output text when present
(Pydantic AI's ``final_result`` too), else the last model output without tool calls.

**Handoffs and agents used as tools.** Agents that take over from each other (OpenAI Agents handoffs, ``agent_handoff``
spans, ``transfer_to_*`` tool calls) are all part of the one invocation: their model calls and tool calls are the
trajectory, like ADK's sub-agent transfer. An agent used as a tool (``ask_<specialist>``) contributes only the tool
call and its result: its inner model calls and tools are excluded, as ADK excludes ``AgentTool`` inner calls, because
the top-level trajectory is what the user saw the agent do. The OpenLLMetry OpenAI-Agents instrumentation starts such
an agent's span as a sibling of the tool span, not a child; an agent span inside a tool span's time range is treated as
nested too. Their tokens still count in ``token_usage``.

**Quirks handled.** Pydantic AI: tool results sent back as ``user`` messages with ``tool_call_response`` parts carrying
``result``; the run's answer in ``final_result``. OpenAI Agents (OTel-contrib/ADOT): output messages holding printed
``ResponseFunctionToolCall(...)`` text are turned back into tool calls, and chat spans named after the generic
``OpenAI Agent`` are attributed to the enclosing ``invoke_agent`` span. OpenAI Agents (OpenLLMetry): ``execute_tool``
spans without call ids are matched to the model's calls by name, in order. AutoGen and other content-free traces
(capture off): the invocation has ``content_captured=False``, tool names only, and a warning -- no invented text.
"""

from __future__ import annotations

from collections.abc import Sequence

from otel_eval import semconv
from otel_eval.reconstruct import _genai_events as events
from otel_eval.reconstruct._genai_kinds import (
    AGENT_PREFIX,
    CONVENTION_NAME,
    KNOWN_OPERATIONS,
    MODEL_OPERATIONS,
    TOOL_OPERATION,
    SpanKinds,
    is_agent,
    is_model_call,
    is_tool,
)
from otel_eval.reconstruct._genai_reader import GenAIReader
from otel_eval.reconstruct._grouping import invocations_of_roots, trace_invocations, turn_invocations
from otel_eval.reconstruct._span_tree import SpanTree
from otel_eval.reconstruct.base import Convention, TraceInvocations
from otel_eval.reconstruct.reads import Reads
from otel_eval.traces.span import Span

_Reader = GenAIReader
"""The reader of one invocation (the name the tests patch)."""
_AUTHOR_READS = (Reads.INTERMEDIATE_TEXTS | Reads.APP_DETAILS).value
"""What each model call's author is read for (else only when no agent span names the invocation's agent)."""


class GenAIConvention(Convention):
    """OpenTelemetry GenAI semantic conventions (all message forms), see the module docstring."""

    name = CONVENTION_NAME

    def detect(self, spans: Sequence[Span]) -> bool:
        """A GenAI operation name or GenAI message content, unless the content is OpenInference's or OpenLLMetry's.

        OpenInference spans sometimes carry ``gen_ai.request.model``/``gen_ai.usage.*`` too, and OpenLLMetry's indexed
        ``gen_ai.prompt.<i>.*`` share the namespace; neither makes a trace GenAI without an operation name or
        new-style messages.
        """
        operation = content = False
        for span in spans:
            attributes = span.attributes
            op = attributes.get(semconv.GEN_AI_OPERATION_NAME)
            operation = operation or (isinstance(op, str) and (op in KNOWN_OPERATIONS or op.startswith(AGENT_PREFIX)))
            content = content or (
                semconv.GEN_AI_INPUT_MESSAGES in attributes
                or semconv.GEN_AI_OUTPUT_MESSAGES in attributes
                or (bool(span.events) and events.has_content_events(span))
            )
            if operation and content:
                return True
        return operation or content

    def rebuild(self, spans: Sequence[Span], reads: Reads = Reads.ALL) -> TraceInvocations:
        """One invocation per agent root, or per user turn of model calls without an agent span; only what the
        parts ``reads`` asks for need is read (no message history parsed for a tool count)."""
        tree = SpanTree(spans)
        kinds = SpanKinds(tree.spans)
        roots = tree.tops_of(kinds.agents)

        # Without agent roots the model calls are grouped into turns by their inputs, and the turn's agent is its
        # calls' author: those are read whatever is asked.
        read = reads if roots else reads | Reads.USER_CONTENT
        authors = not roots or bool(reads.value & _AUTHOR_READS)

        def reader(root: Span, members: Sequence[Span]) -> GenAIReader:
            return _Reader(tree, root, members, kinds, read, authors=authors)

        if roots:
            invocations = invocations_of_roots(tree, roots, reader, reads)
        else:
            invocations = turn_invocations(tree, self.name, reader, reads)
        empty = "" if invocations else _nothing_rebuilt(tree)
        return trace_invocations(tree, self.name, invocations, empty)


def _nothing_rebuilt(tree: SpanTree) -> str:
    names = sorted({s.name for s in tree.spans})[:5]
    return f"GenAI spans {names} but no agent invocation or model call"


__all__ = [
    "MODEL_OPERATIONS",
    "TOOL_OPERATION",
    "GenAIConvention",
    "is_agent",
    "is_model_call",
    "is_tool",
]
