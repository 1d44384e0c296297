"""Framework envelopes around tool arguments and tool results, unwrapped to what the tool got and gave.

Instrumentations often record a framework's own object instead of the bare value. One rule per serialisation, each
proven on what the real instrumentation emits (``tests/data/frameworks``, ``tests/reconstruct/test_frameworks.py``):

* **LangChain messages, ``messages_to_dict`` form** -- ``{"type": "tool"|"ai"|"human"|..., "data": {"content", ...}}``
  (OpenInference's ``output.value`` of a LangGraph tool, and the ``{"messages": [...]}`` a LangGraph ``tools`` node
  returns): the message is ``data``.
* **LangChain messages, ``dumpd`` form** -- ``{"lc": 1, "type": "constructor", "id": [..., "ToolMessage"], "kwargs":
  {"content", ...}}`` (OpenInference's model inputs, OpenLLMetry's callback payloads): the message is ``kwargs``.
* **A ``ToolMessage`` as a tool result** (either form, bare, in ``{"messages": [one ToolMessage]}``, or in
  OpenLLMetry's callback envelope ``{"output": <ToolMessage>, "kwargs": {...}}`` written to
  ``gen_ai.tool.call.result``): the result is the message's ``content``.
* **A LangGraph ``Command`` as a tool result** -- ``{"graph", "update": {"messages": [...]}, "resume", "goto"}`` (a
  tool that updates the graph's state, in either envelope above): the result is the ``ToolMessage`` among the
  messages it adds, what the model is sent back.
* **OpenLLMetry's callback envelope for arguments** -- ``{"input_str": "<the arguments as text>", "inputs": {...},
  "tags", "metadata"}``
  (``gen_ai.tool.call.arguments`` / ``traceloop.entity.input`` of a LangChain tool): the arguments are ``inputs``
  when it is an object, else ``input_str`` (JSON or a Python-literal dict, as LangChain prints it).
* **LlamaIndex ``ToolOutput``** -- ``{"blocks"|"content", "tool_name", "raw_input", "raw_output", "is_error"}``
  (OpenInference's ``output.value`` of a ``FunctionTool.acall`` span): the result is ``raw_output``, what the tool
  function returned (``blocks`` and ``content`` are its text for the model).
* **Python-repr text** -- ``"{'city': 'Paris'}"``, as the OpenAI Agents SDK sends a dict a tool returned
  (``str(result)``) and LangChain prints arguments: read as the literal it is, in ``_values``.
* **OpenInference ``input.value`` / ``output.value``** carry ``input.mime_type`` / ``output.mime_type``:
  ``application/json`` values are parsed, ``text/plain`` values are text (and text that holds a JSON object is that
  object, by the rule of ``_values``, since a trace cannot tell them apart).

A dict that looks like an envelope none of these rules knows (a LangChain ``constructor`` object that is not a
message, ``kwargs`` beside an unknown payload, ``input_str`` without ``inputs``) is kept as it is, with a warning
naming where it was found: an evaluation should not silently read serialisation noise as the tool's output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_eval.reconstruct._flattened import MAPPINGS

_MESSAGE_TYPES = frozenset({"human", "ai", "tool", "system", "function", "chat", "remove"})
_LC_MESSAGE_SUFFIX = "Message"
_MESSAGE_CHUNK_SUFFIX = "MessageChunk"
_CALLBACK_KEYS = frozenset({"input_str", "inputs", "kwargs", "tags", "metadata", "run_id", "parent_run_id"})
"""What LangChain's ``on_tool_start`` callback receives besides the serialised tool, as OpenLLMetry records it."""
_TOOL_OUTPUT_KEYS = frozenset({"tool_name", "raw_input", "raw_output"})
_COMMAND_KEYS = frozenset({"graph", "update", "resume", "goto"})
_TOOL_OUTPUT_TEXT_KEYS = frozenset({"blocks", "content", "is_error"})


