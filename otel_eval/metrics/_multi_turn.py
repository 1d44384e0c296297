"""What the multi-turn metrics read from a conversation, as ADK 2.13 reads it.

ADK's multi-turn evaluators (``rubric_based_multi_turn_trajectory_evaluator.py`` and ``_MultiTurnVertexiAiEvalFacade``
in ``vertex_ai_eval_facade.py``) read each turn's tool calls, tool outputs and intermediate texts only from the
turn's session events (``InvocationEvents``): an invocation whose intermediate data are ``tool_uses`` /
``tool_responses`` shows them no tool call at all. A rebuilt ADK invocation keeps its events in outline
(:attr:`~otel_eval.model.TracedInvocation.event_outline`), from which :func:`turn_events` gives ADK's events back.
For other conventions, which do not record events, the events are approximated from the intermediate data (texts,
then each tool call followed by its response), authored by the invocation's agent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from otel_eval.model import (
    IntermediateData,
    InvocationEvent,
    TracedInvocation,
    invocation_events,
)
from otel_eval.model import genai as genai_types


def turn_events(traced: TracedInvocation) -> list[InvocationEvent]:
    """The turn's session events as ADK keeps them (see the module docs for conventions without events)."""
    events = invocation_events(traced)
    if events is not None:
        return list(events.invocation_events)
    data = traced.invocation.intermediate_data
    if not isinstance(data, IntermediateData):
        return []
    author = traced.agent_name or "agent"
    approximated = [
        InvocationEvent(author=who or author, content=genai_types.Content(role="model", parts=parts))
        for who, parts in data.intermediate_responses
    ]
    responses = {response.id: response for response in data.tool_responses if response.id}
    unpaired = iter(r for r in data.tool_responses if not r.id)
    for call in data.tool_uses:
        approximated.append(
            InvocationEvent(author=author, content=genai_types.Content(role="model", parts=[_part(call=call)]))
        )
        response = responses.get(call.id) if call.id else next(unpaired, None)
        if response is not None:
            approximated.append(
                InvocationEvent(
                    author=author, content=genai_types.Content(role="user", parts=[_part(response=response)])
                )
            )
    if traced.invocation.final_response is not None:
        approximated.append(InvocationEvent(author=author))
    return approximated


def _part(
    *, call: genai_types.FunctionCall | None = None, response: genai_types.FunctionResponse | None = None
) -> genai_types.Part:
    return genai_types.Part(function_call=call, function_response=response)


def dialogue(conversation: Sequence[TracedInvocation]) -> str:
    """ADK's ``_assemble_dialogue_history``: ``USER TURN n:``, ``AGENT (author) TURN n[ (tool call| tool output)]:``
    lines; a turn's final answer is labelled with the author of the turn's first event (``agent`` without events)."""
    lines: list[str] = []
    for index, traced in enumerate(conversation):
        turn = index + 1
        invocation = traced.invocation
        user_texts = [p.text for p in invocation.user_content.parts or [] if p.text]
        if user_texts:
            lines.append(f"USER TURN {turn}: {' '.join(user_texts)}")
        events = turn_events(traced)
        for event in events:
            role = "USER" if event.author and event.author.lower() == "user" else f"AGENT ({event.author})"
            if event.content is None or not event.content.parts:
                continue
            texts = [p.text for p in event.content.parts if p.text]
            if texts:
                lines.append(f"{role} TURN {turn}: {' '.join(texts)}")
            for part in event.content.parts:
                if part.function_call:
                    args = json.dumps(dict(part.function_call.args)) if part.function_call.args else "{}"
                    lines.append(f"{role} TURN {turn} (tool call): {part.function_call.name}({args})")
                if part.function_response:
                    response = part.function_response.response
                    output = json.dumps(dict(response)) if response else "{}"
                    lines.append(f"{role} TURN {turn} (tool output): {part.function_response.name} -> {output}")
        final = invocation.final_response
        if final is not None and final.parts:
            texts = [p.text for p in final.parts if p.text]
            if texts:
                lines.append(f"AGENT ({events[0].author if events else 'agent'}) TURN {turn}: {' '.join(texts)}")
    return "\n".join(lines)


def instructions_and_tools(conversation: Sequence[TracedInvocation]) -> tuple[str, str]:
    """ADK's agent instructions (``Agent {id} Instructions:`` blocks) and tool list (``Agent: {id}`` then
    ``- name: description``) over every turn's app details, first occurrences kept, in order."""
    instructions: list[str] = []
    tools: list[str] = []
    for traced in conversation:
        app = traced.invocation.app_details
        if app is None:
            continue
        for agent_id, details in app.agent_details.items():
            instructions.append(f"Agent {agent_id} Instructions:\n{details.instructions}")
            tools.append(f"Agent: {agent_id}")
            for tool in details.tool_declarations:
                for name, description in _declared_functions(tool):
                    tools.append(f"- {name}: {description}")
    return "\n\n".join(dict.fromkeys(instructions)), "\n".join(dict.fromkeys(tools))


def _declared_functions(tool: Any) -> list[tuple[Any, Any]]:
    """(name, description) of a tool's function declarations, whether the tool is a genai ``Tool`` or its JSON."""
    if isinstance(tool, dict):
        declarations = tool.get("function_declarations") or tool.get("functionDeclarations") or []
        return [(d.get("name"), d.get("description")) for d in declarations if isinstance(d, dict)]
    return [(d.name, d.description) for d in getattr(tool, "function_declarations", None) or []]
