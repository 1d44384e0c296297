"""Live OpenTelemetry SDK spans (``ReadableSpan``) to the internal :class:`Span` form.

Called by the online processor on a background thread, so it copies only what it needs and never raises: a span
that cannot be converted is skipped and logged. Resource attributes are converted once per ``Resource`` object.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from otel_eval.traces.span import Span, SpanEvent

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

logger = logging.getLogger(__name__)


def spans_from_readable(spans: Iterable[ReadableSpan]) -> list[Span]:
    """Converts finished SDK spans; a span without a valid context is skipped (and logged), never raised on.

    Sequence attribute values (tuples in the SDK) become lists, as from the file readers. A span that has not
    ended is taken to end when it starts.
    """
    resources: dict[int, Mapping[str, Any]] = {}
    result: list[Span] = []
    for span in spans:
        try:
            converted = _convert(span, resources)
        except Exception:  # runs inside the agent's process: log and skip, never raise
            logger.warning("skipped a span that could not be converted: %r", getattr(span, "name", span), exc_info=True)
            continue
        if converted is not None:
            result.append(converted)
    return result


def _convert(span: ReadableSpan, resources: dict[int, Mapping[str, Any]]) -> Span | None:
    context = span.context
    if context is None or not context.trace_id or not context.span_id:
        logger.warning("skipped span %r: it has no valid span context", span.name)
        return None
    parent = span.parent
    start = span.start_time or 0
    end = span.end_time or start
    scope = span.instrumentation_scope
    resource_obj = span.resource
    resource = resources.get(id(resource_obj))
    if resource is None:
        resource = _attributes(resource_obj.attributes)
        resources[id(resource_obj)] = resource
    status = span.status
    events = span.events
    # ``int.to_bytes(...).hex()`` and the members' ``_name_``: several times faster than ``format`` and ``.name``.
    return Span(
        trace_id=context.trace_id.to_bytes(16, "big").hex(),
        span_id=context.span_id.to_bytes(8, "big").hex(),
        parent_span_id=parent.span_id.to_bytes(8, "big").hex() if parent is not None and parent.span_id else None,
        name=span.name,
        start_time_ns=start,
        end_time_ns=end,
        attributes=_attributes(span.attributes),
        events=tuple(
            SpanEvent(name=event.name, timestamp_ns=event.timestamp, attributes=_attributes(event.attributes))
            for event in events
        )
        if events
        else (),
        scope_name=scope.name or None if scope is not None else None,
        scope_version=scope.version or None if scope is not None else None,
        resource=resource,
        kind=span.kind._name_,
        status_code=status.status_code._name_,
        status_message=status.description or None,
        parent_is_remote=bool(parent is not None and parent.is_remote),
    )


def _attributes(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    if not attributes:
        return {}
    # The SDK's BoundedAttributes (behind a MappingProxyType) copy their inner dict in C; iterating the Mapping
    # ABC item by item is several times slower.
    copy = getattr(attributes, "copy", None)
    result: dict[str, Any] = copy() if copy is not None else dict(attributes)
    if type(result) is not dict:
        result = dict(result)
    for key, value in result.items():
        if type(value) is tuple:
            result[key] = list(value)
    return result