def langchain_message(value: Any) -> dict[str, Any] | None:
    """The message dict of a serialised LangChain message (either form), with its ``type``; None for anything else."""
    if not isinstance(value, MAPPINGS):
        return None
    if value.get("lc") == 1 and value.get("type") == "constructor":
        kwargs = value.get("kwargs")
        ident = value.get("id")
        kind = ident[-1] if isinstance(ident, list) and ident and isinstance(ident[-1], str) else ""
        if not isinstance(kwargs, MAPPINGS) or not (
            kind.endswith(_LC_MESSAGE_SUFFIX) or kind.endswith(_MESSAGE_CHUNK_SUFFIX)
        ):
            return None
        message = dict(kwargs)
        message.setdefault("type", kind.removesuffix("Chunk").removesuffix(_LC_MESSAGE_SUFFIX).lower())
        return message
    data = value.get("data")
    if value.get("type") in _MESSAGE_TYPES and isinstance(data, MAPPINGS) and "content" in data:
        message = dict(data)
        message.setdefault("type", value["type"])
        return message
    return None


def tool_message(value: Any) -> dict[str, Any] | None:
    """The ``ToolMessage`` a tool result is wrapped in (see the module docstring), or None."""
    if not isinstance(value, MAPPINGS):
        return None
    for candidate in _tool_message_candidates(value):
        message = langchain_message(candidate)
        if message is None and isinstance(candidate, MAPPINGS) and "tool_call_id" in candidate:
            message = dict(candidate)  # the bare kwargs, as some exporters write them
        if message is not None and (message.get("type") == "tool" or "tool_call_id" in message):
            return message
    return None


def _tool_message_candidates(value: Mapping[str, Any]) -> list[Any]:
    candidates: list[Any] = [value]
    output = value.get("output")
    if output is not None and set(value) <= {"output", "kwargs"}:
        candidates.append(output)
    messages = value.get("messages")
    if isinstance(messages, list) and len(messages) == 1 and set(value) == {"messages"}:
        candidates.append(messages[0])
    for candidate in list(candidates):
        candidates.extend(_command_messages(candidate))
    return candidates


def _command_messages(value: Any) -> list[Any]:
    """The messages a LangGraph ``Command`` puts in the graph's state (``update={"messages": [...]}``), else none."""
    if not isinstance(value, MAPPINGS) or set(value) != _COMMAND_KEYS:
        return []
    update = value.get("update")
    messages = update.get("messages") if isinstance(update, MAPPINGS) else None
    return list(messages) if isinstance(messages, list) else []


def tool_output(value: Any) -> tuple[Any] | None:
    """``(raw_output,)`` of a LlamaIndex ``ToolOutput`` (see the module docstring), or None for anything else."""
    if (
        isinstance(value, MAPPINGS)
        and set(value) >= _TOOL_OUTPUT_KEYS
        and set(value) <= _TOOL_OUTPUT_KEYS | _TOOL_OUTPUT_TEXT_KEYS
    ):
        return (value["raw_output"],)
    return None


def tool_arguments(value: Any) -> Any:
    """The arguments inside OpenLLMetry's ``{"input_str", "inputs"}`` envelope, else ``value`` unchanged."""
    if isinstance(value, MAPPINGS) and "input_str" in value and set(value) <= _CALLBACK_KEYS:
        inputs = value.get("inputs")
        if isinstance(inputs, MAPPINGS) and inputs:
            return dict(inputs)
        return value.get("input_str")
    return value


def unknown_envelope(value: Any) -> str | None:
    """Why ``value`` looks like a framework envelope no rule here unwraps (None when it does not)."""
    if not isinstance(value, MAPPINGS):
        return None
    if value.get("lc") == 1 and "kwargs" in value:
        return f"a LangChain serialised object {value.get('id')!r}"
    if "input_str" in value:
        return "a callback envelope with input_str"
    if set(value) == {"output", "kwargs"}:
        return "a callback envelope with output and kwargs"
    return None
