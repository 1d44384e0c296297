"""GenAI content carried in span events: the ``gen_ai.client.inference.operation.details`` event, the deprecated
per-message events (semconv <= 1.36: ``gen_ai.system.message``, ``gen_ai.user.message``, ``gen_ai.assistant.message``,
``gen_ai.tool.message``, ``gen_ai.choice``), and the OpenAI Agents stringified-tool-call quirk.

Deprecated events are read from wherever emitters put the payload: the event body (log records), the event
attributes (``content``, ``tool_calls``, ``id``, ``message``, ``finish_reason``; Strands and OpenLLMetry write JSON
strings there), or ``gen_ai.event.content`` (the whole body as JSON, Azure SDKs). ``content`` may be plain text, an
OpenAI-style message, or a list of content blocks: ``{"text"}``, ``{"type": "text"}``, Bedrock/Strands
``{"toolUse": {toolUseId, name, input}}`` / ``{"toolResult": {toolUseId, content, status}}``, Anthropic
``{"type": "tool_use"}`` / ``{"type": "tool_result"}``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from otel_eval import semconv
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._draft import function_call_part
from otel_eval.reconstruct._flattened import MAPPINGS
from otel_eval.reconstruct._genai_messages import contents_from_messages
from otel_eval.reconstruct._values import parse_json, parse_json_value, tool_call_args, tool_response_payload
from otel_eval.traces.span import Span, SpanEvent

SYSTEM_MESSAGE, USER_MESSAGE, ASSISTANT_MESSAGE, TOOL_MESSAGE, CHOICE = semconv.GEN_AI_DEPRECATED_MESSAGE_EVENTS
_INPUT_EVENTS = {SYSTEM_MESSAGE: "system", USER_MESSAGE: "user", ASSISTANT_MESSAGE: "model", TOOL_MESSAGE: "user"}
_MESSAGE_KEYS = frozenset({"role", "content", "parts", "tool_calls"})
"""Keys of a choice's message object; a JSON object with none of them is the answer's own text."""
STRINGIFIED_CALL_MARK = "ResponseFunctionToolCall("
"""Text that holds no such mark prints no call (a cheaper test than the pattern below)."""
_STRINGIFIED_CALL = re.compile(r"^\s*ResponseFunctionToolCall\((?P<fields>.*)\)\s*$", re.DOTALL)
_FIELD = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|None|True|False|[\w.\-]+)")


def event_payload(event: SpanEvent) -> dict[str, Any]:
    """Event attributes merged with the event body and a ``gen_ai.event.content`` JSON body (body wins)."""
    payload: dict[str, Any] = dict(event.attributes)
    for extra in (event.attributes.get(semconv.GEN_AI_EVENT_CONTENT), event.body):
        parsed, _ = parse_json(extra)
        if isinstance(parsed, MAPPINGS):
            payload.update(parsed)
    return payload


def details_messages(span: Span, key: str) -> list[Any]:
    """The values under ``key`` (``gen_ai.input.messages``/``gen_ai.output.messages``) of the span attribute and of
    every ``gen_ai.client.inference.operation.details`` event, attribute first, each as recorded (JSON string or list).
    """
    if not span.events:
        value = span.attributes.get(key)
        return [] if value is None else [value]
    sources = [span.attributes, *(event_payload(e) for e in span.events if _is_details(e))]
    return [source[key] for source in sources if source.get(key) is not None]


def content_value(span: Span, key: str) -> Any:
    """The span attribute ``key``, or when the span has none, the value under ``key`` of its first
    ``gen_ai.client.inference.operation.details`` event that has one (content captured as events); None if neither."""
    value = span.attributes.get(key)
    return value if value is not None else details_value(span, key)


def details_value(span: Span, key: str) -> Any:
    """The value under ``key`` of the span's first ``gen_ai.client.inference.operation.details`` event having one."""
    for event in span.events:
        if _is_details(event):
            value = event_payload(event).get(key)
            if value is not None:
                return value
    return None


