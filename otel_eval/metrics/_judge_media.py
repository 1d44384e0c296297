"""File and inline data from spans never reach a judge: each such part is replaced by a text placeholder.

Spans are untrusted. A ``file_data`` part names a URI (``gs://bucket/object``, ``https://...``) that a judge service
reads with the operator's credentials when the part is sent as a part: Vertex AI's ``evaluateInstances`` takes the
conversation's contents as they are, so a span could make it read any object the worker's service account can. Inline
bytes are the agent's media, not text a judge is asked to read. So before any judge request, a content's
``file_data`` and ``inline_data`` parts become text parts (``[file_data omitted: image/png]``), and a function
response's media parts become a short ``text/plain`` blob saying the same; the URI, the bytes and the display name are
dropped. Contents without such parts are returned unchanged (the same objects), so text-only requests stay exactly
ADK's.
"""

from __future__ import annotations

import re
from typing import Any

from otel_eval.model import genai as genai_types

_MIME_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+\-/]{0,99}")


def placeholder(kind: str, mime_type: str | None) -> str:
    """The text standing for a media part: its kind and (when it reads as one) its MIME type, nothing else."""
    shown = mime_type if isinstance(mime_type, str) and _MIME_TYPE.fullmatch(mime_type) else "unknown type"
    return f"[{kind} omitted: {shown}]"


def judge_safe_part(part: genai_types.Part) -> genai_types.Part:
    """``part``, or a text part with the placeholder when it holds file or inline data (a function response's media
    parts are replaced inside it)."""
    if part.file_data is not None:
        return genai_types.Part(text=placeholder("file_data", part.file_data.mime_type))
    if part.inline_data is not None:
        return genai_types.Part(text=placeholder("inline_data", part.inline_data.mime_type))
    if part.function_response is not None:
        response = judge_safe_function_response(part.function_response)
        if response is not part.function_response:
            return part.model_copy(update={"function_response": response})
    return part


def judge_safe_content(content: genai_types.Content | None) -> genai_types.Content | None:
    """``content`` with :func:`judge_safe_part` applied to each part (the same object when nothing changes)."""
    if content is None or not content.parts:
        return content
    parts = [judge_safe_part(part) for part in content.parts]
    if all(new is old for new, old in zip(parts, content.parts, strict=True)):
        return content
    return content.model_copy(update={"parts": parts})


def judge_safe_function_response(response: genai_types.FunctionResponse) -> genai_types.FunctionResponse:
    """``response`` with each media part (``FunctionResponsePart`` holding file or inline data) replaced by a
    ``text/plain`` blob carrying the placeholder (the same object when it has none)."""
    parts = response.parts
    if not parts or not any(_media_kind(part) for part in parts):
        return response
    replaced: list[Any] = []
    for part in parts:
        kind = _media_kind(part)
        if kind is None:
            replaced.append(part)
            continue
        media = getattr(part, kind)
        text = placeholder(kind, getattr(media, "mime_type", None))
        replaced.append({"inline_data": {"mime_type": "text/plain", "data": text.encode()}})
    validated = genai_types.FunctionResponse(parts=replaced).parts
    return response.model_copy(update={"parts": validated})


def _media_kind(part: Any) -> str | None:
    if getattr(part, "file_data", None) is not None:
        return "file_data"
    if getattr(part, "inline_data", None) is not None:
        return "inline_data"
    return None
