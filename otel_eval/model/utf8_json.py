"""JSON of a model, and text, that UTF-8 can always encode.

A Python string may hold a lone surrogate (``"\\ud800"``): ``json.loads`` gives one for a ``\\udXXX`` escape in a
trace file, a JSON-valued attribute or a request, and an agent's text decoded with ``surrogateescape`` (file names,
subprocess output) carries them in its span attributes. UTF-8 has no encoding for it, so pydantic cannot write it:
:func:`json_bytes` then writes each such character as U+FFFD, the rest as pydantic writes it; :func:`utf8_text` gives
a text (a judge prompt, a telemetry attribute) with U+FFFD in their place, :func:`utf8_value` a JSON-like value (a
request body).
"""

from __future__ import annotations

import re
from typing import Any

import pydantic_core
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_text(text: str) -> str:
    """``text``, each lone surrogate in it replaced by U+FFFD (the same object when it has none)."""
    return text if _SURROGATE.search(text) is None else _without_surrogates(text)


def utf8_value(value: Any) -> Any:
    """``value`` (a JSON-like structure: dicts, lists, strings, numbers) with each lone surrogate in its strings and
    keys replaced by U+FFFD; ``value`` itself when it has none."""
    try:
        pydantic_core.to_json(value)
    except PydanticSerializationError:
        return _without_surrogates(value)
    return value


def json_bytes(model: BaseModel, *, indent: int | None = None, exclude_none: bool = False) -> bytes:
    """``model.model_dump_json(indent=..., exclude_none=...).encode()``, a lone surrogate written as U+FFFD."""
    try:
        return model.__pydantic_serializer__.to_json(model, indent=indent, exclude_none=exclude_none)
    except PydanticSerializationError:
        plain = model.model_dump(mode="json", exclude_none=exclude_none)
        return pydantic_core.to_json(_without_surrogates(plain), indent=indent)


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    return value
