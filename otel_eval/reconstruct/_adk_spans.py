"""Google ADK span shapes shared by both ADK telemetry schemas: which span is what, and who owns it.

ADK's parent/child nesting differs by version (1.x nests tools and transferred agents under the model span that asked
for them, 2.13 makes them siblings), so ownership is decided by ids first (``gcp.vertex.agent.invocation_id``,
session ids) and by the span tree only where ids are absent (tool spans carry no invocation id).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_eval import semconv
from otel_eval.model import TokenUsage
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._span_tree import contains
from otel_eval.reconstruct._values import tool_call_args, tool_response_payload
from otel_eval.traces import _json as fast_json
from otel_eval.traces.span import Span

RUN_ROOT_NAMES = ("invocation",)
RUN_ROOT_PREFIX = "invoke_workflow"
AGENT_PREFIXES = ("invoke_agent", "agent_run")
TOOL_PREFIX = "execute_tool"
MERGED_TOOL_NAME = "(merged tools)"
MERGED_TOOL_SPAN = "execute_tool (merged)"
NOT_SPECIFIED = "<not specified>"
"""ADK's placeholder for a tool call id or response it did not have (e.g. the tool raised)."""

_NO_RESPONSE = {"result": NOT_SPECIFIED}
"""What ADK records as the result of a tool that produced no function response (it raised)."""
_AGENT_RUN_NAME = re.compile(r"^agent_run \[(?P<name>.+)\]$")


def is_run_root(span: Span) -> bool:
    """An ADK runner invocation span: legacy ``invocation`` or v2 ``invoke_workflow {root}``."""
    return span.name in RUN_ROOT_NAMES or (
        span.name.startswith(RUN_ROOT_PREFIX)
        and span.str_attr(semconv.GEN_AI_OPERATION_NAME) in (None, RUN_ROOT_PREFIX)
    )


def is_agent_span(span: Span) -> bool:
    """An agent run: ``invoke_agent {name}`` (ADK >= 1.16) or ``agent_run [{name}]`` (older)."""
    return span.name.startswith(AGENT_PREFIXES)


def agent_name(span: Span) -> str | None:
    """The agent an ``invoke_agent`` / ``agent_run`` span is about."""
    name = span.str_attr(semconv.GEN_AI_AGENT_NAME)
    if name:
        return name
    match = _AGENT_RUN_NAME.match(span.name)
    if match:
        return match.group("name")
    if span.name.startswith("invoke_agent "):
        return span.name.removeprefix("invoke_agent ").strip() or None
    return None


def is_tool_span(span: Span) -> bool:
    """One tool execution (not the ``(merged)`` summary of parallel calls)."""
    return span.name.startswith(TOOL_PREFIX) and not is_merged_tool_span(span)


def is_merged_tool_span(span: Span) -> bool:
    """The summary span ADK adds after parallel tool calls; it repeats what the individual tool spans say."""
    return span.name == MERGED_TOOL_SPAN or span.str_attr(semconv.GEN_AI_TOOL_NAME) == MERGED_TOOL_NAME


def session_of(span: Span) -> str | None:
    """The session id a span names, if any."""
    return span.str_attr(semconv.ADK_SESSION_ID) or span.str_attr(semconv.GEN_AI_CONVERSATION_ID) or None


def invocation_of(span: Span) -> str | None:
    """The ADK invocation id a span names, if any (model spans only)."""
    return span.str_attr(semconv.ADK_INVOCATION_ID) or None


def usage_of(span: Span) -> TokenUsage:
    """``gen_ai.usage.*`` token counts of one span."""
    return TokenUsage(
        input_tokens=span.int_attr(semconv.GEN_AI_USAGE_INPUT_TOKENS),
        output_tokens=span.int_attr(semconv.GEN_AI_USAGE_OUTPUT_TOKENS),
        cached_input_tokens=span.int_attr(semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS),
        reasoning_tokens=span.int_attr(semconv.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS),
    )


def parse_json_object(span: Span, key: str, warnings: list[str]) -> dict[str, Any] | None:
    """A JSON-object attribute (ADK's ``llm_request``/``llm_response``): None, with a warning, when absent, not JSON
    or not an object."""
    raw = span.attr(key)
    if raw is None:
        return None
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        warnings.append(f"span {span.span_id} ({span.name!r}): attribute {key!r} is {type(raw).__name__}, not JSON")
        return None
    try:
        value = fast_json.loads(raw)
    except json.JSONDecodeError as exc:
        warnings.append(f"span {span.span_id} ({span.name!r}): attribute {key!r} is not valid JSON: {exc}")
        return None
    if not isinstance(value, dict):
        warnings.append(f"span {span.span_id} ({span.name!r}): attribute {key!r} is not a JSON object")
        return None
    return value


