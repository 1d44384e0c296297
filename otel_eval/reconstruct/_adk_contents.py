"""The contents of legacy ADK's ``llm_request`` / ``llm_response`` JSON attributes as genai objects.

Every request repeats the whole history sent to the model, earlier responses included, and a rebuild reads little of
it: the user's message (the last user-role content of the first request, :func:`_adk_events._user_content`) and, for
a tool run that recorded no result, the function responses after its calls (:mod:`otel_eval.reconstruct._adk_history`).
So a request's history is a :class:`RequestHistory` whose contents are validated when first read, each distinct
content once per trace (:data:`Contents`, shared with the responses it repeats). A malformed content that is never read
changes nothing rebuilt and is not reported; one that is read is reported, and skipped, as it is read.
"""

from __future__ import annotations

import functools
import marshal
from collections.abc import Iterator
from typing import Any, TypeVar

import pydantic

from otel_eval import semconv
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._adk_spans import ModelCall
from otel_eval.traces.span import Span

_TOOLS_CACHE_SIZE = 64
_THOUGHT_SIGNATURE_KEYS = ("thought_signature", "thoughtSignature")
_Call = TypeVar("_Call", genai_types.FunctionCall, genai_types.FunctionResponse)

Contents = dict[bytes | str, genai_types.Content]
"""Request and response contents of one trace already validated, by :func:`_value_key` of their JSON value (shared
between its model calls, a response with the next request that repeats it: not mutated)."""


def _value_key(value: Any) -> bytes | str:
    """A parsed JSON value as a cache key: equal keys for equal values of the same types (``1``, ``1.0`` and ``True``
    differ, as their validation may). Its ``marshal`` form (version 2: no back-references, so two parses of one text
    give one key), about a third of the cost of its ``repr``; the ``repr`` for a value marshal cannot write."""
    try:
        return marshal.dumps(value, 2)
    except ValueError:
        return repr(value)


class RequestHistory:
    """The contents of one ``llm_request``, in order, each validated as a genai ``Content`` when first read; a
    content that is not one is reported (once) and skipped. Iterated forwards or backwards; not indexed, so that
    reading the last user message does not validate everything before it."""

    __slots__ = ("_raw", "_read", "_seen", "_span", "_warnings")

    def __init__(self, raw: list[Any], seen: Contents, warnings: list[str], span: Span) -> None:
        self._raw = raw
        self._read: dict[int, genai_types.Content | None] = {}
        self._seen, self._warnings, self._span = seen, warnings, span

    def _content(self, position: int) -> genai_types.Content | None:
        if position in self._read:
            return self._read[position]
        content = None
        try:
            content = validated_content(self._raw[position], self._seen)
        except pydantic.ValidationError as exc:
            self._warnings.append(
                f"{_request_where(self._span)}: contents[{position}] is not a genai Content: {exc.errors()[0]['msg']}"
            )
        self._read[position] = content
        return content

    def __iter__(self) -> Iterator[genai_types.Content]:
        for position in range(len(self._raw)):
            content = self._content(position)
            if content is not None:
                yield content

    def __reversed__(self) -> Iterator[genai_types.Content]:
        for position in reversed(range(len(self._raw))):
            content = self._content(position)
            if content is not None:
                yield content


def read_request(call: ModelCall, request: dict[str, Any], warnings: list[str], seen: Contents) -> None:
    """Fills ``call`` from a parsed ``llm_request``: its history (read lazily), system instruction and tools."""
    raw_contents = request.get("contents") or []
    if not isinstance(raw_contents, list):
        warnings.append(f"{_request_where(call.span)}: 'contents' is not a list")
        raw_contents = []
    call.request = RequestHistory(raw_contents, seen, warnings, call.span)
    config = request.get("config") or {}
    if not isinstance(config, dict):
        return
    instruction = config.get("system_instruction")
    if instruction is None:  # ADK for JavaScript (@google/adk) writes its request config in camelCase
        instruction = config.get("systemInstruction")
    call.system_instruction = _instruction_text(instruction)
    raw_tools = config.get("tools")
    if isinstance(raw_tools, list):
        declarations, problems = genai_tools(raw_tools)
        if problems:
            where = _request_where(call.span)
            warnings.extend(f"{where}: {problem}" for problem in problems)
        call.tools = list(declarations)


def _request_where(span: Span) -> str:
    """The start of a warning about a span's ``llm_request`` (made only when there is one)."""
    return f"span {span.span_id} ({span.name!r}): {semconv.ADK_LLM_REQUEST}"


def response_content(
    span: Span, response: dict[str, Any], warnings: list[str], seen: Contents
) -> genai_types.Content | None:
    """The content of a parsed ``llm_response``; None, with a warning, when it is not a genai ``Content``."""
    raw = response.get("content")
    if raw is None:
        return None
    try:
        return validated_content(raw, seen)
    except pydantic.ValidationError as exc:
        warnings.append(
            f"span {span.span_id} ({span.name!r}): {semconv.ADK_LLM_RESPONSE} content is not a genai Content: "
            f"{exc.errors()[0]['msg']}"
        )
        return None


def validated_content(raw: Any, seen: Contents) -> genai_types.Content:
    """A request or response content, validated once per trace.

    Raises:
        pydantic.ValidationError: it is not a genai ``Content``.
    """
    key = _value_key(raw)
    content = seen.get(key)
    if content is None:
        content = _plain_content(raw)
        if content is None:
            content = genai_types.Content.model_validate(strip_thought_signatures(raw))
        seen[key] = content
    return content


