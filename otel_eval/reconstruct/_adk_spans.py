"""Google ADK span shapes shared by both ADK telemetry schemas: which span is what, and who owns it.

ADK's parent/child nesting differs by version (1.x nests tools and transferred agents under the model span that asked
for them, 2.13 makes them siblings), so ownership is decided by ids first (``gcp.vertex.agent.invocation_id``,
session ids) and by the span tree only where ids are absent (tool spans carry no invocation id).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Reversible, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from otel_eval import semconv
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._containment import containing_range, tightest_containers
from otel_eval.reconstruct._span_tree import SpanTree
from otel_eval.reconstruct._token_usage import Usage
from otel_eval.reconstruct._values import tool_call_args, tool_response_payload
from otel_eval.reconstruct.sessions import session_id_of
from otel_eval.traces import json_loads
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
    """The session id a span names, if any (the rule of :mod:`otel_eval.reconstruct.sessions`)."""
    return session_id_of((span,))


def invocation_of(span: Span) -> str | None:
    """The ADK invocation id a span names, if any (model spans only)."""
    return span.str_attr(semconv.ADK_INVOCATION_ID) or None


def usage_of(span: Span) -> Usage:
    """``gen_ai.usage.*`` token counts of one span."""
    return Usage(
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
        value = json_loads(raw)
    except json.JSONDecodeError as exc:
        warnings.append(f"span {span.span_id} ({span.name!r}): attribute {key!r} is not valid JSON: {exc}")
        return None
    except RecursionError:
        warnings.append(f"span {span.span_id} ({span.name!r}): attribute {key!r} is JSON nested too deeply")
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
    request: Reversible[genai_types.Content] | None
    """The conversation sent to the model, iterated forwards or backwards (legacy ADK's is validated as it is read:
    :class:`~otel_eval.reconstruct._adk_contents.RequestHistory`); None when content was not captured."""
    response: genai_types.Content | None
    """The model's answer; None when not captured (or the model sent no content)."""
    captured: bool
    system_instruction: str | None = None
    tools: list[dict[str, Any]] | None = None
    """The tools the agent declared, each a genai ``Tool`` dumped as app details hold it (JSON, no None fields).
    Shared between calls that declared the same tools: not mutated."""
    usage: Usage = field(default_factory=Usage)


@dataclass(slots=True)
class ToolRun:
    """One tool execution as the spans recorded it."""

    span: Span
    name: str
    call_id: str | None
    args: dict[str, Any] | None
    """Arguments the tool received; None when not captured."""
    response: dict[str, Any] | None
    """``FunctionResponse.response``; None when not captured or the tool produced none (it raised, unhandled)."""
    failed: bool = False


