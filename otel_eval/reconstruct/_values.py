"""Recorded tool arguments and tool results -> the dicts ADK's ``FunctionCall.args``/``FunctionResponse.response`` hold.

One rule for every convention (ADK legacy and v2, GenAI, OpenInference, OpenLLMetry, and tool calls inside messages):
the recorded data is kept, never silently dropped.

* **Envelopes first**: a framework's wrapper around the value (a LangChain ``ToolMessage``, a LlamaIndex
  ``ToolOutput``, OpenLLMetry's callback envelopes) is unwrapped to the value, by the rules of ``_envelopes``; one that
  looks like an envelope no rule knows is kept with a warning.
* **Arguments** (:func:`tool_call_args`): a dict, or a string holding a JSON object, is the args dict. A Python-literal
  dict string (``{'city': 'Alaska'}``, as some LangChain exporters write) is accepted too. Nothing (None, blank text,
  JSON ``null``) is ``{}``. Any other value -- a JSON array or scalar, plain text, text that is not valid JSON, a
  number -- is kept as ``{"input": value}`` (JSON parsed first).
* **Results** (:func:`tool_response_payload`): a dict, or a string holding a JSON object, is the response dict as-is;
  a Python-literal dict string (``{'city': 'Paris'}``, the OpenAI Agents SDK's ``str()`` of a dict result) is that
  dict; a JSON array string is parsed and wrapped as ``{"result": [...]}``; anything else -- plain text, and
  scalar-looking text such as ``"294.0"``, which stays a string because the trace cannot tell a number from its text
  -- is kept as ``{"result": value}``, the way ADK wraps a non-dict tool return. A list of text blocks
  (``[{"text": ...}]``, Strands/Bedrock tool results, MCP content) is joined into one text first.
* **Python literals** are read only up to :data:`MAX_LITERAL_CHARS` (64 KiB); a longer one is kept as text, with a
  warning.
* **Warnings**: text that looks like JSON (:func:`looks_like_json`) but does not parse is kept as text, and a warning
  naming where it was found is recorded (it was probably truncated or corrupted). Nothing here raises.
"""

from __future__ import annotations

import ast
import json
import logging
from typing import Any

from otel_eval.reconstruct import _envelopes
from otel_eval.traces import json_loads

logger = logging.getLogger(__name__)

_TEXT_BLOCK_KEYS = frozenset({"text", "type"})
MAX_LITERAL_CHARS = 64 * 1024
"""Longest text read as a Python literal: ``ast.literal_eval`` parses a whole syntax tree first (tens of bytes of
memory and microseconds per character of span text), so a longer one is kept as text, with a warning."""


def parse_json(value: Any) -> tuple[Any, bool]:
    """``(parsed, True)`` when ``value`` is a JSON string, ``(value, False)`` when it is not a string or not JSON."""
    if not isinstance(value, str):
        return value, False
    text = value.strip()
    if not text:
        return value, False
    try:
        return json_loads(text), True
    except (json.JSONDecodeError, RecursionError):
        return value, False