# --- the common shapes, made as validating them makes them -------------------------------------------------------

_CONTENT_KEYS = frozenset(("parts", "role"))
_PART_KEYS = frozenset(("text", "thought", "function_call", "function_response", *_THOUGHT_SIGNATURE_KEYS))
_CALL_KEYS = frozenset(("id", "args", "name"))
_RESPONSE_KEYS = frozenset(("id", "name", "response"))


def _plain_content(raw: Any) -> genai_types.Content | None:
    """The genai ``Content`` that ``Content.model_validate(strip_thought_signatures(raw))`` gives, made without the
    validator for the shapes ADK records (parts of text, thought flags, function calls and responses, by their
    snake_case names, of exactly the JSON types the fields take; thought signatures dropped): the same fields, the
    same fields set, the JSON objects kept rather than copied. None for any other shape (camelCase keys, other part
    kinds, a value of another type): that one is validated, and fails as it does."""
    if type(raw) is not dict or not raw.keys() <= _CONTENT_KEYS:
        return None
    values: dict[str, Any] = {}
    if "parts" in raw:
        raw_parts = raw["parts"]
        parts: list[genai_types.Part] | None = None
        if raw_parts is not None:
            if type(raw_parts) is not list:
                return None
            parts = []
            for raw_part in raw_parts:
                part = _plain_part(raw_part)
                if part is None:
                    return None
                parts.append(part)
        values["parts"] = parts
    if "role" in raw:
        role = raw["role"]
        if role is not None and type(role) is not str:
            return None
        values["role"] = role
    return genai_types.Content.trusted(**values)


def _plain_part(raw: Any) -> genai_types.Part | None:
    if type(raw) is not dict or not raw.keys() <= _PART_KEYS:
        return None
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if value is None or key in _THOUGHT_SIGNATURE_KEYS:
            continue  # a None keyword stays unset, as Part's validation leaves it; signatures are cleared
        if key == "text":
            if type(value) is not str:
                return None
        elif key == "thought":
            if type(value) is not bool:
                return None
        elif key == "function_call":
            value = _plain_object(genai_types.FunctionCall, value, _CALL_KEYS, "args")
            if value is None:
                return None
        else:
            value = _plain_object(genai_types.FunctionResponse, value, _RESPONSE_KEYS, "response")
            if value is None:
                return None
        values[key] = value
    return genai_types.Part.trusted(**values)


def _plain_object(cls: type[_Call], raw: Any, keys: frozenset[str], mapping: str) -> _Call | None:
    """A ``FunctionCall`` / ``FunctionResponse`` of string ``id`` and ``name`` and a JSON-object ``mapping`` field."""
    if type(raw) is not dict or not raw.keys() <= keys:
        return None
    for key, value in raw.items():
        if value is None:
            continue
        if key == mapping:
            if type(value) is not dict or not all(type(name) is str for name in value):
                return None
        elif type(value) is not str:
            return None
    return cls.trusted(**raw)


def strip_thought_signatures(content: Any) -> Any:
    """A genai ``Content`` JSON value whose parts carry no thought signature (opaque bytes ADK itself clears from the
    parts it traces); a value without any, or not a content, is returned as it is. Only what changes is copied."""
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list) or not any(
        isinstance(part, dict) and any(key in part for key in _THOUGHT_SIGNATURE_KEYS) for part in parts
    ):
        return content
    return {
        **content,
        "parts": [
            {k: v for k, v in part.items() if k not in _THOUGHT_SIGNATURE_KEYS} if isinstance(part, dict) else part
            for part in parts
        ],
    }


# --- config ---------------------------------------------------------------------------------------------------------


_Tools = tuple[tuple[dict[str, Any], ...], tuple[str, ...]]
"""The declarations of the valid genai ``Tool``s (each dumped as ``app_details`` holds it), and one problem line
per entry that is not a genai ``Tool``."""


def genai_tools(raw_tools: list[Any]) -> _Tools:
    """``config.tools`` validated as genai ``Tool`` objects, and dumped as ``app_details`` holds them.

    Validating tool declarations (large schemas, and genai's slow per-model checks) and dumping them again is most of
    the cost of reading a ``call_llm`` span, and an agent sends the same declarations on every call: the result is
    cached by their value. The cached declarations are shared, so they must not be mutated.
    """
    return _validate_tools_once(_ByValue(raw_tools))


class _ByValue:
    """A parsed JSON value as a cache key, compared by :func:`_value_key`."""

    __slots__ = ("key", "value")

    def __init__(self, value: Any) -> None:
        self.value, self.key = value, _value_key(value)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ByValue) and other.key == self.key


@functools.lru_cache(maxsize=_TOOLS_CACHE_SIZE)
def _validate_tools_once(raw_tools: _ByValue) -> _Tools:
    return _validate_tools(raw_tools.value)


def _validate_tools(raw_tools: list[Any]) -> _Tools:
    declarations: list[dict[str, Any]] = []
    problems: list[str] = []
    for position, raw in enumerate(raw_tools):
        try:
            tool = genai_types.Tool.model_validate(raw)
        except pydantic.ValidationError as exc:
            problems.append(f"config.tools[{position}] is not a genai Tool: {exc.errors()[0]['msg']}")
        else:
            declarations.append(tool.model_dump(mode="json", exclude_none=True))
    return tuple(declarations), tuple(problems)


def _instruction_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        parts = value.get("parts") or []
        return "\n".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))
    if isinstance(value, list):
        return "\n".join(v if isinstance(v, str) else _instruction_text(v) or "" for v in value)
    return None
