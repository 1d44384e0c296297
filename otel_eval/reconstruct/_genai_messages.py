"""OpenTelemetry GenAI message JSON -> Google GenAI ``Content``.

Shared by every convention that reads chat messages from spans (ADK v2, GenAI semantic conventions, OpenInference,
OpenLLMetry). Two message shapes are accepted, and may be mixed in one list:

* **parts-based** (GenAI semconv >= 1.37, ADK v2): ``{"role", "parts": [...], "finish_reason"?, "name"?}`` with parts
  ``{"type": "text", "content"}``, ``{"type": "thinking"|"reasoning", "content"}``,
  ``{"type": "tool_call", "id", "name", "arguments"}``, ``{"type": "tool_call_response", "id", "response"|"result"}``,
  ``{"type": "blob", "mime_type", "content"|"data"}`` and ``{"type": "uri"|"file_data", "mime_type", "uri"}``.
* **content-based** (OpenAI chat style, older GenAI events): ``{"role", "content": str | [{"type": "text", "text"}],
  "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}], "tool_call_id"?, "name"?}``.

Roles become Google GenAI roles: ``assistant``/``model``/``ai`` -> ``model``; ``user``/``human`` and ``tool``/``function``
(a tool result goes back to the model as a user turn, as ADK does) -> ``user``; ``system``/``developer`` stay
``system`` so callers can tell instructions from conversation (ADK never puts them in ``contents``).

Tool-call arguments and tool results follow the one rule of :mod:`otel_eval.reconstruct._values`.

Public API (all pure, none raises on malformed input; problems are appended to ``warnings`` when given):

* :func:`contents_from_messages` — a message list (or its JSON string) -> ``list[Content]``.
* :func:`parse_messages` — a message list parsed, converted later (:class:`ParsedMessages`).
* :func:`sound_message_list` — whether parsing a message list reports no problem.
* :func:`content_from_message` — one message -> ``Content`` (None when it carries nothing usable).
* :func:`tool_call_names` — call id -> tool name over a message list, to name tool responses that carry only an id.
* :func:`genai_role` — a message role -> ``user`` / ``model`` / ``system``.

System instructions and tool definitions are read by :mod:`otel_eval.reconstruct._genai_agent_details`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._flattened import MAPPINGS
from otel_eval.reconstruct._values import preview, record_warning, tool_call_args, tool_response_payload
from otel_eval.traces import json_loads

_MODEL_ROLES = frozenset({"assistant", "model", "ai", "bot"})
_USER_ROLES = frozenset({"user", "human", "tool", "function", "ipython"})
SYSTEM_ROLES = frozenset({"system", "developer"})
THOUGHT_TYPES = frozenset({"thinking", "reasoning", "thought"})
TEXT_TYPES = frozenset({"text", "input_text", "output_text"})


def genai_role(role: object) -> str:
    """A message role as a Google GenAI role: ``model``, ``user`` or ``system`` (unknown -> ``user``)."""
    value = role.strip().lower() if isinstance(role, str) else ""
    if value in _MODEL_ROLES:
        return "model"
    if value in SYSTEM_ROLES:
        return "system"
    return "user"


def tool_call_names(messages: Any) -> dict[str, str]:
    """Tool-call id -> tool name over a message list (both shapes), for naming responses that carry only an id."""
    return _call_names(message for _, message in _message_list(messages, None, ""))


def _call_names(messages: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        parts = message.get("parts")
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, MAPPINGS) and part.get("type") == "tool_call":
                call_id, name = part.get("id"), part.get("name")
                if isinstance(call_id, str) and isinstance(name, str):
                    names[call_id] = name
        tool_calls = message.get("tool_calls")
        if isinstance(tool_calls, list):
            for call in tool_calls:
                if not isinstance(call, MAPPINGS):
                    continue
                function = call.get("function") if isinstance(call.get("function"), Mapping) else call
                call_id, name = call.get("id"), function.get("name") if isinstance(function, MAPPINGS) else None
                if isinstance(call_id, str) and isinstance(name, str):
                    names[call_id] = name
    return names


def contents_from_messages(
    messages: Any,
    warnings: list[str] | None = None,
    where: str = "messages",
    *,
    call_names: Mapping[str, str] | None = None,
) -> list[genai_types.Content]:
    """A list of GenAI messages (list or JSON string, either shape) as genai ``Content`` objects, in order.

    Args:
        messages: The attribute value: a JSON string or an already parsed list (a single message dict is accepted).
        warnings: Receives one line per problem (not JSON, not a list, malformed message or part).
        where: Names the source in warnings (e.g. ``"span 1a2b (generate_content x): gen_ai.input.messages"``).
        call_names: Extra call id -> tool name mappings, to name tool responses whose call is in another message
            list (e.g. the calls of an earlier output). The calls in ``messages`` itself are always used.

    Returns:
        One ``Content`` per message that carries at least one usable part. Messages with no usable part are skipped.
    """
    return parse_messages(messages, warnings, where).contents(warnings, call_names=call_names)


@dataclass(slots=True)
class ParsedMessages:
    """A message list read as far as its JSON: the message objects, not converted yet (:func:`parse_messages`).

    Converting messages to ``Content`` is most of the cost of reading them, and a model call's input (the whole history
    again, on every call) is seldom needed, so a reader may parse eagerly -- malformed JSON is reported at once -- and
    convert only when the contents are used. Not changed once made (not frozen: a frozen dataclass sets each field
    through ``object.__setattr__``, and every model call of a rebuild makes one or two).
    """

    messages: tuple[tuple[int, Mapping[str, Any]], ...]
    """The message objects, each with its index in the list as recorded (for the warnings)."""
    where: str
    """Names the source in warnings."""

    def has_role(self, role: str) -> bool:
        """Whether a message has this Google GenAI role (``user``, ``model``, ``system``), see :func:`genai_role`."""
        return any(genai_role(message.get("role")) == role for _, message in self.messages)

    def contents(
        self, warnings: list[str] | None = None, *, call_names: Mapping[str, str] | None = None
    ) -> list[genai_types.Content]:
        """The messages as genai ``Content`` objects, as :func:`contents_from_messages` describes them."""
        names = dict(call_names or {})
        names.update(_call_names(message for _, message in self.messages))
        contents: list[genai_types.Content] = []
        for index, message in self.messages:
            content = content_from_message(message, warnings, f"{self.where}[{index}]", call_names=names)
            if content is not None:
                contents.append(content)
        return contents


def parse_messages(messages: Any, warnings: list[str] | None = None, where: str = "messages") -> ParsedMessages:
    """A message list (list or JSON string) parsed but not converted; JSON and structure problems go to ``warnings``
    now (not JSON, not a list, an item that is not an object), those of the messages' parts when converted."""
    return ParsedMessages(tuple(_message_list(messages, warnings, where)), where)


