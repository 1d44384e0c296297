"""What a GenAI model call was set up with -> ADK's agent details: system instructions as text, tool definitions as
Google GenAI ``Tool`` objects.

Shared by the conventions that record them on model-call spans (ADK v2, GenAI semantic conventions). Instructions may be
a parts list (``gen_ai.system_instructions``), a string or system messages (read by :mod:`otel_eval.reconstruct._genai_messages`); tool
definitions come in the GenAI or the OpenAI shape.

Public API (pure, none raises on malformed input; problems are appended to ``warnings`` when given):

* :func:`system_instruction_text` — ``gen_ai.system_instructions`` (parts list, string or messages) -> text.
* :func:`tools_from_definitions` — ``gen_ai.tool.definitions`` -> genai ``Tool`` list (one function declaration each).
* :func:`declarations_from_definitions` — the same as function-declaration dicts (ADK's ``AgentDetails``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import pydantic

from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._flattened import MAPPINGS
from otel_eval.reconstruct._genai_messages import content_from_message
from otel_eval.reconstruct._values import parse_json_value, preview, record_warning

_TOOLS_CACHE_SIZE = 64
_DECLARATIONS_CACHE_SIZE = 64


def system_instruction_text(value: Any, warnings: list[str] | None = None, where: str = "system instructions") -> str:
    """System instructions as text: a parts list (``gen_ai.system_instructions``), a string, or system messages.

    Text parts are joined with a newline. Returns ``""`` when there is none.
    """
    parsed = parse_json_value(value)
    if parsed is None:
        return ""
    if isinstance(parsed, str):
        return parsed
    items = parsed if isinstance(parsed, list) else [parsed]
    texts: list[str] = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, MAPPINGS) and ("parts" in item or "role" in item):
            content = content_from_message(item, warnings, f"{where}[{index}]")
            if content is not None:
                texts.extend(p.text for p in content.parts or [] if p.text and not p.thought)
        elif isinstance(item, MAPPINGS):
            text = item.get("content", item.get("text"))
            if isinstance(text, str):
                texts.append(text)
            else:
                record_warning(warnings, f"{where}[{index}]: instruction part has no text: {preview(item)}")
        else:
            record_warning(warnings, f"{where}[{index}]: unexpected instruction {preview(item)}")
    return "\n".join(texts)


def tools_from_definitions(
    value: Any, warnings: list[str] | None = None, where: str = "tool definitions"
) -> list[genai_types.Tool]:
    """``gen_ai.tool.definitions`` (GenAI or OpenAI shape, list or JSON string) as genai ``Tool`` objects.

    Function definitions become one ``Tool`` with one ``FunctionDeclaration`` each; their ``parameters`` are kept as
    a genai ``Schema`` when they are written as one (upper-case types, as ADK dumps ``Schema`` objects), else as
    ``parameters_json_schema``. Built-in tools (``{"type": "google_search", "name": "google_search"}``) become the
    matching ``Tool`` field when genai knows it; others are skipped with a warning.

    Definitions recorded as JSON text (ADK v2 writes them on every model call, the same each time) are converted once
    and cached; the cached ``Tool`` objects are shared, so callers must not mutate them.
    """
    if isinstance(value, str):
        tools, problems = _tools_from_definitions_text(value)
        for problem in problems:
            record_warning(warnings, where + problem)
        return list(tools)
    return _tools_from_definitions(value, warnings, where)


@functools.lru_cache(maxsize=_TOOLS_CACHE_SIZE)
def _tools_from_definitions_text(text: str) -> tuple[tuple[genai_types.Tool, ...], tuple[str, ...]]:
    """Tools of a JSON text, and the problems met, each written relative to the caller's ``where``."""
    problems: list[str] = []
    tools = _tools_from_definitions(text, problems, "")
    return tuple(tools), tuple(problems)


def _tools_from_definitions(value: Any, warnings: list[str] | None, where: str) -> list[genai_types.Tool]:
    parsed = parse_json_value(value)
    if parsed is None:
        return []
    if not isinstance(parsed, list):
        record_warning(warnings, f"{where}: expected a list of tool definitions, got {preview(value)}")
        return []
    tools: list[genai_types.Tool] = []
    for index, definition in enumerate(parsed):
        tool = _tool_from_definition(definition, warnings, f"{where}[{index}]")
        if tool is not None:
            tools.append(tool)
    return tools


def _tool_from_definition(definition: Any, warnings: list[str] | None, where: str) -> genai_types.Tool | None:
    if not isinstance(definition, MAPPINGS):
        record_warning(warnings, f"{where}: tool definition is not an object: {preview(definition)}")
        return None
    function = definition.get("function")
    source: Mapping[str, Any] = function if isinstance(function, MAPPINGS) else definition
    kind = definition.get("type", "function")
    name = source.get("name")
    if kind == "function" or isinstance(function, MAPPINGS):
        if not isinstance(name, str) or not name:
            record_warning(warnings, f"{where}: function definition without a name")
            return None
        description = source.get("description")
        declaration = genai_types.FunctionDeclaration(
            name=name, description=description if isinstance(description, str) else None
        )
        parameters = parse_json_value(source.get("parameters"))
        if isinstance(parameters, MAPPINGS):
            declaration = _with_parameters(declaration, parameters)
        return genai_types.Tool(function_declarations=[declaration])
    if isinstance(kind, str) and kind in genai_types.Tool.model_fields:
        try:
            return genai_types.Tool.model_validate({kind: {}})
        except pydantic.ValidationError:
            pass
    record_warning(warnings, f"{where}: tool type {kind!r} has no genai equivalent; skipped")
    return None


def _with_parameters(
    declaration: genai_types.FunctionDeclaration, parameters: Mapping[str, Any]
) -> genai_types.FunctionDeclaration:
    if _is_genai_schema(parameters):
        try:
            return declaration.model_copy(update={"parameters": genai_types.Schema.model_validate(parameters)})
        except pydantic.ValidationError:
            pass
    return declaration.model_copy(update={"parameters_json_schema": dict(parameters)})


def declarations_from_definitions(
    value: Any, warnings: list[str] | None = None, where: str = "tool definitions"
) -> list[dict[str, Any]]:
    """``gen_ai.tool.definitions`` as function-declaration dicts, each dumped as JSON without None fields (shared
    between the calls that declared the same JSON text: not to be mutated)."""
    if isinstance(value, str):
        declarations, problems = _declarations_of_text(value)
        for problem in problems:
            record_warning(warnings, where + problem)
        return list(declarations)
    return _declarations(tools_from_definitions(value, warnings, where))


def _declarations(tools: Sequence[genai_types.Tool]) -> list[dict[str, Any]]:
    return [
        declaration.model_dump(mode="json", exclude_none=True)
        for tool in tools
        for declaration in tool.function_declarations or []
    ]


@functools.lru_cache(maxsize=_DECLARATIONS_CACHE_SIZE)
def _declarations_of_text(text: str) -> tuple[tuple[dict[str, Any], ...], tuple[str, ...]]:
    """The declarations of a JSON text of definitions, dumped once (an agent declares the same tools on every call),
    and the problems met, each written relative to the caller's ``where``."""
    problems: list[str] = []
    return tuple(_declarations(tools_from_definitions(text, problems, ""))), tuple(problems)


def _is_genai_schema(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return isinstance(kind, str) and kind.isupper()


__all__ = ["declarations_from_definitions", "system_instruction_text", "tools_from_definitions"]
