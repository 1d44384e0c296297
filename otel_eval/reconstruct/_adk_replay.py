"""ADK model calls and tool runs of one invocation replayed as the session events ADK stored.

A model response becomes one event; the tool runs that answered its function calls become one function-response event
after it (parallel responses merged in call order), timed at the end of the last of them. Tool runs are matched to the
function calls by id, else by name and arguments, else by name (:class:`_ToolQueues`); when content was not captured,
tool runs no response asked for become events of their own. A function-response event ADK ended the agent's turn on
(``skip_summarization``) is marked, as ``Event.is_final_response()`` sees it.

The parts and contents the replay makes itself are built with ``trusted`` (no validation): their values are what
validating them gives (``str`` names and ids, the tool runs' ``dict`` arguments and results, new lists).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_eval import semconv
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._adk_history import fill_from_history
from otel_eval.reconstruct._adk_spans import ModelCall, ToolRun
from otel_eval.reconstruct._first_unused import FirstUnused

_LISTED = 10
"""How many tool names a warning lists before "and N more"."""


@dataclass(slots=True)
class Event:
    """One session event ADK would have stored."""

    author: str
    content: genai_types.Content
    runs: list[ToolRun] = field(default_factory=list)
    """For a function-response event: the tool runs it answers."""
    skip_summarization: bool = False
    """ADK ended the agent's turn on this function response (``Event.is_final_response()`` is True)."""
    batch_failed: bool = False
    """For a function-response event: a tool of the same model response failed (its exception ended the run)."""


def replay_events(
    calls: Sequence[ModelCall],
    tools: Sequence[ToolRun],
    captured: bool,
    warnings: list[str],
    where: str,
    *,
    responses: bool = True,
) -> list[Event]:
    """The session events ADK stored for these calls and tools, in order.

    Without ``responses`` only the events that call tools come out (a model response, or a tool run no response
    asked for when content was not captured), with the same function calls, ids and warnings: the function-response
    events, the tool results read from later requests' histories and the ``skip_summarization`` marks are left out
    (what :data:`~otel_eval.reconstruct.reads.Reads.TOOL_CALLS` alone needs). A malformed history content that only
    the tool-result lookup would have read is then not reported (:mod:`otel_eval.reconstruct._adk_contents`)."""
    runs_left = _ToolQueues(tools)
    timeline: list[tuple[int, int, Event]] = []
    for order, call in enumerate(calls):
        author = call.author or "agent"
        if call.response is None or not call.response.parts:
            continue
        content = call.response
        function_calls = [p.function_call for p in content.parts or [] if p.function_call]
        runs = _match_tools(call, function_calls, runs_left)
        if not responses:
            if function_calls:
                timeline.append((call.span.start_time_ns, 2 * order, Event(author, _with_ids(content, runs))))
            continue
        fill_from_history(function_calls, runs, calls, order)
        content = _with_ids(content, runs)
        function_calls = [p.function_call for p in content.parts or [] if p.function_call]
        timeline.append((call.span.start_time_ns, 2 * order, Event(author, content)))
        answers = [
            genai_types.Part.trusted(
                function_response=genai_types.FunctionResponse.trusted(
                    id=run.call_id or function_call.id, name=run.name, response=run.response
                )
            )
            for function_call, run in zip(function_calls, runs, strict=True)
            if run is not None and run.response is not None
        ]
        if answers:
            end = max(run.span.end_time_ns for run in runs if run is not None)
            answered = [run for run in runs if run is not None and run.response is not None]
            failed = any(run is not None and run.failed for run in runs)
            returned = genai_types.Content.trusted(role="user", parts=answers)
            event = Event(author, returned, runs=answered, batch_failed=failed)
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
            call_part = genai_types.Part.trusted(
                function_call=genai_types.FunctionCall.trusted(id=run.call_id, name=run.name, args=run.args or {})
            )
            timeline.append(
                (
                    run.span.start_time_ns,
                    -1,
                    Event(author, genai_types.Content.trusted(role="model", parts=[call_part])),
                )
            )
            if run.response is not None and responses:
                response = genai_types.FunctionResponse.trusted(id=run.call_id, name=run.name, response=run.response)
                part = genai_types.Part.trusted(function_response=response)
                timeline.append(
                    (run.span.end_time_ns, -1, Event(author, genai_types.Content.trusted(role="user", parts=[part])))
                )
    timeline.sort(key=lambda item: (item[0], item[1]))
    events = [event for _, _, event in timeline]
    if responses:
        _mark_skip_summarization(events)
    return events


def _with_ids(content: genai_types.Content, runs: Sequence[ToolRun | None]) -> genai_types.Content:
    """``content`` (a model response) with the id of each function call's tool run filled in where the call has
    none: on a copy, the response stays as recorded; ``content`` itself when no id is missing."""
    function_calls = [p.function_call for p in content.parts or [] if p.function_call]
    if not any(run is not None and c.id is None and run.call_id for c, run in zip(function_calls, runs, strict=True)):
        return content
    content = _own_function_calls(content)
    function_calls = [p.function_call for p in content.parts or [] if p.function_call]
    for function_call, run in zip(function_calls, runs, strict=True):
        if run is not None and function_call.id is None and run.call_id:
            function_call.id = run.call_id
    return content


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


def _mark_skip_summarization(events: list[Event]) -> None:
    """Finds the function responses ADK ended an agent's turn on (``skip_summarization``, e.g. ``exit_loop`` or an
    ``AgentTool(skip_summarization=True)``): no model call of the same agent follows them, and every tool the model
    response called succeeded (one that raised in parallel with them ended the run, on no final response).

    ADK makes such an event the final response, and appends the agent tool's result as text to it.
    """
    # One pass from the end: the authors with a model call still to come.
    calling_later: set[str] = set()
    answered_last: list[Event] = []
    for event in reversed(events):
        if event.content.role == "model" and not event.runs:
            calling_later.add(event.author)
        elif event.author not in calling_later:
            answered_last.append(event)
    for event in reversed(answered_last):
        if not event.runs or event.batch_failed or any(run.name == _TRANSFER_TOOL for run in event.runs):
            continue
        event.skip_summarization = True
        for run in event.runs:
            text = _displayed_result(run)
            if text is not None and event.content.parts is not None:
                event.content.parts.append(genai_types.Part.trusted(text=text))


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


def _is_final(event: Event) -> bool:
    """``Event.is_final_response()`` for a replayed event (no function calls/responses, no trailing code result)."""
    if event.skip_summarization:
        return True
    parts = event.content.parts or []
    if any(p.function_call or p.function_response for p in parts):
        return False
    return not (parts and parts[-1].code_execution_result is not None)


def last_final_event(events: Sequence[Event]) -> Event | None:
    final: Event | None = None
    for event in events:
        if not event.content.parts or not _is_final(event):
            continue
        final_has_text = final is not None and any(p.text for p in final.content.parts or [])
        if not final_has_text or any(p.text for p in event.content.parts or []):
            final = event
    return final


def is_kept(event: Event) -> bool:
    return any(p.function_call or p.function_response or p.text or p.inline_data for p in event.content.parts or [])
