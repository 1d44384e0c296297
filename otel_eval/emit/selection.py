"""Which OpenTelemetry signals the scores are emitted as (``OTEL_EVAL_EMIT``, ``ProcessorSettings.emit``, the worker's
``--emit``): any of ``events``, ``spans``, ``metrics`` and ``attributes``, all four by default.

A signal that is not selected is not computed at all: no evaluation span is started, no event or metric attribute
dict is built, no root span is held for its scores. The score sinks (``OTEL_EVAL_SINKS``) and the worker's results
topic do not depend on the selection.
"""

from __future__ import annotations

from collections.abc import Collection

from otel_eval import environment_variables as env
from otel_eval.errors import ConfigurationError


def emit_signals(value: str | Collection[str]) -> frozenset[str]:
    """The selected signals of ``value``: a comma-separated string (``"events,metrics"``) or a collection of names.
    ``none`` (alone) or an empty collection selects none; an empty string selects all four (the default, as when the
    variable is unset). Case and surrounding spaces are ignored; a name listed twice counts once.

    Raises:
        ValueError: a name that is not one of the four (or ``none`` beside another name); the message names it and
            what is expected, so callers prefix the setting (:func:`emit_setting`).
    """
    names = value.split(",") if isinstance(value, str) else list(value)
    if not all(isinstance(name, str) for name in names):
        raise ValueError(f"expected signal names, got {value!r}")
    wanted = {name.strip().lower() for name in names} - {""}
    if not wanted:  # an unset variable selects the default; an empty collection (a selection of none) stays so
        return env.DEFAULT_EMIT if isinstance(value, str) else frozenset()
    if wanted == {env.EMIT_NONE}:
        return frozenset()
    unknown = sorted(wanted - set(env.EMIT_SIGNALS))
    if unknown:
        raise ValueError(
            f"unknown signal{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: expected any of "
            f"{', '.join(env.EMIT_SIGNALS)} (comma-separated), or {env.EMIT_NONE}"
        )
    return frozenset(wanted)


def emit_setting(value: str | Collection[str], *, setting: str) -> frozenset[str]:
    """:func:`emit_signals` of the configuration ``setting`` (a variable or flag name, e.g. ``OTEL_EVAL_EMIT``).

    Raises:
        ConfigurationError: an unknown signal; the message names ``setting``, the value and what is expected.
    """
    try:
        return emit_signals(value)
    except ValueError as error:
        shown = value if isinstance(value, str) else ",".join(map(str, value))
        raise ConfigurationError(f"{env.shown_setting(setting, shown)}: {error}") from None


def emit_text(signals: Collection[str]) -> str:
    """``signals`` as ``OTEL_EVAL_EMIT`` spells them, in the documented order (``none`` for none)."""
    return ",".join(name for name in env.EMIT_SIGNALS if name in signals) or env.EMIT_NONE
