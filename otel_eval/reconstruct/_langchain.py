"""LangChain's serialised shapes as they appear inside OpenInference values and ADOT event bodies.

Messages come as ``{"content", "type": "human"|"ai"|"tool"|"system"}``, wrapped as ``{"lc": 1, "kwargs": {...}}``,
or OpenAI-style ``{"role", "content"}``; model results as ``LLMResult`` (``{"generations": [[{"text", "message"}]]}``);
tool results as a serialised ``ToolMessage`` (``{"content", "tool_call_id", "status", "name"?, "type": "tool"}``).
"""

from __future__ import annotations

from typing import Any

from otel_eval.model import genai as genai_types
from otel_eval.reconstruct import _envelopes as envelopes
from otel_eval.reconstruct._draft import normalize_role
from otel_eval.reconstruct._values import parse_json, tool_call_args, tool_response_payload


def unwrap(message: Any) -> dict[str, Any] | None:
    """The message dict itself (``kwargs`` or ``data`` of a serialised LangChain message, see ``_envelopes``), or
    None."""
    if not isinstance(message, dict):
        return None
    inner = envelopes.langchain_message(message)
    if inner is not None:
        return inner
    kwargs = message.get("kwargs")
    return kwargs if isinstance(kwargs, dict) else message


def message_text(message: dict[str, Any]) -> str:
    """The text of a message whose content is a string or a list of text blocks."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            block if isinstance(block, str) else str(block.get("text", ""))
            for block in content
            if isinstance(block, str) or (isinstance(block, dict) and block.get("type", "text") == "text")
        ]
        return "\n".join(t for t in texts if t)
    return ""


def message_role(message: dict[str, Any]) -> str:
    """``user``/``model``/``tool``/``system`` from ``type`` or ``role``."""
    return normalize_role(message.get("type") or message.get("role"))


def messages_of(value: Any) -> list[dict[str, Any]]:
    """The messages of a ``{"messages": [...]}`` value (nested batches flattened), unwrapped."""
    if not isinstance(value, dict):
        return []
    raw = value.get("messages")
    if not isinstance(raw, list):
        return []
    flat: list[Any] = []
    for item in raw:
        if isinstance(item, list):
            flat.extend(item)
        else:
            flat.append(item)
    return [m for m in (unwrap(item) for item in flat) if m is not None]


def last_text(messages: list[dict[str, Any]], role: str) -> str | None:
    """Text of the last message with ``role`` (normalised) that has text."""
    for message in reversed(messages):
        if message_role(message) == role:
            text = message_text(message)
            if text.strip():
                return text
    return None


def function_calls(message: dict[str, Any], warnings: list[str], where: str) -> list[genai_types.FunctionCall]:
    """The tool calls of an AI message (``tool_calls: [{name, args, id}]``)."""
    calls: list[genai_types.FunctionCall] = []
    raw = message.get("tool_calls")
    if not isinstance(raw, list):
        return calls
    for item in raw:
        if not isinstance(item, dict):
            continue
        nested = item.get("function")
        function: dict[str, Any] = nested if isinstance(nested, dict) else item
        name = function.get("name")
        if not isinstance(name, str) or not name:
            continue
        args = function.get("args", function.get("arguments"))
        call_id = item.get("id")
        calls.append(
            genai_types.FunctionCall(
                name=name,
                args=tool_call_args(args, warnings, where),
                id=call_id if isinstance(call_id, str) and call_id else None,
            )
        )
    return calls


def llm_result_content(value: Any, warnings: list[str], where: str) -> genai_types.Content | None:
    """The model output of a serialised ``LLMResult`` (first generation), or None when ``value`` is not one."""
    if not isinstance(value, dict) or not isinstance(value.get("generations"), list):
        return None
    generations = value["generations"]
    first = generations[0] if generations else None
    if isinstance(first, list):
        first = first[0] if first else None
    if not isinstance(first, dict):
        return genai_types.Content(role="model", parts=[])
    message = unwrap(first.get("message")) or {}
    text = first.get("text")
    if not isinstance(text, str) or not text:
        text = message_text(message)
    parts: list[genai_types.Part] = []
    if text:
        parts.append(genai_types.Part(text=text))
    parts.extend(genai_types.Part(function_call=call) for call in function_calls(message, warnings, where))
    return genai_types.Content(role="model", parts=parts)


def tool_message(value: Any) -> tuple[dict[str, Any], str | None, str | None] | None:
    """``(response, tool_call_id, tool_name)`` of a serialised ``ToolMessage`` (any envelope of ``_envelopes``), or
    None when ``value`` is not one."""
    message = envelopes.tool_message(value)
    if message is None or "content" not in message:
        return None
    call_id = message.get("tool_call_id")
    name = message.get("name")
    content = message.get("content")
    if isinstance(content, list):
        content = message_text(message)
    return (
        tool_response_payload(content),
        call_id if isinstance(call_id, str) and call_id else None,
        name if isinstance(name, str) and name else None,
    )


def parsed(value: Any) -> Any:
    """``value`` parsed when it is a JSON string, else as it is."""
    result, _ = parse_json(value)
    return result