@dataclass(slots=True)
class ModelCall:
    """One model call of an ADK agent as the spans recorded it."""

    span: Span
    author: str | None
    model: str | None
    request: list[genai_types.Content] | None
    """The conversation sent to the model; None when content was not captured."""
    response: genai_types.Content | None
    """The model's answer; None when not captured (or the model sent no content)."""
    captured: bool
    system_instruction: str | None = None
    tools: list[genai_types.Tool] | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)


@dataclass(slots=True)
class ToolRun:
    """One tool execution as the spans recorded it."""

    span: Span
    name: str
    call_id: str | None
    args: dict[str, Any] | None
    """Arguments the tool received; None when not captured."""
    response: dict[str, Any] | None
    """``FunctionResponse.response``; None when not captured or the tool produced none (it raised)."""
    failed: bool = False


def read_tool_run(span: Span, args_key: str, result_key: str, warnings: list[str]) -> ToolRun:
    """An ``execute_tool`` span (either schema) as a :class:`ToolRun`.

    Arguments and result follow the one rule of :mod:`otel_eval.reconstruct._values`. A failed tool (error status or
    ``error.type``), or one whose result is ADK's ``<not specified>`` placeholder, has no response: ADK's events hold
    an error response built elsewhere, not this one.
    """
    where = f"span {span.span_id} ({span.name!r})"
    call_id = span.str_attr(semconv.GEN_AI_TOOL_CALL_ID)
    failed = span.status_code == "ERROR" or span.attr(semconv.ERROR_TYPE) is not None
    raw_args = span.attr(args_key)
    raw_result = span.attr(result_key)
    response = None
    if raw_result is not None and not failed:
        response = tool_response_payload(raw_result, warnings, f"{where}: {result_key}")
        if response == _NO_RESPONSE:
            response = None
    return ToolRun(
        span=span,
        name=span.str_attr(semconv.GEN_AI_TOOL_NAME) or span.name.removeprefix("execute_tool").strip(),
        call_id=None if call_id in (None, NOT_SPECIFIED) else call_id,
        args=None if raw_args is None else tool_call_args(raw_args, warnings, f"{where}: {args_key}"),
        response=response,
        failed=failed,
    )


class SpanIndex:
    """Parent lookups over one trace, safe against cycles and missing parents."""

    def __init__(self, spans: Sequence[Span]) -> None:
        self.by_id: dict[str, Span] = {}
        for span in spans:
            self.by_id.setdefault(span.span_id, span)

    def parent(self, span: Span) -> Span | None:
        """The parent span when it is in the trace."""
        if not span.parent_span_id or span.parent_span_id == span.span_id:
            return None
        return self.by_id.get(span.parent_span_id)

    def ancestors(self, span: Span) -> Iterator[Span]:
        """Parent, grandparent, ... (stops at a missing parent or a cycle)."""
        seen = {span.span_id}
        current = self.parent(span)
        while current is not None and current.span_id not in seen:
            seen.add(current.span_id)
            yield current
            current = self.parent(current)

    def has_parent_chain(self, span: Span) -> bool:
        """Whether the span's parent (if it names one) is in the trace."""
        return not span.parent_span_id or self.parent(span) is not None

    def is_descendant(self, span: Span, ancestor: Span) -> bool:
        """Whether ``ancestor`` is above ``span`` in the tree."""
        return any(a.span_id == ancestor.span_id for a in self.ancestors(span))


@dataclass(slots=True)
class OwnedSpans:
    """The spans of one ADK invocation (one user turn) before their content is read."""

    invocation_id: str
    root: Span
    model_spans: list[Span] = field(default_factory=list)
    tool_spans: list[Span] = field(default_factory=list)
    session_id: str | None = None
    nested: bool = False
    """True for an AgentTool's inner run: ADK's eval keeps none of it, so neither do we."""


