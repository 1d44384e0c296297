"""ADK model calls and tool runs of one invocation -> the session events ADK stored -> the ``Invocation`` ADK builds.

Both ADK conventions read their own attributes into :class:`ModelCall` and :class:`ToolRun` records; this module
replays them as the session events ADK would have stored (model response event, then one function-response event per
model turn, parallel responses merged in call order) and applies
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
import json
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_eval import semconv
from otel_eval.model import (
    AgentDetails,
    AppDetails,
    EventOutline,
    IntermediateData,
    Invocation,
    TracedInvocation,
)
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._adk_history import fill_from_history
from otel_eval.reconstruct._adk_spans import (
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
from otel_eval.reconstruct._containment import tightest_containers
from otel_eval.reconstruct._first_unused import FirstUnused
from otel_eval.reconstruct._span_tree import SpanTree, covered_ns
from otel_eval.reconstruct._trajectory import sum_token_counts
from otel_eval.reconstruct.base import TraceInvocations
from otel_eval.reconstruct.signals import ended_in_error, feedback
from otel_eval.traces.span import Span

_LISTED = 10
"""How many tool names a warning lists before "and N more"."""

ModelCallReader = Callable[[Span, list[str]], ModelCall]
"""``read(span, warnings)``: one model-call span of a schema as a :class:`ModelCall`."""


@dataclass(slots=True)
class _Event:
    author: str
    content: genai_types.Content
    runs: list[ToolRun] = field(default_factory=list)
    """For a function-response event: the tool runs it answers."""
    skip_summarization: bool = False
    """ADK ended the agent's turn on this function response (``Event.is_final_response()`` is True)."""


def rebuild_invocations(
    tree: SpanTree,
    model_spans: Sequence[Span],
    read_model_call: ModelCallReader,
    *,
    convention: str,
    model_timing: Sequence[Span],
    tool_args_key: str,
    tool_result_key: str,
) -> TraceInvocations:
    """The invocations of one ADK trace, one per ADK invocation id; AgentTool inner runs are dropped as ADK drops them.

    Args:
        tree: The trace's spans.
        model_spans: The spans standing for one model call each (``call_llm``, or v2's ``generate_content``).
        read_model_call: Reads one of ``model_spans``.
        convention: Reported convention name.
        model_timing: The spans timing the wait on the model, for ``model_seconds``.
        tool_args_key: The tool-span attribute holding the arguments in this schema.
        tool_result_key: The tool-span attribute holding the result in this schema.
    """
    trace_id = tree.spans[0].trace_id if tree.spans else ""
    result = TraceInvocations(trace_id=trace_id, convention=convention, warnings=list(tree.problems))
    kept = {s.span_id for s in tree.spans}
    model_spans = [s for s in model_spans if tree.by_id.get(s.span_id) is s]  # duplicates dropped by the tree
    groups = group_by_invocation(tree, model_spans, result.warnings)
    top_level = [g for g in groups if not g.nested]
    timing = _RunTiming(tree, top_level, [s for s in model_timing if s.span_id in kept])
    for group in top_level:
        warnings: list[str] = []
        calls = [read_model_call(s, warnings) for s in group.model_spans]
        tools = [read_tool_run(s, tool_args_key, tool_result_key, warnings) for s in group.tool_spans]
        result.invocations.append(
            build_invocation(group, calls, tools, tree=tree, convention=convention, timing=timing, warnings=warnings)
        )
    return result


