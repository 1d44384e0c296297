"""The parts of a judge request every non-Gemini provider reads, taken from the google-genai request ADK would hand
its model class (``LlmRequest.config``): the system text, the user's sampling settings and the output schema."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from otel_eval.judge._request_reply import JudgeRequest

if TYPE_CHECKING:
    from google.genai import types as genai_types


def judge_config(request: JudgeRequest) -> genai_types.GenerateContentConfig:
    """The config ADK's evaluator hands its model: the criterion's ``judge_model_config`` (none: an empty one) with
    the judge's system instruction."""
    from google.genai import types as genai_types  # deferred: importing google-genai takes about a second

    config = request.config.model_copy() if request.config else genai_types.GenerateContentConfig()
    if request.system_instruction:
        config.system_instruction = request.system_instruction
    return config


def system_text(config: genai_types.GenerateContentConfig) -> str | None:
    """The system instruction as one text (ADK's ``extract_system_instruction`` / ``serialize_system_instruction``
    for the forms a judge config holds: a string or a content's text parts)."""
    from google.genai import types as genai_types

    instruction = config.system_instruction
    if not instruction:
        return None
    if isinstance(instruction, str):
        return instruction
    if isinstance(instruction, genai_types.Content):
        texts = [part.text for part in instruction.parts or [] if part.text]
        return "\n".join(texts) or None
    if isinstance(instruction, genai_types.Part):
        return instruction.text or None
    return None


def chat_messages(request: JudgeRequest, config: genai_types.GenerateContentConfig) -> list[dict[str, Any]]:
    """The OpenAI-style chat messages ADK's ``OpenAILlm`` and ``LiteLlm`` send for a judge request: the system text
    (if any), then the prompt as the user's message (if any)."""
    messages: list[dict[str, Any]] = []
    system = system_text(config)
    if system:
        messages.append({"role": "system", "content": system})
    if request.prompt:
        messages.append({"role": "user", "content": request.prompt})
    return messages


def schema_name_and_json(schema: dict[str, Any] | type[BaseModel]) -> tuple[str, dict[str, Any]]:
    """A response schema as ADK's model classes read it: (its name, a JSON schema copy)."""
    if isinstance(schema, dict):
        return str(schema.get("title", "response")), copy.deepcopy(schema)
    return schema.__name__, schema.model_json_schema()


def lowercase_types(value: object) -> None:
    """ADK's ``lowercase_schema_types``: JSON Schema ``type`` names lowercased in place, through schema keywords."""
    if isinstance(value, list):
        for item in value:
            lowercase_types(item)
        return
    if not isinstance(value, dict):
        return
    kind = value.get("type")
    if isinstance(kind, str):
        value["type"] = kind.lower()
    elif isinstance(kind, list):
        value["type"] = [k.lower() if isinstance(k, str) else k for k in kind]
    for key in ("properties", "$defs", "definitions"):
        children = value.get(key)
        if isinstance(children, dict):
            for child in children.values():
                lowercase_types(child)
    for key in ("items", "additionalProperties", "not"):
        lowercase_types(value.get(key))
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        lowercase_types(value.get(key))
