"""Reading a setting's value: a number, a flag or a list of names from an environment variable, and how an error
shows the setting and its value (``--flag value`` or ``NAME='value'``). A bad value fails naming the variable and
the problem; it is never replaced by a default. (Also importable from :mod:`otel_eval.environment_variables`.)"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from otel_eval.errors import ConfigurationError

NumberT = TypeVar("NumberT", int, float)


def shown_setting(setting: str, value: object) -> str:
    """A setting and its value as an error names them, the way the user wrote them: ``--flag value`` for a
    command-line flag, ``NAME='value'`` for a variable."""
    if setting.startswith("-"):
        return f"{setting} {shlex.quote(str(value))}"
    return f"{setting}={value!r}"


def number_setting(
    environ: Mapping[str, str], name: str, default: NumberT, *, valid: Callable[[NumberT], bool], expected: str
) -> NumberT:
    """The number in variable ``name`` (of the type of ``default``), or ``default`` when it is unset or blank.

    Raises:
        ConfigurationError: the value is not such a number, or ``valid`` rejects it; the message names the variable,
            the value and ``expected`` (e.g. ``"an integer >= 1"``).
    """
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    kind: Callable[[str], NumberT] = type(default)
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigurationError(f"{shown_setting(name, raw)}: expected {expected}") from None
    if not valid(value):
        raise ConfigurationError(f"{shown_setting(name, raw)}: expected {expected}")
    return value


_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def flag_setting(environ: Mapping[str, str], name: str, default: bool) -> bool:
    """The boolean in variable ``name`` (``true``/``false``, ``1``/``0``, ``yes``/``no``, ``on``/``off``), or
    ``default`` when it is unset or blank.

    Raises:
        ConfigurationError: any other value; the message names the variable and the value.
    """
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise ConfigurationError(f"{shown_setting(name, raw)}: expected true or false")


def names_setting(names: str | Iterable[str]) -> tuple[str, ...]:
    """A list setting as a tuple without blanks or repeats: from names, or from one comma-separated string (as its
    variable is written)."""
    listed = names.split(",") if isinstance(names, str) else names
    return tuple(dict.fromkeys(name.strip() for name in listed if name.strip()))
