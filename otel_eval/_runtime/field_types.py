"""One rule for the types of a settings dataclass's fields: a value of the wrong type is a ``ValueError`` naming the
field, the value and what the field takes, raised before any range check compares it (which would otherwise fail
with a bare ``TypeError`` such as ``'<=' not supported between instances of 'int' and 'str'``).

The expected types are the fields' annotations: ``int`` (not a bool), ``float`` (an int too, not a bool), ``bool``,
``str``, a class, ``X | None``, and a list of names (``tuple[str, ...]``, ``Collection[str]``: one comma-separated
string or strings; any other iterable of strings is read once, here, into a tuple).
"""

from __future__ import annotations

import typing
from collections.abc import Collection, Iterable, Set
from dataclasses import fields
from types import UnionType
from typing import Any

_NAMES = "names (a comma-separated string or strings)"
_KINDS: dict[object, str] = {int: "an integer", float: "a number", bool: "True or False", str: "a string"}


def check_field_types(settings: Any, only: Set[str] | None = None) -> None:
    """Checks every field of the dataclass instance ``settings`` (or the fields named in ``only``) against its
    annotation (see the module).

    Raises:
        ValueError: ``{field} must be {what it takes}, got {value!r}``.
    """
    hints = _HINTS.get(type(settings)) or _HINTS.setdefault(type(settings), typing.get_type_hints(type(settings)))
    for item in fields(settings):
        if only is not None and item.name not in only:
            continue
        hint, given = hints[item.name], getattr(settings, item.name)
        value = given
        if _is_names(hint) and isinstance(value, Iterable) and not isinstance(value, (str, tuple)):
            value = tuple(value)
            object.__setattr__(settings, item.name, value)  # frozen dataclasses too: normalised once, here
        if not _matches(value, hint):
            raise ValueError(f"{item.name} must be {_expected(hint)}, got {given!r}")


_HINTS: dict[type, dict[str, Any]] = {}


def _members(hint: Any) -> tuple[Any, ...]:
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, UnionType) else (hint,)


def _is_names(hint: Any) -> bool:
    return any(typing.get_origin(member) in (tuple, Collection) for member in _members(hint))


def _matches(value: object, hint: Any) -> bool:
    for member in _members(hint):
        if member is type(None):
            matched = value is None
        elif typing.get_origin(member) in (tuple, Collection):
            matched = isinstance(value, str) or (isinstance(value, tuple) and all(isinstance(v, str) for v in value))
        elif member in (int, float):
            matched = isinstance(value, (int, float) if member is float else int) and not isinstance(value, bool)
        else:
            matched = isinstance(value, member)
        if matched:
            return True
    return False


def _expected(hint: Any) -> str:
    parts = []
    for member in _members(hint):
        if member is type(None):
            parts.append("None")
        elif typing.get_origin(member) in (tuple, Collection):
            parts.append(_NAMES)
        else:
            name = getattr(member, "__name__", str(member))
            parts.append(_KINDS.get(member, f"{'an' if name[:1] in 'AEIOU' else 'a'} {name}"))
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} or {parts[-1]}"


__all__ = ["check_field_types"]
