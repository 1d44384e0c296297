"""ADK model calls and tool runs of one invocation -> the session events ADK stored -> the ``Invocation`` ADK builds.

Both ADK conventions read their own attributes into :class:`ModelCall` and :class:`ToolRun` records; this module
has them replayed as the session events ADK would have stored (:mod:`otel_eval.reconstruct._adk_replay`) and applies
``EvaluationGenerator.convert_events_to_eval_invocations`` (ADK 2.13) to them:

* ``user_content``: the user's message, i.e. the last user-role text content of the first model request;
* ``final_response``: the content of the last event that ``Event.is_final_response()`` (no function calls or
  responses), preferring one with text;
* ``tool_uses`` / ``tool_responses``: every function call / response part of the kept events in order; calls carry
  the model's own arguments (not the tool span's) and the ``adk-...`` id ADK gave them (from the tool span);
* ``intermediate_responses``: ``(author, text parts)`` of every other event with text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from otel_eval.model import (
    AgentDetails,
    AppDetails,
    EventOutline,
    IntermediateData,
    Invocation,
    TracedInvocation,
)
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._adk_replay import Event, is_kept, last_final_event, replay_events
from otel_eval.reconstruct._adk_spans import (
    TOOL_PREFIX,
    ModelCall,
    OwnedSpans,
    ToolRun,
    agent_name,
    group_by_invocation,
    is_agent_span,
    is_run_root,
    is_tool_span,
    read_tool_run,
)
from otel_eval.reconstruct._built import built, traced_invocation
from otel_eval.reconstruct._containment import tightest_containers
from otel_eval.reconstruct._span_tree import SpanTree, covered_ns
from otel_eval.reconstruct._token_usage import sum_token_counts
from otel_eval.reconstruct.base import TraceInvocations
from otel_eval.reconstruct.reads import Reads
from otel_eval.reconstruct.sessions import session_id_of
from otel_eval.reconstruct.signals import ended_in_error, feedback
from otel_eval.traces.span import Span

ModelCallReader = Callable[[Span, list[str]], ModelCall]
"""``read(span, warnings)``: one model-call span of a schema as a :class:`ModelCall`."""
ModelWait = tuple[Span, int]
"""A wait on the model: the span timing it, and the time it ended (the span's end, or earlier where tools it asked for
started inside it)."""


def rebuild_invocations(
    tree: SpanTree,
    model_spans: Sequence[Span],
    read_model_call: ModelCallReader,
    *,
    convention: str,
    model_timing: Sequence[ModelWait],
    tool_args_key: str,
    tool_result_key: str,
    reads: Reads = Reads.ALL,
) -> TraceInvocations:
    """The invocations of one ADK trace, one per ADK invocation id; AgentTool inner runs are dropped as ADK drops them.

    Args:
        tree: The trace's spans.
        model_spans: The spans standing for one model call each (``call_llm``, or v2's ``generate_content``).
        read_model_call: Reads one of ``model_spans``.
        convention: Reported convention name.
        model_timing: The waits on the model (the span timing each, and where the wait ends), for
            ``model_seconds``.
        tool_args_key: The tool-span attribute holding the arguments in this schema.
        tool_result_key: The tool-span attribute holding the result in this schema.
        reads: The parts to produce (:mod:`otel_eval.reconstruct.reads`): the events are replayed whole when a part
            other than the tool calls needs them (the texts, responses and final response come out of one replay),
            else only the events that call tools; the user message and the app details only when asked.
    """
    trace_id = tree.spans[0].trace_id if tree.spans else ""
    result = TraceInvocations(trace_id=trace_id, convention=convention, warnings=list(tree.problems))
    model_spans = [s for s in model_spans if tree.by_id.get(s.span_id) is s]  # duplicates dropped by the tree
    tool_spans = [s for s in tree.spans if is_tool_span(s)]
    groups = group_by_invocation(tree, model_spans, result.warnings, tool_spans)
    top_level = [g for g in groups if not g.nested]
    timing = _RunTiming(tree, top_level, [w for w in model_timing if w[0].span_id in tree.by_id], tool_spans)
    for group in top_level:
        warnings: list[str] = []
        calls = [read_model_call(s, warnings) for s in group.model_spans]
        tools = [read_tool_run(s, tool_args_key, tool_result_key, warnings) for s in group.tool_spans]
        result.invocations.append(
            build_invocation(
                group, calls, tools, tree=tree, convention=convention, timing=timing, warnings=warnings, reads=reads
            )
        )
    answered = _runs_without_model_call(tree, groups)
    for run in answered:
        result.invocations.append(
            build_invocation(
                run,
                [],
                [],
                tree=tree,
                convention=convention,
                timing=timing,
                warnings=[],
                reads=reads,
                without_calls=_ANSWERED_WITHOUT_MODEL,
            )
        )
    if answered:
        result.invocations.sort(key=lambda invocation: (invocation.start_time_ns, invocation.span_id))
    return result


_ANSWERED_WITHOUT_MODEL = (
    "an agent's callback answered without the model (before_agent_callback, before_model_callback), or the run "
    "failed before it: ADK's spans hold neither the user's message nor the final response"
)


def _runs_without_model_call(tree: SpanTree, groups: Sequence[OwnedSpans]) -> list[OwnedSpans]:
    """The runs of the trace in which no model was called: an outermost run root (none above it, nor a tool) with an
    agent span below it that owns no model call, e.g. a turn a ``before_model_callback`` guardrail answered. ADK's
    eval has an invocation for each; only its timing and session are on the spans."""
    owned = {g.root.span_id for g in groups}
    unowned = [span for span in tree.spans if is_run_root(span) and span.span_id not in owned]
    if not unowned:  # every run called a model: the common case, no walk of the tree
        return []
    above = tree.nearest(_opens_run_or_tool)
    return [
        OwnedSpans(invocation_id="", root=span, session_id=session_id_of(tree.subtree(span)))
        for span in unowned
        if span.span_id not in above and any(is_agent_span(child) for child in tree.children(span))
    ]


def _opens_run_or_tool(span: Span) -> bool:
    return is_run_root(span) or span.name.startswith(TOOL_PREFIX)


def build_invocation(
    owned: OwnedSpans,
    calls: Sequence[ModelCall],
    tools: Sequence[ToolRun],
    *,
    tree: SpanTree,
    convention: str,
    timing: _RunTiming,
    warnings: list[str],
    reads: Reads = Reads.ALL,
    without_calls: str = "nothing to rebuild but tool names",
) -> TracedInvocation:
    """The ``TracedInvocation`` of one ADK invocation.

    Args:
        owned: The invocation's spans (root, ids).
        calls: Its model calls (top-level only; an AgentTool's inner calls are not its own).
        tools: Its tool runs.
        tree: The trace's spans.
        convention: Reported convention name.
        timing: Model and tool time per run root.
        warnings: Problems met so far for this invocation; more are added.
        reads: Whether the user message and the app details are read (:data:`Reads.USER_CONTENT`,
            :data:`Reads.APP_DETAILS`); the rest comes out of the one replay, which replays only the events that
            call tools when none of the final response, tool responses, texts and events is asked.
        without_calls: What the warning of an invocation without model calls says is missing.
    """
    calls = sorted(calls, key=lambda c: (c.span.start_time_ns, c.span.span_id))
    tools = sorted(tools, key=lambda t: (t.span.start_time_ns, t.span.span_id))
    captured = bool(calls) and all(c.captured for c in calls)
    where = f"invocation {owned.invocation_id or owned.root.span_id}"
    if calls and not captured:
        missing = sum(1 for c in calls if not c.captured)
        warnings.append(
            f"{where}: message content was not captured on {missing} of {len(calls)} model call(s) "
            "(ADK content capture off); user text, responses and tool arguments are unknown"
        )
    if not calls:
        warnings.append(f"{where}: no model call span; {without_calls}")
    if any(c.span.span_id == owned.root.span_id for c in calls):
        warnings.append(f"{where}: no runner or agent span above the model calls; times are the first model call's")
    if not captured:
        # Legacy spans write "{}" for content that was not captured: an unknown value, not an empty one.
        tools = [dataclasses.replace(t, args=t.args or None, response=t.response or None) for t in tools]

    model_ns, tool_ns = timing.of(owned.root)
    final_event: Event | None = None
    outline: list[EventOutline] | None = None
    asked = reads.value  # int tests: Flag's operators are Python-level calls
    if asked & _REPLAYED_WHOLE:
        events = replay_events(calls, tools, captured, warnings, where)
        final_event = last_final_event(events)
        data, outline = _intermediate_data([e for e in events if is_kept(e)], final_event)
    else:  # only the tool calls: the events that call tools, the same calls (ids, order) and warnings
        events = replay_events(calls, tools, captured, warnings, where, responses=False)
        tool_uses = [p.function_call for e in events for p in e.content.parts or () if p.function_call]
        data = built(IntermediateData, tool_uses=tool_uses, tool_responses=[], intermediate_responses=[])
    # Built without validating again (see _built): every value below was validated, or typed by the rebuild, when made.
    invocation = built(
        Invocation,
        invocation_id=owned.invocation_id,
        user_content=_user_content(calls, warnings, where)
        if captured and asked & _USER_CONTENT
        else genai_types.Content.trusted(role="user", parts=[]),
        final_response=final_event.content if final_event is not None else None,
        intermediate_data=data,
        creation_timestamp=owned.root.start_time_ns / 1e9,
        app_details=_app_details(calls) if asked & _APP_DETAILS else None,
        duration=round(owned.root.duration_ns / 1e9, 3),
        model_duration=round(model_ns / 1e9, 3),
        tool_duration=round(tool_ns / 1e9, 3),
    )
    return traced_invocation(
        dict(
            invocation=invocation,
            trace_id=owned.root.trace_id,
            span_id=owned.root.span_id,
            session_id=owned.session_id,
            convention=convention,
            agent_name=_root_agent(tree, owned, calls),
            model=next((c.model for c in calls if c.model), None),
            start_time_ns=owned.root.start_time_ns,
            end_time_ns=owned.root.end_time_ns,
            model_call_count=len(calls),
            token_usage=sum_token_counts(c.usage for c in calls),
            model_seconds=model_ns / 1e9,
            tool_seconds=tool_ns / 1e9,
            content_captured=captured,
            event_outline=outline,
            warnings=warnings,
            ended_in_error=ended_in_error(owned.root),
            feedback=feedback(owned.root),
        )
    )


_REPLAYED_WHOLE = (Reads.FINAL_RESPONSE | Reads.TOOL_RESPONSES | Reads.INTERMEDIATE_TEXTS | Reads.EVENTS).value
"""The parts that need every session event replayed (the function responses, the final one, the texts)."""
_USER_CONTENT = Reads.USER_CONTENT.value
_APP_DETAILS = Reads.APP_DETAILS.value


def _intermediate_data(kept: Sequence[Event], final_event: Event | None) -> tuple[IntermediateData, list[EventOutline]]:
    """The intermediate data of the kept events, and the events in outline matching what it takes from each (see
    :class:`EventOutline`); one pass over their parts.

    ADK 2.13 drops the final event's content from the intermediate events (unless it calls functions).
    """
    tool_uses: list[genai_types.FunctionCall] = []
    tool_responses: list[genai_types.FunctionResponse] = []
    texts: list[tuple[str, list[genai_types.Part]]] = []
    outline: list[EventOutline] = []
    for event in kept:
        parts = event.content.parts or []
        final = event is final_event
        calls = [p.function_call for p in parts if p.function_call]
        tool_uses.extend(calls)
        responses = 0
        text = False
        if not final:
            answers = [p.function_response for p in parts if p.function_response]
            tool_responses.extend(answers)
            responses = len(answers)
            text = any(p.text for p in parts)
            if text:
                texts.append((event.author, [p for p in parts if p.text is not None]))
        outline.append(
            built(EventOutline, author=event.author, calls=len(calls), responses=responses, text=text, final=final)
        )
    data = built(IntermediateData, tool_uses=tool_uses, tool_responses=tool_responses, intermediate_responses=texts)
    return data, outline


def _user_content(calls: Sequence[ModelCall], warnings: list[str], where: str) -> genai_types.Content:
    """The user's message: the last user-role content (not a tool result) of the first model request.

    When that request is unreadable, a later request of the same agent serves (its history starts the same way);
    never another agent's, whose history rewrites earlier agents' turns as user-role "For context:" messages.
    """
    author = calls[0].author if calls else None
    first = next((c for c in calls if c.request is not None and c.author == author), None)
    if first is not None and first.request is not None:
        for content in reversed(first.request):
            parts = content.parts or []
            if content.role == "user" and parts and not any(p.function_response for p in parts):
                return content
    warnings.append(f"{where}: no user message in the first model request")
    return genai_types.Content(role="user", parts=[])


# --- metadata -------------------------------------------------------------------------------------------------------


def _app_details(calls: Sequence[ModelCall]) -> AppDetails | None:
    """Instructions and tool declarations of each agent, from its first model request (as ADK's interceptor does)."""
    details: dict[str, AgentDetails] = {}
    for call in calls:
        author = call.author or "agent"
        if author in details or (call.system_instruction is None and call.tools is None):
            continue
        details[author] = AgentDetails(
            name=author,
            instructions=call.system_instruction or "",
            tool_declarations=list(call.tools or []),
        )
    return AppDetails(agent_details=details) if details else None


def _root_agent(tree: SpanTree, owned: OwnedSpans, calls: Sequence[ModelCall]) -> str | None:
    root = owned.root
    if is_run_root(root):
        workflow = root.str_attr("gen_ai.workflow.name")
        if workflow:
            return workflow
    if is_agent_span(root):
        return agent_name(root)
    # The earliest agent span below the root with no agent span between them (the nearest agent above it, if any, is
    # the root's or above it).
    below = tree.subtree(root)[1:]
    below_ids = {s.span_id for s in below}
    agent_above = tree.nearest(is_agent_span)
    top_agents = [
        s
        for s in below
        if is_agent_span(s) and (s.span_id not in agent_above or agent_above[s.span_id].span_id not in below_ids)
    ]
    if top_agents:
        return agent_name(min(top_agents, key=lambda s: (s.start_time_ns, s.span_id)))
    return next((c.author for c in calls if c.author), None)


class _RunTiming:
    """Model and tool time of each run (ADK's ``model_duration``/``tool_duration``), every span counted in one run.

    A timing span belongs to the nearest run root at or above it (inner AgentTool runs count for the run that called
    them, as in ADK); a span whose parent is lost, to the shortest run root whose time range holds its start.
    """

    def __init__(
        self, tree: SpanTree, runs: Sequence[OwnedSpans], model_timing: Sequence[ModelWait], tool_spans: Sequence[Span]
    ) -> None:
        roots = {g.root.span_id: g.root for g in runs}
        root_above = tree.nearest(lambda s: s.span_id in roots)
        self._intervals: dict[str, tuple[list[tuple[int, int]], list[tuple[int, int]]]] = {r: ([], []) for r in roots}
        timed = [(span, end, 0) for span, end in model_timing]
        timed += [(span, span.end_time_ns, 1) for span in tool_spans]
        lost = [item for item in timed if item[0].span_id not in roots and not tree.has_parent_chain(item[0])]
        by_time: dict[tuple[str, int], str] = {}
        if lost:
            candidates = list(roots.values())
            starts = [dataclasses.replace(span, end_time_ns=span.start_time_ns) for span, _, _ in lost]
            for (span, _, kind), index in zip(lost, tightest_containers(candidates, starts), strict=True):
                if index is not None:
                    by_time[(span.span_id, kind)] = candidates[index].span_id
        for span, end, kind in timed:
            if span.span_id in roots:
                root_id: str | None = span.span_id
            elif (span.span_id, kind) in by_time:
                root_id = by_time[(span.span_id, kind)]
            else:
                above = root_above.get(span.span_id)
                root_id = None if above is None else above.span_id
            if root_id is not None:
                self._intervals[root_id][kind].append((span.start_time_ns, end))

    def of(self, root: Span) -> tuple[int, int]:
        """Nanoseconds in model calls, and in tools while no model call ran, under ``root``."""
        model, tools = self._intervals.get(root.span_id, ([], []))
        model_ns = covered_ns(model)
        return model_ns, covered_ns(model + tools) - model_ns
