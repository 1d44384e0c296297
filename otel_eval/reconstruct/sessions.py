"""Which attributes name an invocation's session, in which order: the one rule the processor's sampler and every
convention's reader follow, so a session is sampled by the same id its turns are grouped by.

A span may carry more than one of them (ADK writes its own and ``gen_ai.conversation.id``; an application may add
OpenInference's ``session.id`` or OpenLLMetry's association properties to spans that carry another): over the spans
in the order given, the first that names any wins, and on it the first of :data:`SESSION_ID_KEYS`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, Protocol

from otel_eval import semconv

SESSION_ID_KEYS: Final = (
    semconv.GEN_AI_CONVERSATION_ID,
    semconv.ADK_SESSION_ID,
    semconv.SESSION_ID,
    semconv.TRACELOOP_ASSOCIATION_SESSION_ID,
)
"""The attributes that name an invocation's session, most preferred first (a non-empty string only)."""
_SESSION_ID_KEY_SET = frozenset(SESSION_ID_KEYS)


class Attributed(Protocol):
    """A span as the rule reads it: the SDK's ``ReadableSpan`` or a span read from a file."""

    @property
    def attributes(self) -> Mapping[str, object] | None:
        """The span's attributes."""


def session_id_of(spans: Iterable[Attributed]) -> str | None:
    """The session id ``spans`` name (see the module docstring), or None."""
    for span in spans:
        attributes = span.attributes
        # An SDK span's attributes answer a missing key by an exception: the few it has are iterated instead.
        if attributes and not _SESSION_ID_KEY_SET.isdisjoint(attributes):
            for key in SESSION_ID_KEYS:
                value = attributes.get(key)
                if value and isinstance(value, str):
                    return value
    return None
