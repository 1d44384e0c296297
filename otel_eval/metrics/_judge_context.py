"""What judged metrics show the judge about an invocation, serialised exactly as ADK 2.13's
``llm_as_judge_utils`` does (texts, tool declarations, tool calls with responses, grounding metadata), except that a
tool response's file and inline data parts are shown as placeholders (:mod:`otel_eval.metrics._judge_media`)."""

from __future__ import annotations

import json
from typing import Any

from otel_eval.metrics._judge_media import judge_safe_function_response
from otel_eval.model import (
    AppDetails,
    EvalBaseModel,
    IntermediateData,
    IntermediateDataType,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    get_all_tool_calls,
    get_all_tool_responses,
)
from otel_eval.model import genai as genai_types

NO_TOOLS = "Agent has no tools."
NO_STEPS = "No intermediate steps were taken."
NO_GROUNDING = "No grounding metadata was provided."


def content_text(content: genai_types.Content | None) -> str | None:
    """Text parts joined by newlines, or None when there are none (ADK's ``get_text_from_content``)."""
    if content and content.parts:
        return "\n".join([p.text for p in content.parts if p.text])
    return None


def invocation_text(invocation: Invocation, *, include_intermediate: bool = False) -> str | None:
    """The final-response text; with ``include_intermediate``, every intermediate text then the final one."""
    if not include_intermediate:
        return content_text(invocation.final_response)
    parts: list[str] = []
    data = invocation.intermediate_data
    if isinstance(data, InvocationEvents):
        for event in data.invocation_events:
            text = content_text(event.content)
            if text:
                parts.append(text)
    elif isinstance(data, IntermediateData):
        for _, response_parts in data.intermediate_responses:
            text = content_text(genai_types.Content(parts=response_parts))
            if text:
                parts.append(text)
    final_text = content_text(invocation.final_response)
    if final_text:
        parts.append(final_text)
    return "\n".join(parts) if parts else None


class _ToolDeclarations(EvalBaseModel):
    tool_declarations: dict[str, list[Any]]


class _ToolCallAndResponse(EvalBaseModel):
    step: int
    tool_call: genai_types.FunctionCall
    tool_response: genai_types.FunctionResponse | str


class _ToolCallsAndResponses(EvalBaseModel):
    tool_calls_and_response: list[_ToolCallAndResponse]


class _GroundingMetadataEntry(EvalBaseModel):
    step: int
    author: str | None = None
    grounding_metadata: genai_types.GroundingMetadata


class _GroundingMetadataEntries(EvalBaseModel):
    grounding_metadata: list[_GroundingMetadataEntry]


_DUMP: dict[str, Any] = {"indent": 2, "exclude_unset": True, "exclude_defaults": True, "exclude_none": True}


def tool_declarations_json(app_details: AppDetails | None) -> str:
    """``{"tool_declarations": {agent: [tools]}}`` as JSON, or ADK's no-tools sentence without app details."""
    if app_details is None:
        return NO_TOOLS
    declarations = {name: details.tool_declarations for name, details in app_details.agent_details.items()}
    return _ToolDeclarations(tool_declarations=declarations).model_dump_json(**_DUMP)


def tool_calls_and_responses_json(intermediate_data: IntermediateDataType | None) -> str:
    """Tool calls paired with their responses by call id, as ADK's JSON; or ADK's no-steps sentence."""
    responses_by_id = {
        response.id: judge_safe_function_response(response) for response in get_all_tool_responses(intermediate_data)
    }
    pairs = [(call, responses_by_id.get(call.id)) for call in get_all_tool_calls(intermediate_data)]
    if not pairs:
        return NO_STEPS
    steps = [
        _ToolCallAndResponse(step=index, tool_call=call, tool_response=response if response else "None")
        for index, (call, response) in enumerate(pairs)
    ]
    return _ToolCallsAndResponses(tool_calls_and_response=steps).model_dump_json(**_DUMP)


def grounding_metadata_json(intermediate_data: IntermediateDataType | None) -> str:
    """Grounding metadata of the invocation's events as ADK's JSON, or ADK's no-grounding sentence."""
    if not isinstance(intermediate_data, InvocationEvents):
        return NO_GROUNDING
    entries = [
        _GroundingMetadataEntry(step=index, author=event.author, grounding_metadata=event.grounding_metadata)
        for index, event in enumerate(intermediate_data.invocation_events)
        if event.grounding_metadata
    ]
    if not entries:
        return NO_GROUNDING
    return _GroundingMetadataEntries(grounding_metadata=entries).model_dump_json(**_DUMP)


def developer_instructions_for(invocation: Invocation) -> str:
    """Instructions of the agent that authored the first event (else the first agent), as the rubric metric reads."""
    app_details = invocation.app_details
    if not app_details:
        return ""
    agent_name: str | None = None
    data = invocation.intermediate_data
    if isinstance(data, InvocationEvents) and data.invocation_events:
        agent_name = data.invocation_events[0].author
    elif app_details.agent_details:
        agent_name = next(iter(app_details.agent_details))
    if not agent_name:
        return ""
    details = app_details.agent_details.get(agent_name)
    if details is None:
        raise ValueError(f"`{agent_name}` not found in the agentic system.")
    return details.instructions


def hallucination_context(invocation: Invocation, events: list[InvocationEvent]) -> str:
    """The validator's context for one step (ADK's ``_create_context_for_step``)."""
    developer_instructions = ""
    app_details = invocation.app_details
    if app_details:
        instructions = [
            f"{name}:\n{details.instructions}"
            for name, details in app_details.agent_details.items()
            if details.instructions
        ]
        developer_instructions = "\n\n".join(instructions)
    parts = [
        f"Developer instructions:\n{developer_instructions}\n",
        f"User prompt:\n{content_text(invocation.user_content)}\n",
        "Tool definitions:",
        f"{tool_declarations_json(app_details)}\n",
        "Grounding metadata:",
        f"{grounding_metadata_json(InvocationEvents(invocation_events=events))}\n",
    ]
    for event in events:
        if not event.content or not event.content.parts:
            continue
        event_parts = event.content.parts
        calls = [p.function_call for p in event_parts if p.function_call]
        responses = [judge_safe_function_response(p.function_response) for p in event_parts if p.function_response]
        texts = [p.text for p in event_parts if p.text]
        if texts:
            parts.append("\n".join(texts) + "\n")
        if calls:
            parts.append("tool_calls:")
            parts.append(json.dumps([c.model_dump(exclude_none=True) for c in calls], indent=2) + "\n")
        if responses:
            parts.append("tool_outputs:")
            parts.append(json.dumps([_response_dict(r) for r in responses], indent=2) + "\n")
    return "\n".join(parts)


def _response_dict(response: genai_types.FunctionResponse) -> dict[str, Any]:
    """ADK's ``model_dump(exclude_none=True)``; with media parts (placeholders here), their bytes as base64 text, where
    ADK's ``json.dumps`` of the bytes raises."""
    return response.model_dump(mode="json" if response.parts else "python", exclude_none=True)