def read_tool_run(span: Span, args_key: str, result_key: str, warnings: list[str]) -> ToolRun:
    """An ``execute_tool`` span (either schema) as a :class:`ToolRun`.

    Arguments and result follow the one rule of :mod:`otel_eval.reconstruct._values`. A failed tool (error status or
    ``error.type``) keeps the response it recorded: that is the function response ADK's events hold when an
    ``on_tool_error_callback`` turned the exception into one. A tool whose exception was not handled records ADK's
    ``<not specified>`` placeholder (or nothing), and has no response, as in ADK's events.
    """
    where = f"span {span.span_id} ({span.name!r})"
    call_id = span.str_attr(semconv.GEN_AI_TOOL_CALL_ID)
    failed = span.status_code == "ERROR" or span.attr(semconv.ERROR_TYPE) is not None
    raw_args = span.attr(args_key)
    raw_result = span.attr(result_key)
    response = None
    if raw_result is not None:
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
    tree: SpanTree, model_spans: Sequence[Span], warnings: list[str], tool_spans: Sequence[Span] | None = None
) -> list[OwnedSpans]:
    """Model and tool spans grouped per ADK invocation id, with the invocation's root span and nesting.

    ``model_spans`` are the spans that stand for one model call each (``call_llm`` for the legacy schema,
    ``generate_content`` for v2); ``tool_spans`` the tree's spans that :func:`is_tool_span` (found here when not
    given). Returned in start-time order, nested (AgentTool) invocations included and flagged.
    """
    tops = tree.fold_down(_run_top_step, _NO_TOP)
    groups: dict[str, OwnedSpans] = {}
    for span in sorted(model_spans, key=lambda s: (s.start_time_ns, s.span_id)):
        top_root, top_agent = tops.get(span.span_id, _NO_TOP)
        top = top_root or top_agent or span
        invocation_id = invocation_of(span)
        if invocation_id is None:
            invocation_id = ""
            key = f"root:{top.span_id}"
            warnings.append(f"span {span.span_id} ({span.name!r}): no {semconv.ADK_INVOCATION_ID}; grouped by its root")
        else:
            key = invocation_id
        group = groups.get(key)
        if group is None:
            group = groups[key] = OwnedSpans(invocation_id=invocation_id, root=top)
        group.model_spans.append(span)
        if group.session_id is None:
            group.session_id = session_of(span)
    ordered = sorted(groups.values(), key=lambda g: (g.model_spans[0].start_time_ns, g.root.span_id))
    above = tree.fold_down(_ids_above_step, _NOTHING_ABOVE)
    verdicts = [_nested_by_ids(g, above.get(g.model_spans[0].span_id, _NOTHING_ABOVE)) for g in ordered]
    # Where the ids do not tell, only a run whose root lost its parent can be nested by time.
    broken = [
        g for g, verdict in zip(ordered, verdicts, strict=True) if verdict is None and not tree.has_parent_chain(g.root)
    ]
    inside_tools = _inside_other_runs_tools(tree, [g.model_spans[0] for g in broken], ordered)
    for group, verdict in zip(ordered, verdicts, strict=True):
        group.nested = verdict if verdict is not None else group.model_spans[0].span_id in inside_tools
    _assign_tool_spans(
        tree, ordered, warnings, [s for s in tree.spans if is_tool_span(s)] if tool_spans is None else tool_spans
    )
    return ordered


_RunTop = tuple[Span | None, Span | None]
"""The outermost run root and the outermost agent span above a span, reached without leaving the run through a tool."""


def _run_top_step(above_parent: _RunTop, parent: Span) -> _RunTop:
    """A model span's invocation root is the outermost run root (``invocation`` / ``invoke_workflow``) above it, else
    the outermost agent span, else itself; the search stops at a tool span (an AgentTool's inner run is its own)."""
    if parent.name.startswith(TOOL_PREFIX):
        return _NO_TOP
    top_root, top_agent = above_parent
    if top_root is None and is_run_root(parent):
        return (parent, top_agent)
    if top_agent is None and is_agent_span(parent) and not is_run_root(parent):
        return (top_root, parent)
    return above_parent


_NO_TOP: _RunTop = (None, None)


class _IdsAbove(NamedTuple):
    """What the ancestors of a span say: one invocation/session id (or several different ones), a tool span."""

    invocation: str | None = None
    invocations_differ: bool = False
    session: str | None = None
    sessions_differ: bool = False
    tool: bool = False


_NOTHING_ABOVE = _IdsAbove()


def _merge_id(known: str | None, differ: bool, new: str | None) -> tuple[str | None, bool]:
    if new is None or differ:
        return known, differ
    if known is None:
        return new, False
    return known, known != new


def _ids_above_step(above_parent: _IdsAbove, parent: Span) -> _IdsAbove:
    parent_invocation = invocation_of(parent)
    tool = above_parent.tool or parent.name.startswith(TOOL_PREFIX)
    # Only ADK's own spans tell a run from an AgentTool's: an application span above the run (its request span) may
    # name a session id of its own.
    adk_span = parent_invocation is not None or tool or is_agent_span(parent) or is_run_root(parent)
    parent_session = session_of(parent) if adk_span else None
    if parent_invocation is None and parent_session is None and tool == above_parent.tool:
        return above_parent  # the parent says nothing new (most spans)
    invocation, invocations_differ = _merge_id(
        above_parent.invocation, above_parent.invocations_differ, parent_invocation
    )
    session, sessions_differ = _merge_id(above_parent.session, above_parent.sessions_differ, parent_session)
    return _IdsAbove(invocation, invocations_differ, session, sessions_differ, tool)


def _nested_by_ids(group: OwnedSpans, above: _IdsAbove) -> bool | None:
    """An AgentTool's inner run: above it is a span of another session or invocation, or a tool span. None when the
    tree does not tell (no such span above it)."""
    other_invocation = above.invocations_differ or (
        above.invocation is not None and above.invocation != group.invocation_id
    )
    other_session = group.session_id is not None and (
        above.sessions_differ or (above.session is not None and above.session != group.session_id)
    )
    return True if other_invocation or other_session or above.tool else None


