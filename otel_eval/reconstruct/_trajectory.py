"""The convention-independent half of reconstruction: model calls and tool runs of one invocation -> an Invocation.

Each convention module finds the invocation roots, reads its own attributes into the model call and tool run
records of :mod:`otel_eval.reconstruct._draft` (top-level ones only: calls inside a tool, e.g. an agent used as a
tool, go to ``nested_model_calls`` and count for usage but not for the trajectory) and hands an ``InvocationDraft``
to :func:`build_invocation` (or :func:`plain_invocation`), which apply the ADK rules:

* ``tool_uses`` are the function calls the top-level model calls made, in order (de-duplicated by call id), plus tool
  runs no model output accounts for (content not captured, code agents, a run resumed after an interrupt), placed by
  time; such a run's call is the one of its call id in the history sent to the model when there is one.
* ``tool_responses`` follow the order of their calls: the matching tool run's result (matched by call id, else by
  name in order), else the function response sent back to a later model call with the same call id.
* ``final_response`` is the agent-level output of the root when it has text, else the text of the last model output
  without function calls (ADK's ``is_final_response``), unless the root ended in error (cancelled, or it raised): the
  application got an exception, not that text (a stream cut off, say), which is then an intermediate response.
* ``intermediate_responses`` are the texts (and reasoning, as thought parts) of every other model output, as
  ``(author, parts)``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from otel_eval.model import (
    AgentDetails,
    AppDetails,
    TokenUsage,
    TracedInvocation,
)
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._draft import (
    DEFAULT_AUTHOR,
    InvocationDraft,
    ModelCall,
    ToolRun,
    calls_of,
    function_calls_in,
    last_user_text,
    texts_of,
)
from otel_eval.reconstruct._first_unused import FirstUnused
from otel_eval.reconstruct._span_tree import covered_ns
from otel_eval.reconstruct._token_usage import sum_token_counts
from otel_eval.reconstruct.plain import PlainInvocation
from otel_eval.reconstruct.reads import Reads
from otel_eval.reconstruct.signals import feedback


def _is_final(outputs: Sequence[genai_types.Content]) -> bool:
    has_text = any(texts_of(c) for c in outputs)
    return has_text and not function_calls_in(outputs)


@dataclass(slots=True)
class _Step:
    sort_key: tuple[int, int]
    call: genai_types.FunctionCall
    response: genai_types.FunctionResponse | None


def _tool_matcher(runs: Sequence[ToolRun]) -> FirstUnused[ToolRun]:
    """Runs by call id, by name, and by name among the runs without a call id."""

    def keys(run: ToolRun) -> list[Hashable]:
        found: list[Hashable] = [("name", run.name)]
        if run.call_id:
            found.append(("id", run.call_id))
        else:
            found.append(("name without id", run.name))
        return found

    return FirstUnused(runs, keys)


def _take(runs: FirstUnused[ToolRun], call: genai_types.FunctionCall) -> ToolRun | None:
    """The run of a function call: same call id, else the first unused run of that name (one without a call id when
    the call has one: a run with a different id answers another call)."""
    run = runs.first(("id", call.id)) if call.id else None
    if run is None:
        run = runs.first(("name without id", call.name) if call.id else ("name", call.name))
    if run is not None:
        runs.take(run)
    return run


def _sent_back_responses(calls: Sequence[ModelCall]) -> dict[str, genai_types.FunctionResponse]:
    """The function responses sent back to the model, by the id of the call they answer: the response's own id when
    it is one of the calls of the model message before it or of the model's outputs, else that message's next
    unanswered call (the responses follow the calls in order; google-genai's automatic function calling sends them
    without the call id). OpenLLMetry's OpenAI Agents spans give the calls in the history the Responses API's item
    id (``fc_call_1``) and the responses the call id (``call_1``) the model's output has."""
    found: dict[str, genai_types.FunctionResponse] = {}
    made_by_model = {made.id for call in calls for made in calls_of(call) if made.id}
    for call in calls:
        pending: list[str] = []
        for message in call.inputs:
            parts = message.parts or []
            made = [p.function_call.id for p in parts if p.function_call and p.function_call.id]
            if made:
                pending = made
            for part in parts:
                response = part.function_response
                if response is None:
                    continue
                call_id: str | None
                if response.id in pending or (response.id and (not pending or response.id in made_by_model)):
                    call_id = response.id
                else:
                    call_id = pending[0] if pending else None
                if call_id is not None and call_id in pending:
                    pending.remove(call_id)
                if call_id and call_id not in found:
                    found[call_id] = response
    return found