def sound_message_list(messages: Any) -> bool:
    """Whether :func:`parse_messages` of ``messages`` reports no problem (a message list whose messages are objects):
    the check of a list that is parsed only for its problems, without keeping what it holds."""
    problems: list[str] = []
    _message_list(messages, problems, "")
    return not problems


def content_from_message(
    message: Any,
    warnings: list[str] | None = None,
    where: str = "message",
    *,
    call_names: Mapping[str, str] | None = None,
) -> genai_types.Content | None:
    """One GenAI message (either shape) as a genai ``Content``; None when it carries no usable part."""
    if not isinstance(message, MAPPINGS):
        record_warning(warnings, f"{where}: message is not an object: {preview(message)}")
        return None
    names = call_names or {}
    raw_role = message.get("role")
    parts: list[genai_types.Part] = []
    if isinstance(message.get("parts"), list):
        for index, raw_part in enumerate(message["parts"]):
            part = _part_from_semconv(raw_part, names, warnings, f"{where}.parts[{index}]")
            if part is not None:
                parts.append(part)
    else:
        parts.extend(_parts_from_chat_message(message, names, warnings, where))
    if not parts:
        return None
    return genai_types.Content(role=genai_role(raw_role), parts=parts)


# --- internals -----------------------------------------------------------------------------------------------------


def _message_list(messages: Any, warnings: list[str] | None, where: str) -> list[tuple[int, Mapping[str, Any]]]:
    """The message objects of a message list (or its JSON string), each with its index in the list."""
    value = messages
    if isinstance(value, str):
        try:
            value = json_loads(value)
        except json.JSONDecodeError as exc:
            record_warning(warnings, f"{where}: not valid JSON ({exc}): {preview(messages)}")
            return []
        except RecursionError:
            record_warning(warnings, f"{where}: JSON nested too deeply: {preview(messages)}")
            return []
    if type(value) is not list and isinstance(value, MAPPINGS):  # a list, the usual value, skips the ABC's check
        inner = value.get("messages")
        value = inner if isinstance(inner, list) else [value]
    if not isinstance(value, list):
        record_warning(warnings, f"{where}: expected a list of messages, got {preview(messages)}")
        return []
    items: list[tuple[int, Mapping[str, Any]]] = []
    for index, item in enumerate(value):
        if isinstance(item, MAPPINGS):
            items.append((index, item))
        else:
            record_warning(warnings, f"{where}[{index}]: message is not an object: {preview(item)}")
    return items


