"""Contexts for emission: the evaluated invocation's span rebuilt from its stored ids."""

from __future__ import annotations

import functools

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
"""The flags of every invocation's span context (immutable: one for all)."""


def invocation_span_context(trace_id: str, span_id: str) -> SpanContext | None:
    """A sampled remote :class:`SpanContext` for hex ids, or None when they do not parse or are zero."""
    try:
        span_context = SpanContext(
            trace_id=int(trace_id, 16),
            span_id=int(span_id, 16),
            is_remote=True,
            trace_flags=_SAMPLED,
        )
    except (TypeError, ValueError):
        return None
    return span_context if span_context.is_valid else None


def invocation_context(trace_id: str, span_id: str, base: Context | None = None) -> Context | None:
    """``base`` (default: empty) with the invocation span as current span; None when the ids are unusable."""
    if base is None:
        found = invocation(trace_id, span_id)
        return found[0] if found is not None else None
    span_context = invocation_span_context(trace_id, span_id)
    if span_context is None:
        return None
    return trace.set_span_in_context(NonRecordingSpan(span_context), base if base is not None else Context())


@functools.lru_cache(maxsize=64)
def invocation(trace_id: str, span_id: str) -> tuple[Context, SpanContext] | None:
    """:func:`invocation_context` (from an empty context) and its span's :class:`SpanContext`; None when the ids are
    unusable. Each record's span, event and metric points need the same context (every metric's records of a
    request, too): built once. Contexts are never changed in place, so one can be shared."""
    span_context = invocation_span_context(trace_id, span_id)
    if span_context is None:
        return None
    return trace.set_span_in_context(NonRecordingSpan(span_context), Context()), span_context