def _calls_sent_back(calls: Sequence[ModelCall]) -> dict[str, genai_types.FunctionCall]:
    """The function calls in the history sent to the model, by call id: a call an earlier trace's model made (a
    LangGraph run resumed after an interrupt runs the tool of a call made before it) has its arguments there."""
    found: dict[str, genai_types.FunctionCall] = {}
    for call in calls:
        for made in function_calls_in(call.inputs):
            if made.id:
                found.setdefault(made.id, made)
    return found


def _response(
    call: genai_types.FunctionCall,
    run: ToolRun | None,
    sent_back: Callable[[], dict[str, genai_types.FunctionResponse]],
) -> genai_types.FunctionResponse | None:
    payload: dict[str, Any] | None = None
    if run is not None and run.response is not None:
        payload = run.response
    elif call.id and call.id in sent_back():
        payload = sent_back()[call.id].response
    elif run is not None and run.error is not None:
        payload = {"error": run.error}
    if payload is None:
        return None
    return genai_types.FunctionResponse(name=call.name, id=call.id, response=payload)


def _steps(draft: InvocationDraft, *, responses: bool = True) -> list[_Step]:
    read: list[dict[str, genai_types.FunctionResponse]] = []

    def sent_back() -> dict[str, genai_types.FunctionResponse]:
        """Read once, and only for a tool run without a response: it reads every model call's inputs."""
        if not read:
            read.append(_sent_back_responses(draft.model_calls))
        return read[0]

    steps = _steps_by_id(draft, sent_back if responses else None)
    if steps is not None:
        return steps
    matcher = _tool_matcher(draft.tool_runs)
    steps = []
    seen_ids: set[str] = set()
    sequence = 0
    for model_call in draft.model_calls:
        for call in calls_of(model_call):
            if call.id and call.id in seen_ids:
                continue
            if call.id:
                seen_ids.add(call.id)
            run = _take(matcher, call)
            sequence += 1
            response = _response(call, run, sent_back) if responses else None
            steps.append(_Step((model_call.span.end_time_ns, sequence), call, response))
    earlier: dict[str, genai_types.FunctionCall] | None = None  # made once, for the first leftover with a call id
    for run in matcher.leftovers():
        if run.call_id and earlier is None:
            earlier = _calls_sent_back(draft.model_calls)
        made = earlier.get(run.call_id) if run.call_id and earlier else None
        call = made or genai_types.FunctionCall(name=run.name or "unknown_tool", args=run.args or {}, id=run.call_id)
        sequence += 1
        response = _response(call, run, sent_back) if responses else None
        steps.append(_Step((run.span.start_time_ns, sequence), call, response))
    steps.sort(key=_SORT_KEY)
    return steps


_SORT_KEY = operator.attrgetter("sort_key")


def _steps_by_id(
    draft: InvocationDraft, sent_back: Callable[[], dict[str, genai_types.FunctionResponse]] | None
) -> list[_Step] | None:
    """The steps when every function call and every tool run has a call id, each id once, and the calls' ids are the
    runs' ids: then each call's run is the one of its id and no run is left over, which is what the general matching
    of :func:`_steps` gives, without its queues. None when they are not so (the general matching decides)."""
    runs = {run.call_id: run for run in draft.tool_runs}
    calls = [(model_call.span.end_time_ns, call) for model_call in draft.model_calls for call in calls_of(model_call)]
    if (
        len(runs) != len(draft.tool_runs)
        or len(calls) != len(runs)
        or None in runs
        or "" in runs
        or {call.id for _, call in calls} != runs.keys()
    ):
        return None
    steps = [
        _Step((end, sequence), call, None if sent_back is None else _response(call, runs[call.id], sent_back))
        for sequence, (end, call) in enumerate(calls, 1)
    ]
    steps.sort(key=_SORT_KEY)
    return steps


