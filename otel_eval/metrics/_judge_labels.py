"""ADK 2.13's text verdict parsers for valid/invalid judges, reproduced exactly (patterns, case sensitivity).

``parse_critique`` is ``final_response_match_v2._parse_critique``; ``parse_is_valid`` is
``per_turn_user_simulator_quality_v1._parse_llm_response``. ADK matches the verdict field with regexes whose
whitespace stars overlap, which backtrack in O(n^4) on a reply with a key, many spaces and no closing character; here
the same patterns are answered by :class:`~otel_eval.metrics._star_chain.StarChain`, in linear time, with the same
result on every reply (a property test checks it against ADK's functions).
"""

from __future__ import annotations

import enum

from otel_eval.metrics._star_chain import StarChain


class Label(enum.Enum):
    """A parsed valid/invalid verdict."""

    VALID = "valid"
    INVALID = "invalid"
    NOT_FOUND = "label field not found"


_INVALID_VALUES = ("invalid", "almost", "false", "partially_valid", "partially valid", "partially")
_VALID_VALUES = ("valid", "true")


def _verdict_field(key: str, value: str) -> StarChain:
    """``"key":\\s*\\[*[\\n\\s]*"*(value*)"*[\\n\\s]*\\]*\\s*[,\\n\\}]``, ADK's verdict-field pattern."""
    return StarChain(
        key=f'"{key}":',
        stars=(r"\s", r"\[", r"[\n\s]", '"', value, '"', r"[\n\s]", r"\]", r"\s"),
        end=r"[,\n\}]",
        group=4,
    )


_IS_VALID_FIELD = _verdict_field("is_the_agent_response_valid", r'[^"^\]^\s]')
_IS_INVALID_FIELD = _verdict_field("is_the_agent_response_invalid", r'[^"^\]^\s]')
_USER_SIM_FIELD = _verdict_field("is_valid", r'[^"\]]')

FINAL_RESPONSE_VERDICT_KEYS = ("is_the_agent_response_valid", "is_the_agent_response_invalid")
USER_SIMULATOR_VERDICT_KEYS = ('"is_valid"',)


def parse_critique(response: str) -> Label:
    """The label of a ``final_response_match_v2`` judge answer (case-sensitive, as ADK)."""
    valid_match = _IS_VALID_FIELD.search(response)
    if valid_match is not None:
        label = valid_match.strip().rstrip(",}")
        if label in _INVALID_VALUES:
            return Label.INVALID
        if label in _VALID_VALUES:
            return Label.VALID
        return Label.NOT_FOUND
    invalid_match = _IS_INVALID_FIELD.search(response)
    if invalid_match is not None:
        label = invalid_match.strip().rstrip(",}")
        return Label.INVALID if label in ("true", "invalid") else Label.VALID
    return Label.NOT_FOUND


def parse_is_valid(response: str) -> Label:
    """The label of a ``per_turn_user_simulator_quality_v1`` judge answer (lower-cased, as ADK)."""
    match = _USER_SIM_FIELD.search(response)
    if match is None:
        return Label.NOT_FOUND
    label = match.strip("}").replace(",", "").strip().lower()
    if label in _INVALID_VALUES:
        return Label.INVALID
    if label in _VALID_VALUES:
        return Label.VALID
    return Label.NOT_FOUND


def label_score(label: Label) -> float | None:
    """1.0 for VALID, 0.0 for INVALID, None otherwise."""
    return {Label.VALID: 1.0, Label.INVALID: 0.0}.get(label)