def group_by_invocation(
    index: SpanIndex, spans: Sequence[Span], model_spans: Sequence[Span], warnings: list[str]
) -> list[OwnedSpans]:
    """Model and tool spans grouped per ADK invocation id, with the invocation's root span and nesting.

    ``model_spans`` are the spans that stand for one model call each (``call_llm`` for the legacy schema,
    ``generate_content`` for v2). Returned in start-time order, nested (AgentTool) invocations included and flagged.
    """
    groups: dict[str, OwnedSpans] = {}
    for span in sorted(model_spans, key=lambda s: (s.start_time_ns, s.span_id)):
        invocation_id = invocation_of(span)
        if invocation_id is None:
            top = _top_of_run(index, span)
            invocation_id = ""
            key = f"root:{top.span_id}"
            warnings.append(f"span {span.span_id} ({span.name!r}): no {semconv.ADK_INVOCATION_ID}; grouped by its root")
        else:
            key = invocation_id
        group = groups.get(key)
        if group is None:
            group = OwnedSpans(invocation_id=invocation_id, root=_top_of_run(index, span), session_id=session_of(span))
            groups[key] = group
        group.model_spans.append(span)
        if group.session_id is None:
            group.session_id = session_of(span)
    ordered = sorted(groups.values(), key=lambda g: (g.model_spans[0].start_time_ns, g.root.span_id))
    for group in ordered:
        group.nested = _is_nested(index, group, ordered)
    _assign_tool_spans(index, spans, ordered, warnings)
    return ordered


def _top_of_run(index: SpanIndex, span: Span) -> Span:
    """The invocation's root above a model span: the outermost run root (``invocation`` / ``invoke_workflow``) reached
    without leaving the run through a tool span, else the outermost agent span, else the span itself."""
    top_root: Span | None = None
    top_agent: Span | None = None
    for ancestor in index.ancestors(span):
        if ancestor.name.startswith(TOOL_PREFIX):
            break
        if is_run_root(ancestor):
            top_root = ancestor
        elif is_agent_span(ancestor):
            top_agent = ancestor
    return top_root or top_agent or span


def _is_nested(index: SpanIndex, group: OwnedSpans, groups: Sequence[OwnedSpans]) -> bool:
    """An AgentTool's inner run: above it is a span of another session or invocation, or a tool span."""
    first = group.model_spans[0]
    for ancestor in index.ancestors(first):
        other_invocation = invocation_of(ancestor)
        if other_invocation is not None and other_invocation != group.invocation_id:
            return True
        other_session = session_of(ancestor)
        if other_session is not None and group.session_id is not None and other_session != group.session_id:
            return True
        if ancestor.name.startswith(TOOL_PREFIX):
            return True
    if index.has_parent_chain(group.root):
        return False
    # The tree is broken above this run: fall back to time, a model call inside another run's tool span is nested.
    return any(
        other is not group and any(contains(tool, first) for tool in _tool_spans_in_time(other, index))
        for other in groups
    )


def _tool_spans_in_time(group: OwnedSpans, index: SpanIndex) -> list[Span]:
    return [s for s in index.by_id.values() if s.name.startswith(TOOL_PREFIX) and contains(group.root, s)]


def _assign_tool_spans(
    index: SpanIndex, spans: Sequence[Span], groups: Sequence[OwnedSpans], warnings: list[str]
) -> None:
    by_invocation = {g.invocation_id: g for g in groups if g.invocation_id}
    by_root = {g.root.span_id: g for g in groups}
    agent_owner: dict[str, OwnedSpans] = {}
    for group in groups:
        for model_span in group.model_spans:
            agent = next((a for a in index.ancestors(model_span) if is_agent_span(a)), None)
            if agent is not None:
                agent_owner.setdefault(agent.span_id, group)
    for span in sorted(spans, key=lambda s: (s.start_time_ns, s.span_id)):
        if not is_tool_span(span):
            continue
        owner = _tool_owner(index, span, by_invocation, by_root, agent_owner)
        if owner is None:
            owner = _owner_by_time(span, groups)
            if owner is not None:
                warnings.append(f"span {span.span_id} ({span.name!r}): parent not in trace; placed by time")
        if owner is not None:
            owner.tool_spans.append(span)


def _tool_owner(
    index: SpanIndex,
    span: Span,
    by_invocation: dict[str, OwnedSpans],
    by_root: dict[str, OwnedSpans],
    agent_owner: dict[str, OwnedSpans],
) -> OwnedSpans | None:
    for ancestor in index.ancestors(span):
        invocation_id = invocation_of(ancestor)
        if invocation_id is not None and invocation_id in by_invocation:
            return by_invocation[invocation_id]
        if ancestor.span_id in agent_owner:
            return agent_owner[ancestor.span_id]
        if ancestor.span_id in by_root:
            return by_root[ancestor.span_id]
    return None


def _owner_by_time(span: Span, groups: Sequence[OwnedSpans]) -> OwnedSpans | None:
    """The innermost run whose root covers the tool span, else the last top-level run started before it."""
    candidates = [g for g in groups if contains(g.root, span)]
    if candidates:
        return min(candidates, key=lambda g: g.root.duration_ns)
    earlier = [g for g in groups if not g.nested and g.model_spans[0].start_time_ns <= span.start_time_ns]
    return max(earlier, key=lambda g: g.model_spans[0].start_time_ns) if earlier else None