def _final_and_intermediate(
    draft: InvocationDraft, *, errored: bool
) -> tuple[genai_types.Content | None, list[tuple[str, list[genai_types.Part]]]]:
    last_final_index: int | None = None
    for index, model_call in enumerate(draft.model_calls):
        if _is_final(model_call.outputs):
            last_final_index = index
    final: genai_types.Content | None = None
    root_texts = texts_of(draft.root_output)
    if root_texts:
        final = genai_types.Content(role="model", parts=[genai_types.Part.trusted(text=t) for t in root_texts])
    elif last_final_index is not None and not errored:
        texts = [t for c in draft.model_calls[last_final_index].outputs for t in texts_of(c)]
        final = genai_types.Content(role="model", parts=[genai_types.Part.trusted(text=t) for t in texts])
    final_text = "\n".join(texts_of(final))
    intermediate: list[tuple[str, list[genai_types.Part]]] = []
    for index, model_call in enumerate(draft.model_calls):
        if index == last_final_index and final is not None:
            own_text = "\n".join(t for c in model_call.outputs for t in texts_of(c))
            if not root_texts or own_text.strip() == final_text.strip():
                continue
        parts = [
            genai_types.Part.trusted(text=p.text, thought=p.thought or None)
            for c in model_call.outputs
            for p in c.parts or []
            if p.text
        ]
        if parts:
            intermediate.append((model_call.author or draft.agent_name or DEFAULT_AUTHOR, parts))
    return final, intermediate


def _token_usage(draft: InvocationDraft, calls: Sequence[ModelCall]) -> TokenUsage:
    usages = [c.usage for c in calls if c.usage.reported()]
    return sum_token_counts(usages or [draft.root_usage])


def _app_details(calls: Sequence[ModelCall], default_author: str) -> AppDetails | None:
    agents: dict[str, AgentDetails] = {}
    for call in calls:
        name = call.author or default_author
        if name in agents or (not call.system_instruction and not call.tool_declarations):
            continue
        tools: list[Any] = [{"function_declarations": call.tool_declarations}] if call.tool_declarations else []
        agents[name] = AgentDetails(name=name, instructions=call.system_instruction or "", tool_declarations=tools)
    return AppDetails(agent_details=agents) if agents else None


def build_invocation(draft: InvocationDraft) -> TracedInvocation:
    """The ADK invocation and its telemetry facts: the parts ``draft.reads`` asks for, the others left empty (the
    models of :func:`plain_invocation`). Never raises on content: problems end up in ``warnings``."""
    return plain_invocation(draft).traced()


