"""ADK 2.13's text verdict parsers for valid/invalid judges, reproduced exactly (regexes, case sensitivity).

``parse_critique`` is ``final_response_match_v2._parse_critique``; ``parse_is_valid`` is
``per_turn_user_simulator_quality_v1._parse_llm_response``.
"""

from __future__ import annotations

import enum
import re


class Label(enum.Enum):
    """A parsed valid/invalid verdict."""

    VALID = "valid"
    INVALID = "invalid"
    NOT_FOUND = "label field not found"


_INVALID_VALUES = ("invalid", "almost", "false", "partially_valid", "partially valid", "partially")
_VALID_VALUES = ("valid", "true")

_IS_VALID_FIELD = re.compile(r'"is_the_agent_response_valid":\s*\[*[\n\s]*"*([^"^\]^\s]*)"*[\n\s]*\]*\s*[,\n\}]')
_IS_INVALID_FIELD = re.compile(r'"is_the_agent_response_invalid":\s*\[*[\n\s]*"*([^"^\]^\s]*)"*[\n\s]*\]*\s*[,\n\}]')
_USER_SIM_FIELD = re.compile(r'"is_valid":\s*\[*[\n\s]*"*([^"\]]*)"*[\n\s]*\]*\s*[,\n\}]')

FINAL_RESPONSE_VERDICT_KEYS = ("is_the_agent_response_valid", "is_the_agent_response_invalid")
USER_SIMULATOR_VERDICT_KEYS = ('"is_valid"',)


def parse_critique(response: str) -> Label:
    """The label of a ``final_response_match_v2`` judge answer (case-sensitive, as ADK)."""
    valid_match = _IS_VALID_FIELD.search(response)
    invalid_match = _IS_INVALID_FIELD.search(response)
    if valid_match:
        label = valid_match.group(1).strip().rstrip(",}")
        if label in _INVALID_VALUES:
            return Label.INVALID
        if label in _VALID_VALUES:
            return Label.VALID
        return Label.NOT_FOUND
    if invalid_match:
        label = invalid_match.group(1).strip().rstrip(",}")
        return Label.INVALID if label in ("true", "invalid") else Label.VALID
    return Label.NOT_FOUND


def parse_is_valid(response: str) -> Label:
    """The label of a ``per_turn_user_simulator_quality_v1`` judge answer (lower-cased, as ADK)."""
    match = _USER_SIM_FIELD.search(response)
    if match is None:
        return Label.NOT_FOUND
    label = match.group(1).strip("}").replace(",", "").strip().lower()
    if label in _INVALID_VALUES:
        return Label.INVALID
    if label in _VALID_VALUES:
        return Label.VALID
    return Label.NOT_FOUND


def label_score(label: Label) -> float | None:
    """1.0 for VALID, 0.0 for INVALID, None otherwise."""
    return {Label.VALID: 1.0, Label.INVALID: 0.0}.get(label)