def _is_details(event: SpanEvent) -> bool:
    return event.name == semconv.GEN_AI_OPERATION_DETAILS_EVENT


def has_content_events(span: Span) -> bool:
    """Whether the span carries content in an operation-details event or a deprecated message event."""
    for event in span.events:
        if event.name in semconv.GEN_AI_DEPRECATED_MESSAGE_EVENTS:
            return True
        if _is_details(event):
            payload = event_payload(event)
            if semconv.GEN_AI_INPUT_MESSAGES in payload or semconv.GEN_AI_OUTPUT_MESSAGES in payload:
                return True
    return False


def deprecated_messages(span: Span, warnings: list[str]) -> tuple[list[genai_types.Content], list[genai_types.Content]]:
    """``(inputs, outputs)`` from the deprecated per-message events of a model or agent span, in event order."""
    inputs: list[genai_types.Content] = []
    outputs: list[genai_types.Content] = []
    for index, event in enumerate(span.events):
        where = f"span {span.span_id} ({span.name!r}) event {event.name}[{index}]"
        payload = event_payload(event)
        if event.name in _INPUT_EVENTS:
            role = _INPUT_EVENTS[event.name]
            if event.name == TOOL_MESSAGE:
                content = _tool_result_content(payload, warnings, where)
            else:
                content = _message_content(payload, role, warnings, where)
            if content is not None:
                inputs.append(content)
        elif event.name == CHOICE:
            raw = payload.get("message", payload.get("content"))
            message = parse_json_value(raw)
            if isinstance(message, MAPPINGS) and isinstance(raw, str) and not _MESSAGE_KEYS & message.keys():
                # Strands' agent span: the answer as the agent returns it, a structured output's model as JSON.
                content = genai_types.Content(role="model", parts=[genai_types.Part(text=raw)])
            elif isinstance(message, MAPPINGS):
                content = _message_content(message, "model", warnings, where)
            else:
                content = _message_content({"content": message}, "model", warnings, where)
            if content is not None:
                outputs.append(content)
    return inputs, outputs


def deprecated_tool_io(span: Span, warnings: list[str]) -> tuple[dict[str, Any] | None, Any, str | None]:
    """``(args, result, call id)`` of a tool span in the deprecated form: ``gen_ai.tool.message`` holds the arguments
    and ``gen_ai.choice`` the result (Strands without ``gen_ai_latest_experimental``). ``result`` is raw (or None)."""
    args: dict[str, Any] | None = None
    result: Any = None
    call_id: str | None = None
    for event in span.events:
        payload = event_payload(event)
        raw_id = payload.get("id")
        if isinstance(raw_id, str) and raw_id:
            call_id = call_id or raw_id
        if event.name == TOOL_MESSAGE and args is None:
            args = tool_call_args(payload.get("content"), warnings, f"span {span.span_id} event {event.name}")
        elif event.name == CHOICE and result is None:
            result = payload.get("message", payload.get("content"))
    return args, result, call_id


def _tool_result_content(payload: Mapping[str, Any], warnings: list[str], where: str) -> genai_types.Content | None:
    content = parse_json_value(payload.get("content"))
    blocks = _blocks_to_parts(content, warnings, where) if isinstance(content, list) else None
    if blocks and any(p.function_response for p in blocks):
        return genai_types.Content(role="user", parts=blocks)
    raw_id = payload.get("id", payload.get("tool_call_id"))
    call_id = raw_id if isinstance(raw_id, str) and raw_id else None
    response = genai_types.FunctionResponse(id=call_id, response=tool_response_payload(payload.get("content")))
    return genai_types.Content(role="user", parts=[genai_types.Part(function_response=response)])


