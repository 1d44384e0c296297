"""Reading span attribute mappings: the first of several keys that is present, and the flattened, indexed attributes
(``prefix.<i>.rest``) OpenInference and OpenLLMetry write."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

MAPPINGS = (dict, Mapping)
"""``isinstance(value, MAPPINGS)``: whether ``value`` is a mapping, answered for a dict (what parsed JSON holds) by
the exact-type check, without the call into the ``Mapping`` ABC's Python-level ``__instancecheck__``."""


def first_str(attributes: Mapping[str, Any], *keys: str) -> str | None:
    """The value of the first key holding a non-empty string, else None."""
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def first_int(attributes: Mapping[str, Any], *keys: str) -> int | None:
    """The value of the first key holding a finite number (not a bool), as an int, else None."""
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and math.isfinite(value):
            return int(value)
    return None


def indexed(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """The entries under ``prefix.<i>.``, in index order, each as ``{rest_of_key: value}``.

    ``indexed({"a.0.x": 1, "a.1.y": 2, "a.1.z": 3}, "a")`` is ``[{"x": 1}, {"y": 2, "z": 3}]``. Keys whose index is
    not a number are ignored; gaps in the numbering are closed up.
    """
    head = prefix + "."
    entries: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(head):
            continue
        index_text, _, rest = key[len(head) :].partition(".")
        if not index_text.isdigit():
            continue
        entries.setdefault(int(index_text), {})[rest] = value
    return [entries[i] for i in sorted(entries)]


def has_indexed(attributes: Mapping[str, Any], prefix: str) -> bool:
    """Whether any ``prefix.<i>.`` key is present."""
    head = prefix + "."
    return any(key.startswith(head) and key[len(head) : len(head) + 1].isdigit() for key in attributes)


def string_list(entry: Mapping[str, Any], prefix: str) -> list[str]:
    """String values under ``prefix`` itself and ``prefix.<i>`` (a content written as one string or as a list)."""
    values: list[str] = []
    whole = entry.get(prefix)
    if isinstance(whole, str):
        values.append(whole)
    elif isinstance(whole, list):
        values.extend(v for v in whole if isinstance(v, str))
    head = prefix + "."
    numbered = sorted(
        (int(key[len(head) :]), value)
        for key, value in entry.items()
        if key.startswith(head) and key[len(head) :].isdigit() and isinstance(value, str)
    )
    values.extend(value for _, value in numbered)
    return values
