"""The one internal span form every reader produces and every reconstructor consumes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

AttributeValue = Any
"""A span attribute value: str, bool, int, float, a list of those, or (from flat/JSON sources) a dict."""


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """An event recorded on a span."""

    name: str
    timestamp_ns: int
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    body: Any = None
    """The event's body when it came from a log record (ADOT exports put GenAI content there), else None."""


@dataclass(slots=True)
class Span:
    """A finished span, independent of the format it was read from.

    Ids are lowercase hex (trace 32 digits, span 16 digits). Times are Unix nanoseconds. Attributes are a flat
    mapping of dotted keys; resource attributes are kept apart in ``resource``.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    start_time_ns: int
    end_time_ns: int
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()
    scope_name: str | None = None
    scope_version: str | None = None
    resource: Mapping[str, AttributeValue] = field(default_factory=dict)
    kind: str | None = None
    status_code: str = "UNSET"
    status_message: str | None = None
    parent_is_remote: bool = False

    def attr(self, key: str, default: AttributeValue = None) -> AttributeValue:
        """An attribute by key, or ``default``."""
        return self.attributes.get(key, default)

    def str_attr(self, key: str) -> str | None:
        """A string attribute, or None when absent or not a string."""
        value = self.attributes.get(key)
        return value if isinstance(value, str) else None

    def int_attr(self, key: str) -> int | None:
        """An integer attribute (ints and integral strings), or None."""
        value = self.attributes.get(key)
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                return None
        return None

    def json_attr(self, key: str) -> Any:
        """An attribute holding JSON: parsed when it is a string, returned as-is when already structured.

        Raises:
            ValueError: the attribute is a string that is not valid JSON.
        """
        value = self.attributes.get(key)
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"span {self.span_id} ({self.name!r}): attribute {key!r} is not valid JSON: {exc}"
                ) from exc
        return value

    @property
    def duration_ns(self) -> int:
        """End minus start, never negative."""
        return max(0, self.end_time_ns - self.start_time_ns)
