"""The function calls of GenAI output messages, read without converting the messages (rebuild on demand).

A rule that reads only the tool calls of an invocation (``tool_call_count_v1``, the trajectory metrics) needs, of a
model call's output messages, the function calls and nothing else. :func:`function_calls` gives exactly the calls that
converting the messages (:meth:`~otel_eval.reconstruct._genai_messages.ParsedMessages.contents`), turning printed
OpenAI Agents tool calls back into calls
(:func:`~otel_eval.reconstruct._genai_events.unstringify_tool_calls`) and leaving out system messages would give, in
the same order and as equal objects, without building a ``Content`` or a ``Part`` for the texts around them. It
follows the rules of :mod:`otel_eval.reconstruct._genai_messages` for the parts that make calls (parts-based
``tool_call``/``function_call`` parts, content-based ``tool_calls``, text parts that print a call); problems in the
parts that make no call are not reported here (the full conversion reports them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._flattened import MAPPINGS
from otel_eval.reconstruct._genai_events import STRINGIFIED_CALL_MARK, stringified_call
from otel_eval.reconstruct._genai_messages import SYSTEM_ROLES, TEXT_TYPES, THOUGHT_TYPES, ParsedMessages
from otel_eval.reconstruct._values import tool_call_args

_CALL_TYPES = ("tool_call", "function_call")
_RESPONSE_ROLES = ("tool", "function")
_STR_KEYS = frozenset({str})


def may_hold_calls(raw: str) -> bool:
    """Whether an output message list's JSON text may hold a function call: False only when it holds none of the
    words every call is written with (a ``tool_call``/``function_call`` part, a ``tool_calls`` list, a printed
    ``ResponseFunctionToolCall(``) and no ``\\u`` escape that could spell one; the text must still be parsed for its
    problems."""
    return "tool_call" in raw or "function_call" in raw or STRINGIFIED_CALL_MARK in raw or "\\u" in raw


def _function_call(call_id: Any, name: str, args: dict[str, Any]) -> genai_types.FunctionCall:
    """``FunctionCall(id=..., name=..., args=...)``, not validated again when ``args`` is what validating gives (a new
    dict with string keys, as JSON objects have; a Python-literal text may hold other keys, which fail as before)."""
    identifier = call_id if isinstance(call_id, str) else None
    if set(map(type, args)) <= _STR_KEYS:
        return genai_types.FunctionCall.trusted(id=identifier, name=name, args=args)
    return genai_types.FunctionCall(id=identifier, name=name, args=args)


def function_calls(parsed: Sequence[ParsedMessages], warnings: list[str]) -> list[genai_types.FunctionCall]:
    """The function calls of the non-system messages of ``parsed`` (a span's output message lists), in order."""
    if not parsed:
        return []
    calls: list[genai_types.FunctionCall] = []
    printed_where = parsed[0].where
    for messages in parsed:
        for index, message in messages.messages:
            role = message.get("role")
            role_name = role.strip().lower() if isinstance(role, str) else ""
            if role_name in SYSTEM_ROLES:
                continue
            raw_parts = message.get("parts")
            if isinstance(raw_parts, list):
                for part_index, raw in enumerate(raw_parts):
                    call = _part_call(raw, warnings, printed_where, messages.where, index, ".parts", part_index)
                    if call is not None:
                        calls.append(call)
            elif not (role_name in _RESPONSE_ROLES or "tool_call_id" in message):
                _chat_calls(message, calls, warnings, printed_where, f"{messages.where}[{index}]")
    return calls


def _chat_calls(
    message: Mapping[str, Any],
    calls: list[genai_types.FunctionCall],
    warnings: list[str],
    printed_where: str,
    where: str,
) -> None:
    """The calls of a content-based message (not a tool result): its content's text and parts, then ``tool_calls``."""
    content = message.get("content")
    if isinstance(content, str):
        call = _printed_call(content, warnings, printed_where)
        if call is not None:
            calls.append(call)
    elif isinstance(content, list):
        for index, item in enumerate(content):
            call = _part_call(item, warnings, printed_where, where, None, ".content", index)
            if call is not None:
                calls.append(call)
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list):
        for index, raw in enumerate(tool_calls):
            if not isinstance(raw, MAPPINGS):
                continue
            function = raw.get("function")
            source = function if isinstance(function, MAPPINGS) else raw
            name = source.get("name")
            if not isinstance(name, str) or not name:
                continue
            args = tool_call_args(source.get("arguments", source.get("args")), warnings, f"{where}.tool_calls[{index}]")
            calls.append(_function_call(raw.get("id"), name, args))


def _part_call(
    raw: Any,
    warnings: list[str],
    printed_where: str,
    where: str,
    message_index: int | None,
    field: str,
    index: int,
) -> genai_types.FunctionCall | None:
    """The call a message part makes: a call part, or a text part printing one; else None."""
    if isinstance(raw, str):
        return _printed_call(raw, warnings, printed_where)
    if not isinstance(raw, MAPPINGS):
        return None
    kind = raw.get("type")
    if kind in TEXT_TYPES or kind in THOUGHT_TYPES or (kind is None and ("content" in raw or "text" in raw)):
        text = raw.get("content", raw.get("text"))
        return _printed_call(text, warnings, printed_where) if isinstance(text, str) else None
    if kind not in _CALL_TYPES:
        return None
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        return None
    arguments = raw.get("arguments", raw.get("args"))
    if type(arguments) is dict and "input_str" not in arguments and "kwargs" not in arguments:
        # A JSON object without an envelope's keys: what tool_call_args gives (a copy), with no problem to name.
        return _function_call(raw.get("id"), name, arguments.copy())
    at = f"{where}[{message_index}]{field}[{index}]" if message_index is not None else f"{where}{field}[{index}]"
    return _function_call(raw.get("id"), name, tool_call_args(arguments, warnings, at))


def _printed_call(text: str, warnings: list[str], where: str) -> genai_types.FunctionCall | None:
    if not text or STRINGIFIED_CALL_MARK not in text:
        return None
    return stringified_call(text, warnings, where)


__all__ = ["function_calls", "may_hold_calls"]