def parse_json_value(value: Any) -> Any:
    """``value`` parsed when it is a JSON object/array string, else unchanged (so ``"294.0"`` stays text)."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
            try:
                return json_loads(text)
            except (json.JSONDecodeError, RecursionError):
                return value
    return value


def looks_like_json(value: str) -> bool:
    """Whether text reads as a JSON document: it starts with ``{``, or it is bracketed ``[...]``.

    A leading ``[`` alone does not count: prose often starts so (``[INFO] done``, ``[1] first result``).
    """
    text = value.strip()
    return text.startswith("{") or (text.startswith("[") and text.endswith("]"))


def tool_call_args(value: Any, warnings: list[str] | None = None, where: str = "tool call") -> dict[str, Any]:
    """Tool-call arguments as the args dict (see the module docstring). Never raises."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return _unwrapped_args(value, warnings, where)
    if not isinstance(value, str):
        return {"input": value}
    if not value.strip():
        return {}
    parsed, ok = parse_json(value)
    if ok:
        if isinstance(parsed, dict):
            return _unwrapped_args(parsed, warnings, where)
        return {} if parsed is None else {"input": parsed}
    literal = _python_literal(value, warnings, where)
    if isinstance(literal, dict):
        return literal
    if looks_like_json(value):
        record_warning(warnings, f"{where}: tool arguments are not valid JSON; kept as text")
    return {"input": value}


def _unwrapped_args(args: dict[str, Any], warnings: list[str] | None, where: str) -> dict[str, Any]:
    if "input_str" not in args and "kwargs" not in args:  # no envelope, known or not (see _envelopes): the args
        return dict(args)
    inner = _envelopes.tool_arguments(args)
    if inner is not args:
        return tool_call_args(inner, warnings, where)
    _warn_unknown_envelope(args, warnings, where)
    return dict(args)


def _warn_unknown_envelope(value: Any, warnings: list[str] | None, where: str) -> None:
    why = _envelopes.unknown_envelope(value)
    if why is not None:
        record_warning(warnings, f"{where}: the value looks like {why}, which is not unwrapped; kept as recorded")


def tool_response_payload(value: Any, warnings: list[str] | None = None, where: str = "tool result") -> dict[str, Any]:
    """A tool result as the ``FunctionResponse.response`` dict (see the module docstring). Never raises."""
    # ``parsed`` is always parse_json_value(value): a JSON text is parsed once, however many steps look at it.
    parsed = parse_json_value(value)
    message = _envelopes.tool_message(parsed)
    if message is not None:
        value = message.get("content")
        parsed = parse_json_value(value)
    raw_output = _envelopes.tool_output(parsed)
    if raw_output is not None:
        (value,) = raw_output
        parsed = parse_json_value(value)
    if isinstance(value, dict):
        _warn_unknown_envelope(value, warnings, where)
        return dict(value)
    text = _joined_text_blocks(value)
    if text is not None:
        value = text
        parsed = parse_json_value(value)
    joined = _joined_text_blocks(parsed)
    if joined is not None:
        parsed = parse_json_value(joined)
    elif parsed is value and isinstance(value, str) and looks_like_json(value):
        literal = _python_literal(value, warnings, where)
        if isinstance(literal, dict):
            return literal
        record_warning(warnings, f"{where}: tool result is not valid JSON; kept as text")
    if isinstance(parsed, dict):
        _warn_unknown_envelope(parsed, warnings, where)
        return parsed
    return {"result": parsed}


def nonempty_str(value: Any) -> str | None:
    """``value`` when it is a non-empty string (an id, a name), else None."""
    return value if isinstance(value, str) and value else None


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


def _joined_text_blocks(value: Any) -> str | None:
    if not isinstance(value, list) or not value:
        return None
    texts: list[str] = []
    for block in value:
        if not isinstance(block, dict) or not set(block) <= _TEXT_BLOCK_KEYS or not isinstance(block.get("text"), str):
            return None
        texts.append(block["text"])
    return "\n".join(texts)


def _python_literal(text: str, warnings: list[str] | None, where: str) -> Any:
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    if len(stripped) > MAX_LITERAL_CHARS:
        record_warning(
            warnings,
            f"{where}: {len(stripped)} characters, too long to read as a Python literal (over {MAX_LITERAL_CHARS})",
        )
        return None
    try:
        return ast.literal_eval(stripped)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def record_warning(warnings: list[str] | None, message: str) -> None:
    """Appends ``message`` to ``warnings``, or logs it at debug level when the caller keeps no warnings."""
    if warnings is not None:
        warnings.append(message)
    else:
        logger.debug("%s", message)


def preview(value: Any, limit: int = 120) -> str:
    """The value (text as it is, anything else as its ``repr``) cut to ``limit`` characters, for a warning."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"