def plain_invocation(draft: InvocationDraft) -> PlainInvocation:
    """The invocation's values (:class:`~otel_eval.reconstruct.plain.PlainInvocation`): the parts ``draft.reads`` asks
    for, the others left empty, no ADK model made for them yet. Never raises on content: problems end up in
    ``warnings``."""
    root = draft.root
    reads = draft.reads.value  # an int: a Flag's operators are Python calls
    read_user = bool(reads & _USER)
    user_content = draft.root_input if read_user else None
    if user_content is None and read_user:
        for model_call in draft.model_calls:
            user_content = last_user_text(model_call.inputs)
            if user_content is not None:
                break
    steps = _steps(draft, responses=bool(reads & _RESPONSES)) if reads & _STEP_READS else []
    final: genai_types.Content | None = None
    intermediate: list[tuple[str, list[genai_types.Part]]] = []
    errored = root.status_code == "ERROR"
    if reads & _TEXT_READS:
        final, intermediate = _final_and_intermediate(draft, errored=errored)
        if draft.guardrail_tripped is not None:
            final = None  # the run raised: whatever the model said never reached the user
    # Copied after the reads above: inputs read on first use record their problems in draft.warnings.
    warnings = list(draft.warnings)
    if draft.guardrail_tripped is not None:
        warnings.append(
            f"trace {root.trace_id} span {root.span_id}: a guardrail stopped the run ({draft.guardrail_tripped}); "
            "it has no final response"
        )
    elif errored and reads & _TEXT_READS and final is None and any(_is_final(c.outputs) for c in draft.model_calls):
        warnings.append(
            f"trace {root.trace_id} span {root.span_id}: the run ended in error ({root.status_message or 'ERROR'}): "
            "its last model output never reached the user as an answer; it has no final response"
        )
    elif not draft.content_captured:
        warnings.append(
            f"trace {root.trace_id} span {root.span_id}: no message content was captured "
            "(content capture off?); user text, responses and tool arguments are unknown"
        )
    elif user_content is None and read_user:
        warnings.append(f"trace {root.trace_id} span {root.span_id}: no user message found")
    real_calls = [c for c in draft.model_calls if not c.synthetic]
    if draft.nested_model_calls:
        real_calls += [c for c in draft.nested_model_calls if not c.synthetic]
    agent_name = draft.agent_name
    # The models' values (assembled without validating again, see plain._assemble). Dicts, not keywords: a keyword
    # call packs them into a dict again.
    data = {
        "tool_uses": [s.call for s in steps],
        "tool_responses": [s.response for s in steps if s.response is not None],
        "intermediate_responses": intermediate,
    }
    invocation = {
        "invocation_id": root.span_id,
        "user_content": user_content,  # None: an empty Content, made with the model (plain._assemble)
        "final_response": final,
        "creation_timestamp": root.start_time_ns / 1e9,
        "app_details": _app_details(draft.model_calls, agent_name or DEFAULT_AUTHOR) if reads & _DETAILS else None,
    }
    model = next((c.model for c in real_calls if c.model), None) or draft.root_model
    values: dict[str, Any] = {
        "trace_id": root.trace_id,
        "span_id": root.span_id,
        "session_id": draft.session_id,
        "convention": draft.convention,
        "agent_name": agent_name,
        "model": model,
        "start_time_ns": root.start_time_ns,
        "end_time_ns": draft.end_time_ns if draft.end_time_ns is not None else root.end_time_ns,
        "content_captured": draft.content_captured,
        "warnings": warnings,
        "ended_in_error": errored or draft.guardrail_tripped is not None,
        "feedback": feedback(root),
    }
    if reads & _USAGE:
        values["model_call_count"] = len(real_calls)
        values["token_usage"] = _token_usage(draft, real_calls)
    if reads & _TIMING:
        model_intervals = [(c.span.start_time_ns, c.span.end_time_ns) for c in real_calls]
        tool_intervals = [(r.span.start_time_ns, r.span.end_time_ns) for r in draft.tool_runs]
        model_ns = covered_ns(model_intervals)
        values["model_seconds"] = model_ns / 1e9 if model_ns else None
        # Time in tools while no model call was in flight.
        # None when no tool interval covers any time (what covered_ns(tool_intervals) == 0 says, without its sort).
        values["tool_seconds"] = (
            (covered_ns(model_intervals + tool_intervals) - model_ns) / 1e9
            if any(end > start for start, end in tool_intervals)
            else None
        )
    return PlainInvocation(values, invocation, data)


_USER = Reads.USER_CONTENT.value
_RESPONSES = Reads.TOOL_RESPONSES.value
_STEP_READS = (Reads.TOOL_CALLS | Reads.TOOL_RESPONSES).value
_TEXT_READS = (Reads.FINAL_RESPONSE | Reads.INTERMEDIATE_TEXTS).value
_DETAILS = Reads.APP_DETAILS.value
_USAGE = Reads.USAGE.value
_TIMING = Reads.TIMING.value