def build_invocation(
    owned: OwnedSpans,
    calls: Sequence[ModelCall],
    tools: Sequence[ToolRun],
    *,
    tree: SpanTree,
    convention: str,
    timing: _RunTiming,
    warnings: list[str],
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
        warnings.append(f"{where}: no model call span; nothing to rebuild but tool names")
    if any(c.span.span_id == owned.root.span_id for c in calls):
        warnings.append(f"{where}: no runner or agent span above the model calls; times are the first model call's")
    if not captured:
        # Legacy spans write "{}" for content that was not captured: an unknown value, not an empty one.
        tools = [dataclasses.replace(t, args=t.args or None, response=t.response or None) for t in tools]

    events = _replay_events(calls, tools, captured, warnings, where)
    final_event = _final_event(events)
    kept = [e for e in events if _kept(e)]
    model_ns, tool_ns = timing.of(owned.root)
    data, outline = _intermediate_data(kept, final_event)
    invocation = Invocation(
        invocation_id=owned.invocation_id,
        user_content=_user_content(calls, warnings, where) if captured else genai_types.Content(role="user", parts=[]),
        final_response=final_event.content if final_event is not None else None,
        intermediate_data=data,
        creation_timestamp=owned.root.start_time_ns / 1e9,
        app_details=_app_details(calls),
        duration=round(owned.root.duration_ns / 1e9, 3),
        model_duration=round(model_ns / 1e9, 3),
        tool_duration=round(tool_ns / 1e9, 3),
    )
    return TracedInvocation(
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


def _intermediate_data(
    kept: Sequence[_Event], final_event: _Event | None
) -> tuple[IntermediateData, list[EventOutline]]:
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
        outline.append(EventOutline(author=event.author, calls=len(calls), responses=responses, text=text, final=final))
    data = IntermediateData(tool_uses=tool_uses, tool_responses=tool_responses, intermediate_responses=texts)
    return data, outline


# --- event replay ---------------------------------------------------------------------------------------------------


def _replay_events(
    calls: Sequence[ModelCall], tools: Sequence[ToolRun], captured: bool, warnings: list[str], where: str
) -> list[_Event]:
    """The session events ADK stored for these calls and tools, in order."""
    runs_left = _ToolQueues(tools)
    timeline: list[tuple[int, int, _Event]] = []
    for order, call in enumerate(calls):
        author = call.author or "agent"
        if call.response is None or not call.response.parts:
            continue
        content = call.response
        function_calls = [p.function_call for p in content.parts or [] if p.function_call]
        runs = _match_tools(call, function_calls, runs_left)
        fill_from_history(function_calls, runs, calls[order + 1 :])
        if any(run is not None and c.id is None and run.call_id for c, run in zip(function_calls, runs, strict=True)):
            content = _own_function_calls(content)  # ids are filled in: on a copy, the response stays as recorded
            function_calls = [p.function_call for p in content.parts or [] if p.function_call]
            for function_call, run in zip(function_calls, runs, strict=True):
                if run is not None and function_call.id is None and run.call_id:
                    function_call.id = run.call_id
        timeline.append((call.span.start_time_ns, 2 * order, _Event(author, content)))
        responses = [
            genai_types.Part(
                function_response=genai_types.FunctionResponse(
                    id=run.call_id or function_call.id, name=run.name, response=run.response
                )
            )
            for function_call, run in zip(function_calls, runs, strict=True)
            if run is not None and run.response is not None
        ]
        if responses:
            end = max(run.span.end_time_ns for run in runs if run is not None)
            answered = [run for run in runs if run is not None and run.response is not None]
            event = _Event(author, genai_types.Content(role="user", parts=responses), runs=answered)
            timeline.append((end, 2 * order + 1, event))
    unmatched = runs_left.leftovers()
    if unmatched and captured:
        names = ", ".join(t.name for t in unmatched[:_LISTED]) + (
            f" and {len(unmatched) - _LISTED} more" if len(unmatched) > _LISTED else ""
        )
        warnings.append(
            f"{where}: tool span(s) {names} match no function call of a model response; not in ADK's events"
        )
    elif unmatched:
        for run in unmatched:
            author = run.span.str_attr(semconv.GEN_AI_AGENT_NAME) or "agent"
            call_part = genai_types.Part(
                function_call=genai_types.FunctionCall(id=run.call_id, name=run.name, args=run.args or {})
            )
            timeline.append(
                (run.span.start_time_ns, -1, _Event(author, genai_types.Content(role="model", parts=[call_part])))
            )
            if run.response is not None:
                response = genai_types.FunctionResponse(id=run.call_id, name=run.name, response=run.response)
                part = genai_types.Part(function_response=response)
                timeline.append(
                    (run.span.end_time_ns, -1, _Event(author, genai_types.Content(role="user", parts=[part])))
                )
    timeline.sort(key=lambda item: (item[0], item[1]))
    events = [event for _, _, event in timeline]
    _mark_skip_summarization(events)
    return events


def _own_function_calls(response: genai_types.Content) -> genai_types.Content:
    """A copy of ``response`` that owns what the replay changes: its parts list and each function call (ids are
    filled in); everything else is shared, unchanged. A deep copy cost more than the rest of the replay."""
    if response.parts is None:
        return response.model_copy()
    parts = [
        part.model_copy(update={"function_call": part.function_call.model_copy()}) if part.function_call else part
        for part in response.parts
    ]
    return response.model_copy(update={"parts": parts})


_TRANSFER_TOOL = "transfer_to_agent"
_TEXT_ECHO_TOOL_TYPES = ("AgentTool", "NodeTool")


def _mark_skip_summarization(events: list[_Event]) -> None:
    """Finds the function responses ADK ended an agent's turn on (``skip_summarization``, e.g. ``exit_loop`` or an
    ``AgentTool(skip_summarization=True)``): no model call of the same agent follows them, and every tool succeeded.

    ADK makes such an event the final response, and appends the agent tool's result as text to it.
    """
    # One pass from the end: the authors with a model call still to come.
    calling_later: set[str] = set()
    answered_last: list[_Event] = []
    for event in reversed(events):
        if event.content.role == "model" and not event.runs:
            calling_later.add(event.author)
        elif event.author not in calling_later:
            answered_last.append(event)
    for event in reversed(answered_last):
        if not event.runs or any(run.failed or run.name == _TRANSFER_TOOL for run in event.runs):
            continue
        event.skip_summarization = True
        for run in event.runs:
            text = _displayed_result(run)
            if text is not None and event.content.parts is not None:
                event.content.parts.append(genai_types.Part(text=text))


def _displayed_result(run: ToolRun) -> str | None:
    """The text ADK adds for an agent tool whose summarization is skipped (``_caller._build_response_event``)."""
    if run.span.str_attr(semconv.GEN_AI_TOOL_TYPE) not in _TEXT_ECHO_TOOL_TYPES or run.response is None:
        return None
    if "error" in run.response or run.response in ({"result": None}, {"result": ""}):
        return None
    if set(run.response) == {"result"} and isinstance(run.response["result"], str):
        return str(run.response["result"])
    return json.dumps(run.response, ensure_ascii=False, default=str)


class _ToolQueues(FirstUnused[ToolRun]):
    """The tool runs by call id and by name; by name and arguments once a function call needs it (a call with an id
    rarely does, and the arguments' key costs a JSON encoding per run)."""

    def __init__(self, tools: Sequence[ToolRun]) -> None:
        super().__init__(tools, _tool_keys)
        self._args_indexed = False

    def first_with_args(
        self, function_call: genai_types.FunctionCall, expired: Callable[[ToolRun], bool]
    ) -> ToolRun | None:
        """The first unused run with the call's name and arguments."""
        if not self._args_indexed:
            self.add_keys(lambda run: [("args", run.name, _args_key(run.args))])
            self._args_indexed = True
        return self.first(("args", function_call.name, _args_key(function_call.args or {})), expired)


def _tool_keys(run: ToolRun) -> list[Hashable]:
    return [("id", run.call_id), ("name", run.name)] if run.call_id is not None else [("name", run.name)]


def _args_key(args: dict[str, Any] | None) -> str:
    try:
        return json.dumps(args, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(args)


def _match_tools(
    call: ModelCall, function_calls: Sequence[genai_types.FunctionCall], runs: _ToolQueues
) -> list[ToolRun | None]:
    """The tool run of each function call among the unused runs started since the model call (calls are matched in
    start-time order): same id, else same name and arguments, else same name, first unused."""

    def expired(run: ToolRun) -> bool:
        return run.span.start_time_ns < call.span.start_time_ns

    matched: list[ToolRun | None] = []
    for function_call in function_calls:
        run = None
        if function_call.id is not None:
            run = runs.first(("id", function_call.id), expired)
        if run is None:
            run = runs.first_with_args(function_call, expired) or runs.first(("name", function_call.name), expired)
        if run is not None:
            runs.take(run)
        matched.append(run)
    return matched


def _is_final(event: _Event) -> bool:
    """``Event.is_final_response()`` for a replayed event (no function calls/responses, no trailing code result)."""
    if event.skip_summarization:
        return True
    parts = event.content.parts or []
    if any(p.function_call or p.function_response for p in parts):
        return False
    return not (parts and parts[-1].code_execution_result is not None)


def _final_event(events: Sequence[_Event]) -> _Event | None:
    final: _Event | None = None
    for event in events:
        if not event.content.parts or not _is_final(event):
            continue
        final_has_text = final is not None and any(p.text for p in final.content.parts or [])
        if not final_has_text or any(p.text for p in event.content.parts or []):
            final = event
    return final


def _kept(event: _Event) -> bool:
    return any(p.function_call or p.function_response or p.text or p.inline_data for p in event.content.parts or [])


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

    def __init__(self, tree: SpanTree, runs: Sequence[OwnedSpans], model_timing: Sequence[Span]) -> None:
        roots = {g.root.span_id for g in runs}
        root_above = tree.nearest(lambda s: s.span_id in roots)
        candidates = [tree.by_id[i] for i in roots if i in tree.by_id]
        self._intervals: dict[str, tuple[list[tuple[int, int]], list[tuple[int, int]]]] = {r: ([], []) for r in roots}
        tools = [s for s in tree.spans if is_tool_span(s)]
        spans = [(s, 0) for s in model_timing] + [(s, 1) for s in tools]
        lost = [(s, kind) for s, kind in spans if not tree.has_parent_chain(s) and s.span_id not in roots]
        starts = [dataclasses.replace(s, end_time_ns=s.start_time_ns) for s, _ in lost]
        by_time = {
            (s.span_id, kind): candidates[i].span_id
            for (s, kind), i in zip(lost, tightest_containers(candidates, starts), strict=True)
            if i is not None
        }
        for span, kind in spans:
            if span.span_id in roots:
                root_id: str | None = span.span_id
            elif (span.span_id, kind) in by_time:
                root_id = by_time[(span.span_id, kind)]
            else:
                above = root_above.get(span.span_id)
                root_id = None if above is None else above.span_id
            if root_id is not None:
                self._intervals[root_id][kind].append((span.start_time_ns, span.end_time_ns))

    def of(self, root: Span) -> tuple[int, int]:
        """Nanoseconds in model calls, and in tools while no model call ran, under ``root``."""
        model, tools = self._intervals.get(root.span_id, ([], []))
        model_ns = covered_ns(model)
        return model_ns, covered_ns(model + tools) - model_ns
