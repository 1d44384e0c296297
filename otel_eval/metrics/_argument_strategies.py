"""How ``tool_parameter_match`` compares one expected argument value with the actual one.

Every strategy returns True (the argument matches, 1.0) or False (0.0):

- ``exact``: Python equality, as ADK compares tool args (``1 == 1.0``; dict key order irrelevant; list order matters).
- ``casefold_exact``: equality after ``str.casefold()`` of every string, also inside lists and dicts
  (``"Paris" == "PARIS"``).
- ``numeric``: numbers (and strings that parse as finite numbers, e.g. ``"2.5"``) match when
  ``|actual - expected| <= numeric_tolerance``; the difference is computed in decimal on the values' shortest
  representation, so a difference exactly at the tolerance passes (``0.9`` vs ``0.7`` with tolerance ``0.2``).
  Lists of equal length and dicts with the same keys compare element by element; anything else (text, booleans,
  None) falls back to ``exact``.
- ``contains``: for strings, the expected value is a substring of the actual one (case-sensitive). For lists, every
  expected element equals some element of the actual list (an expected scalar may also be one element of an actual
  list). For dicts, every expected key is present in the actual dict with a value that ``contains`` the expected one.
  Anything else falls back to ``exact``.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from otel_eval.model.criteria import ArgumentStrategy

Matcher = Callable[[Any, Any], bool]
"""``matches(expected, actual)``."""


def matcher(strategy: ArgumentStrategy, numeric_tolerance: float) -> Matcher:
    """The comparison function of ``strategy``."""
    if strategy == "exact":
        return _exact
    if strategy == "casefold_exact":
        return _casefold_exact
    if strategy == "numeric":
        tolerance = _to_decimal(numeric_tolerance)
        if tolerance is None:
            raise ValueError(f"numeric_tolerance must be a finite number, got {numeric_tolerance!r}")
        return lambda expected, actual: _numeric(expected, actual, tolerance)
    if strategy == "contains":
        return _contains
    raise ValueError(f"unknown argument strategy {strategy!r}")


def _exact(expected: Any, actual: Any) -> bool:
    return bool(expected == actual)


def _casefolded(value: Any) -> Any:
    if isinstance(value, str):
        return value.casefold()
    if isinstance(value, list | tuple):
        return [_casefolded(item) for item in value]
    if isinstance(value, dict):
        return {key: _casefolded(item) for key, item in value.items()}
    return value


def _casefold_exact(expected: Any, actual: Any) -> bool:
    return bool(_casefolded(expected) == _casefolded(actual))


def _to_decimal(value: Any) -> Decimal | None:
    """The number ``value`` stands for, or None (booleans are not numbers here)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value)) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except (decimal.InvalidOperation, ValueError):
            return None
        return number if number.is_finite() else None
    return None


def _numeric(expected: Any, actual: Any, tolerance: Decimal) -> bool:
    if isinstance(expected, list | tuple) and isinstance(actual, list | tuple):
        return len(expected) == len(actual) and all(
            _numeric(e, a, tolerance) for e, a in zip(expected, actual, strict=True)
        )
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(_numeric(expected[k], actual[k], tolerance) for k in expected)
    expected_number, actual_number = _to_decimal(expected), _to_decimal(actual)
    if expected_number is None or actual_number is None:
        return _exact(expected, actual)
    return abs(actual_number - expected_number) <= tolerance


def _contains(expected: Any, actual: Any) -> bool:
    if isinstance(expected, str) and isinstance(actual, str):
        return expected in actual
    if isinstance(actual, list | tuple):
        if isinstance(expected, list | tuple):
            return all(any(_exact(e, a) for a in actual) for e in expected)
        return any(_exact(expected, a) for a in actual)
    if isinstance(expected, dict) and isinstance(actual, dict):
        return all(key in actual and _contains(value, actual[key]) for key, value in expected.items())
    return _exact(expected, actual)
