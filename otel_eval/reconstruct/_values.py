"""Turning recorded tool arguments and tool results into the dicts ADK's ``FunctionCall``/``FunctionResponse`` hold.

Choices (the same for every convention):

* **Arguments** are parsed when they are a JSON string; a JSON object becomes the args dict. A Python-literal dict
  (``{'city': 'Alaska'}``, as some LangChain exporters write) is accepted too. Anything else that is not an object
  (a bare string, a list, malformed JSON) is kept as ``{"input": value}`` and a warning is recorded for malformed JSON.
* **Results** follow ``_genai_messages.function_response_payload`` (the rule every convention shares): a dict, or a
  string holding a JSON object, is the response dict as-is; a JSON array string is parsed and wrapped as
  ``{"result": [...]}``; anything else -- plain text, and scalar-looking text such as ``"294.0"``, which stays a
  string because the trace cannot tell a number from its text -- is kept as ``{"result": value}``, the way ADK wraps
  a non-dict tool return (never dropped, never an error). A list of text blocks (``[{"text": ...}]``, Strands/Bedrock
  tool results, MCP content) is joined into one text first.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from otel_eval.reconstruct._genai_messages import function_response_payload, parse_json_value

_TEXT_BLOCK_KEYS = frozenset({"text", "type"})


def parse_json(value: Any) -> tuple[Any, bool]:
    """``(parsed, True)`` when ``value`` is a JSON string, ``(value, False)`` when it is not a string or not JSON."""
    if not isinstance(value, str):
        return value, False
    text = value.strip()
    if not text:
        return value, False
    try:
        return json.loads(text), True
    except (json.JSONDecodeError, RecursionError):
        return value, False


def looks_like_json(value: str) -> bool:
    """Whether a string starts like a JSON object or array (so failing to parse it deserves a warning)."""
    stripped = value.lstrip()
    return stripped.startswith(("{", "["))


def tool_args(value: Any, warnings: list[str], where: str) -> dict[str, Any]:
    """Tool-call arguments as a dict (see the module docstring). Never raises."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return dict(value)
    parsed, ok = parse_json(value)
    if ok:
        if isinstance(parsed, dict):
            return parsed
        if parsed is None:
            return {}
        return {"input": parsed}
    if isinstance(value, str):
        literal = _python_literal(value)
        if isinstance(literal, dict):
            return literal
        if looks_like_json(value):
            warnings.append(f"{where}: tool arguments are not valid JSON; kept as text")
        return {"input": value} if value.strip() else {}
    return {"input": value}


def tool_response(value: Any) -> dict[str, Any]:
    """A tool result as a response dict (see the module docstring). Never raises."""
    if isinstance(value, dict):
        return dict(value)
    text = _joined_text_blocks(value)
    if text is not None:
        value = text
    parsed = parse_json_value(value)
    joined = _joined_text_blocks(parsed)
    if joined is not None:
        return function_response_payload(joined)
    return function_response_payload(parsed)


def _joined_text_blocks(value: Any) -> str | None:
    if not isinstance(value, list) or not value:
        return None
    texts: list[str] = []
    for block in value:
        if not isinstance(block, dict) or not set(block) <= _TEXT_BLOCK_KEYS or not isinstance(block.get("text"), str):
            return None
        texts.append(block["text"])
    return "\n".join(texts)


def _python_literal(text: str) -> Any:
    stripped = text.strip()
    if not stripped.startswith("{") or len(stripped) > 1_000_000:
        return None
    try:
        return ast.literal_eval(stripped)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def as_text(value: Any) -> str | None:
    """A value as display text: strings as-is, other JSON values serialised, None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