def _inside_other_runs_tools(tree: SpanTree, firsts: Sequence[Span], groups: Sequence[OwnedSpans]) -> set[str]:
    """Ids of the spans of ``firsts`` that lie, in time, within a tool span that lies within another run's root.

    Where the tree is broken above a run, this is how an AgentTool's inner run is still recognised as nested.
    """
    if not firsts:
        return set()
    roots = list({g.root.span_id: g.root for g in groups}.values())
    root_index = {root.span_id: i for i, root in enumerate(roots)}
    tools = [s for s in tree.spans if s.name.startswith(TOOL_PREFIX)]
    # For every tool, the lowest and highest run root (by index) containing it: two different ones, or just one.
    around_tools = containing_range(roots, list(range(len(roots))), tools)
    in_several = [t for t, found in zip(tools, around_tools, strict=True) if found is not None and found[0] != found[1]]
    in_one = [(t, found[0]) for t, found in zip(tools, around_tools, strict=True) if found and found[0] == found[1]]
    # A first model span inside a tool of several runs is inside another run's tool; inside tools of one run each,
    # it is when those runs are not all its own.
    inside = {
        first.span_id
        for first, found in zip(firsts, containing_range(in_several, [0] * len(in_several), firsts), strict=True)
        if found is not None
    }
    own_root = {g.model_spans[0].span_id: root_index[g.root.span_id] for g in groups}
    single = containing_range([t for t, _ in in_one], [root for _, root in in_one], firsts)
    for first, found in zip(firsts, single, strict=True):
        if found is not None and (found[0] != found[1] or found[0] != own_root[first.span_id]):
            inside.add(first.span_id)
    return inside


def _assign_tool_spans(
    tree: SpanTree, groups: Sequence[OwnedSpans], warnings: list[str], tool_spans: Sequence[Span]
) -> None:
    """Gives every tool span to its run: the nearest span above it that names an invocation id of a run, or is the
    agent span of one of its model calls, or is a run's root; by time when the tree is broken above it."""
    by_invocation = {g.invocation_id: g for g in groups if g.invocation_id}
    by_root = {g.root.span_id: g for g in groups}
    agent_above = tree.nearest(is_agent_span)
    agent_owner: dict[str, OwnedSpans] = {}
    for group in groups:
        for model_span in group.model_spans:
            agent = agent_above.get(model_span.span_id)
            if agent is not None:
                agent_owner.setdefault(agent.span_id, group)

    def owner_of(span: Span) -> OwnedSpans | None:
        invocation_id = invocation_of(span)
        if invocation_id is not None and invocation_id in by_invocation:
            return by_invocation[invocation_id]
        return agent_owner.get(span.span_id) or by_root.get(span.span_id)

    owning = tree.nearest(lambda span: owner_of(span) is not None)
    tools = sorted(tool_spans, key=lambda s: (s.start_time_ns, s.span_id))
    lost = [t for t in tools if t.span_id not in owning]
    by_time = dict(zip((t.span_id for t in lost), _owners_by_time(lost, groups), strict=True)) if lost else {}
    for span in tools:
        above = owning.get(span.span_id)
        owner = owner_of(above) if above is not None else by_time[span.span_id]
        if above is None and owner is not None:
            warnings.append(f"span {span.span_id} ({span.name!r}): parent not in trace; placed by time")
        if owner is not None:
            owner.tool_spans.append(span)


def _owners_by_time(spans: Sequence[Span], groups: Sequence[OwnedSpans]) -> list[OwnedSpans | None]:
    """For each tool span, the innermost run whose root covers it, else the last top-level run started before it."""
    covering = tightest_containers([g.root for g in groups], spans)
    top_level = [g for g in groups if not g.nested]  # in start-time order of their first model span
    starts = [g.model_spans[0].start_time_ns for g in top_level]
    owners: list[OwnedSpans | None] = []
    for span, index in zip(spans, covering, strict=True):
        if index is not None:
            owners.append(groups[index])
            continue
        last = bisect.bisect_right(starts, span.start_time_ns) - 1
        owners.append(top_level[bisect.bisect_left(starts, starts[last])] if last >= 0 else None)
    return owners