def _part_from_semconv(
    raw: Any, call_names: Mapping[str, str], warnings: list[str] | None, where: str
) -> genai_types.Part | None:
    if isinstance(raw, str):
        return genai_types.Part.trusted(text=raw)
    if not isinstance(raw, MAPPINGS):
        record_warning(warnings, f"{where}: part is not an object: {preview(raw)}")
        return None
    kind = raw.get("type")
    if kind in TEXT_TYPES or (kind is None and ("content" in raw or "text" in raw)):
        text = raw.get("content", raw.get("text"))
        return genai_types.Part.trusted(text=text) if isinstance(text, str) else _bad_part(warnings, where, raw)
    if kind in THOUGHT_TYPES:
        text = raw.get("content", raw.get("text"))
        return (
            genai_types.Part.trusted(text=text, thought=True)
            if isinstance(text, str)
            else _bad_part(warnings, where, raw)
        )
    if kind in ("tool_call", "function_call"):
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            return _bad_part(warnings, where, raw)
        call_id = raw.get("id")
        return genai_types.Part.trusted(
            function_call=genai_types.FunctionCall(
                id=call_id if isinstance(call_id, str) else None,
                name=name,
                args=tool_call_args(raw.get("arguments", raw.get("args")), warnings, where),
            )
        )
    if kind in ("tool_call_response", "function_response"):
        call_id = raw.get("id")
        call_id = call_id if isinstance(call_id, str) else None
        name = raw.get("name")
        if not isinstance(name, str):
            name = call_names.get(call_id or "")
        result = raw["response"] if "response" in raw else raw.get("result")
        return genai_types.Part.trusted(
            function_response=genai_types.FunctionResponse(
                id=call_id, name=name, response=tool_response_payload(result, warnings, where)
            )
        )
    if kind == "blob":
        return _blob_part(raw, warnings, where)
    if kind in ("uri", "file_data", "file"):
        uri = raw.get("uri", raw.get("file_uri"))
        mime = raw.get("mime_type")
        if isinstance(uri, str):
            return genai_types.Part(
                file_data=genai_types.FileData(file_uri=uri, mime_type=mime if isinstance(mime, str) else None)
            )
        return _bad_part(warnings, where, raw)
    record_warning(warnings, f"{where}: unsupported part type {kind!r}; skipped")
    return None


def _blob_part(raw: Mapping[str, Any], warnings: list[str] | None, where: str) -> genai_types.Part | None:
    data = raw.get("content", raw.get("data"))
    mime = raw.get("mime_type")
    if isinstance(data, str):
        try:
            payload = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            payload = data.encode("utf-8", "surrogatepass")
    elif isinstance(data, bytes):
        payload = data
    else:
        return _bad_part(warnings, where, raw)
    return genai_types.Part(
        inline_data=genai_types.Blob(data=payload, mime_type=mime if isinstance(mime, str) else None)
    )


def _parts_from_chat_message(
    message: Mapping[str, Any], call_names: Mapping[str, str], warnings: list[str] | None, where: str
) -> list[genai_types.Part]:
    role = message.get("role")
    role_name = role.strip().lower() if isinstance(role, str) else ""
    content = message.get("content")
    if role_name in ("tool", "function") or "tool_call_id" in message:
        call_id = message.get("tool_call_id", message.get("id"))
        call_id = call_id if isinstance(call_id, str) else None
        name = message.get("name")
        if not isinstance(name, str):
            name = call_names.get(call_id or "")
        result = _chat_text(content) if isinstance(content, list) else content
        return [
            genai_types.Part(
                function_response=genai_types.FunctionResponse(
                    id=call_id, name=name, response=tool_response_payload(result, warnings, where)
                )
            )
        ]
    parts: list[genai_types.Part] = []
    if isinstance(content, str):
        if content:
            parts.append(genai_types.Part.trusted(text=content))
    elif isinstance(content, list):
        for index, item in enumerate(content):
            part = _part_from_semconv(item, call_names, warnings, f"{where}.content[{index}]")
            if part is not None:
                parts.append(part)
    elif content is not None:
        record_warning(warnings, f"{where}: unexpected message content {preview(content)}")
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list):
        for index, call in enumerate(tool_calls):
            part = _chat_tool_call(call, warnings, f"{where}.tool_calls[{index}]")
            if part is not None:
                parts.append(part)
    elif tool_calls is not None:
        record_warning(warnings, f"{where}: tool_calls is not a list: {preview(tool_calls)}")
    return parts


def _chat_tool_call(call: Any, warnings: list[str] | None, where: str) -> genai_types.Part | None:
    if not isinstance(call, MAPPINGS):
        return _bad_part(warnings, where, call)
    function = call.get("function")
    source = function if isinstance(function, MAPPINGS) else call
    name = source.get("name")
    if not isinstance(name, str) or not name:
        return _bad_part(warnings, where, call)
    call_id = call.get("id")
    return genai_types.Part(
        function_call=genai_types.FunctionCall(
            id=call_id if isinstance(call_id, str) else None,
            name=name,
            args=tool_call_args(source.get("arguments", source.get("args")), warnings, where),
        )
    )


def _chat_text(content: list[Any]) -> str:
    texts = []
    for item in content:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, MAPPINGS):
            text = item.get("text", item.get("content"))
            if isinstance(text, str):
                texts.append(text)
    return "\n".join(texts)


def _bad_part(warnings: list[str] | None, where: str, raw: Any) -> genai_types.Part | None:
    record_warning(warnings, f"{where}: malformed part {preview(raw)}; skipped")
    return None


__all__ = [
    "ParsedMessages",
    "content_from_message",
    "contents_from_messages",
    "genai_role",
    "parse_messages",
    "tool_call_names",
]