def _message_content(
    payload: Mapping[str, Any], role: str, warnings: list[str], where: str
) -> genai_types.Content | None:
    parts: list[genai_types.Part] = []
    content = parse_json_value(payload.get("content"))
    if isinstance(content, str):
        if content:
            parts.append(genai_types.Part(text=content))
    elif isinstance(content, list):
        parts.extend(_blocks_to_parts(content, warnings, where))
    elif isinstance(content, MAPPINGS):
        inner = contents_from_messages([{"role": role, **content}], warnings, where)
        parts.extend(p for c in inner for p in c.parts or [])
    tool_calls = parse_json_value(payload.get("tool_calls"))
    if isinstance(tool_calls, list):
        calls = contents_from_messages([{"role": "assistant", "tool_calls": tool_calls}], warnings, where)
        parts.extend(p for c in calls for p in c.parts or [])
    if not parts:
        return None
    return genai_types.Content(role=role, parts=parts)


def _blocks_to_parts(blocks: list[Any], warnings: list[str], where: str) -> list[genai_types.Part]:
    parts: list[genai_types.Part] = []
    for block in blocks:
        if isinstance(block, str):
            parts.append(genai_types.Part(text=block))
            continue
        if not isinstance(block, MAPPINGS):
            continue
        kind = block.get("type")
        use = block.get("toolUse")
        result = block.get("toolResult")
        if isinstance(use, MAPPINGS) or kind == "tool_use":
            source = use if isinstance(use, MAPPINGS) else block
            call_id = source.get("toolUseId", source.get("id"))
            part = function_call_part(source.get("name"), source.get("input"), call_id, warnings, where)
            if part is not None:
                parts.append(part)
        elif isinstance(result, MAPPINGS) or kind == "tool_result":
            source = result if isinstance(result, MAPPINGS) else block
            raw_id = source.get("toolUseId", source.get("tool_use_id"))
            parts.append(
                genai_types.Part(
                    function_response=genai_types.FunctionResponse(
                        id=raw_id if isinstance(raw_id, str) else None,
                        response=tool_response_payload(source.get("content")),
                    )
                )
            )
        elif isinstance(block.get("text"), str) and kind in (None, "text"):
            parts.append(genai_types.Part(text=block["text"]))
        elif kind in ("reasoning", "thinking") or "reasoningContent" in block:
            text = block.get("text", block.get("thinking", block.get("content")))
            if isinstance(text, str):
                parts.append(genai_types.Part(text=text, thought=True))
    return parts


def unstringify_tool_calls(
    contents: list[genai_types.Content], warnings: list[str], where: str
) -> list[genai_types.Content]:
    """Text parts that are a printed ``ResponseFunctionToolCall(...)`` (OpenAI Agents output messages exported by
    the OTel-contrib instrumentation) turned back into function-call parts; other parts unchanged."""
    fixed: list[genai_types.Content] = []
    for content in contents:
        parts: list[genai_types.Part] = []
        changed = False
        for part in content.parts or []:
            call = stringified_call(part.text, warnings, where) if part.text else None
            parts.append(genai_types.Part(function_call=call) if call is not None else part)
            changed = changed or call is not None
        # A content without such text is kept as it is (its fields were role and parts already).
        fixed.append(genai_types.Content(role=content.role, parts=parts) if changed else content)
    return fixed


def stringified_call(text: str, warnings: list[str], where: str) -> genai_types.FunctionCall | None:
    """The call a printed ``ResponseFunctionToolCall(...)`` text stands for; None for any other text."""
    match = _STRINGIFIED_CALL.match(text)
    if match is None:
        return None
    fields: dict[str, Any] = {}
    for key, raw in _FIELD.findall(match.group("fields")):
        try:
            fields[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            fields[key] = raw
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        return None
    call_id = fields.get("call_id") or fields.get("id")
    return genai_types.FunctionCall(
        name=name,
        args=tool_call_args(fields.get("arguments"), warnings, where),
        id=call_id if isinstance(call_id, str) else None,
    )
