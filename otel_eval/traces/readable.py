"""Live OpenTelemetry SDK spans (``ReadableSpan``) to the internal :class:`Span` form.

Called by the online processor on a background thread, so it copies only what it needs and never raises: a span
that cannot be converted is skipped and logged. Resource attributes and instrumentation scopes are converted once per
object (and kept between calls: every batch names the provider's again).

The SDK's own span classes are read through the fields behind their properties (``_attributes``, ``_events``, ...):
each property is a Python call (``attributes`` wraps the dict in a ``MappingProxyType``, ``events`` copies the list
under a lock), and a span has eleven of them. A class that overrides any of those properties is read through the
properties, as any other ``ReadableSpan``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from otel_eval._runtime.identity_cache import IdentityCache
from otel_eval.traces.span import Span, SpanEvent

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

logger = logging.getLogger(__name__)

_PROPERTIES = (
    "name",
    "context",
    "parent",
    "start_time",
    "end_time",
    "attributes",
    "events",
    "instrumentation_scope",
    "resource",
    "status",
    "kind",
)
"""The ``ReadableSpan`` properties read here: a class overriding none of them returns the fields behind them."""
_READS_FIELDS: dict[type, bool] = {}
"""Per span class, whether its fields can be read directly (see the module docstring)."""

_Scope = tuple[str | None, str | None]
_SPAN_FIELDS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "start_time_ns",
    "end_time_ns",
    "attributes",
    "events",
    "scope_name",
    "scope_version",
    "resource",
    "kind",
    "status_code",
    "status_message",
    "parent_is_remote",
)
"""The fields of :class:`Span` in the order :func:`_convert_fields` gives them."""
if tuple(field.name for field in dataclasses.fields(Span)) != _SPAN_FIELDS:  # pragma: no cover - a change to Span
    raise ImportError("otel_eval.traces.readable: Span's fields changed; update _convert_fields")


def spans_from_readable(spans: Iterable[ReadableSpan]) -> list[Span]:
    """Converts finished SDK spans; a span without a valid context is skipped (and logged), never raised on.

    Sequence attribute values (tuples in the SDK) become lists, as from the file readers. A span that has not
    ended is taken to end when it starts. A :class:`ConvertedSpan` gives the form it holds.
    """
    result: list[Span] = []
    last_class: type | None = None
    convert: Any = _convert
    for span in spans:
        try:
            if type(span) is not last_class:  # a batch is mostly of one class: looked up when it changes
                last_class = type(span)
                convert = (
                    _CARRIED
                    if issubclass(last_class, ConvertedSpan)
                    else _convert_fields
                    if reads_fields(last_class)
                    else _convert
                )
            converted = convert(span)
        except Exception:  # runs inside the agent's process: log and skip, never raise
            logger.warning("skipped a span that could not be converted: %r", getattr(span, "name", span), exc_info=True)
            continue
        if converted is not None:
            result.append(converted)
    return result


_CARRIED = attrgetter("span")
"""A :class:`ConvertedSpan`'s form (read in C)."""
_RESOURCES: IdentityCache[Mapping[str, Any]] = IdentityCache(64)
_SCOPES: IdentityCache[_Scope] = IdentityCache(64)
"""Resources and scopes converted, kept between calls: a process has a few, its providers', and every batch of spans
names them again."""


def _resource_of(resource: Any) -> Mapping[str, Any]:
    kept = _RESOURCES.get(resource)
    return kept if kept is not None else _RESOURCES.put(resource, _attributes(resource.attributes))


def _scope_of(scope: Any) -> _Scope:
    kept = _SCOPES.get(scope)
    return kept if kept is not None else _SCOPES.put(scope, _scope(scope))


def reads_fields(cls: type) -> bool:
    """Whether spans of ``cls`` can be read through the fields behind their properties: an SDK ``ReadableSpan``
    (sub)class that overrides none of the properties read (each property is a Python call, ``attributes`` wraps the
    dict in a proxy and ``events`` copies the list under a lock). Worked out once per class."""
    reads = _READS_FIELDS.get(cls)
    if reads is None:
        reads = _READS_FIELDS[cls] = _reads_fields(cls)
    return reads


def _reads_fields(cls: type) -> bool:
    try:
        from opentelemetry.attributes import BoundedAttributes
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.sdk.util import BoundedList
        from opentelemetry.trace import SpanContext, Status
    except ImportError:  # pragma: no cover - the SDK is what makes ReadableSpans
        return False
    _SDK_TYPES.update(attributes=BoundedAttributes, events=BoundedList, context=SpanContext, status=Status)
    return issubclass(cls, ReadableSpan) and all(
        getattr(cls, name) is getattr(ReadableSpan, name) for name in _PROPERTIES
    )


_SDK_TYPES: dict[str, Any] = {}
"""The SDK's and API's classes of a span's fields (set with the first span class read through its fields): a field of
another class is read through its properties."""


def _convert_fields(span: Any) -> Span | None:
    """:func:`_convert` of a span of the SDK's classes, read through the fields behind its properties (and behind
    those of its ``SpanContext``, a tuple, its ``Status``, attributes and events when they are the SDK's classes)."""
    context = span._context
    parent = span._parent
    status = span._status
    types = _SDK_TYPES
    if (
        type(context) is not types["context"]
        or (parent is not None and type(parent) is not types["context"])
        or type(status) is not types["status"]
    ):
        return _convert(span)
    trace_id, span_id = context[0], context[1]  # SpanContext's trace_id, span_id, is_remote are its first items
    # The spans of a batch name the same resource and scope: most find theirs as the caches' last entry, uncalled.
    last_resource, last_scope = _RESOURCES.last, _SCOPES.last
    resource = (
        last_resource[1]
        if last_resource is not None and last_resource[0] is span._resource
        else _resource_of(span._resource)
    )
    scope = (
        last_scope[1]
        if last_scope is not None and last_scope[0] is span._instrumentation_scope
        else _scope_of(span._instrumentation_scope)
    )
    attributes = span._attributes
    if type(attributes) is types["attributes"]:
        attributes = attributes._dict
    events = span._events
    if type(events) is types["events"]:
        events = events._dq
    return span_from_fields(
        trace_id,
        span_id,
        parent[1] if parent is not None else 0,
        bool(parent is not None and parent[2]),
        span._name,
        span._start_time,
        span._end_time,
        _attributes(attributes),
        _events(events) if events else (),
        scope,
        resource,
        span._kind._name_,
        status._status_code._name_,
        status._description,
    )


def _convert(span: ReadableSpan) -> Span | None:
    context = span.context
    if context is None:
        logger.warning("skipped span %r: it has no valid span context", span.name)
        return None
    parent = span.parent
    status = span.status
    events = span.events
    return span_from_fields(
        context.trace_id,
        context.span_id,
        parent.span_id if parent is not None else 0,
        bool(parent is not None and parent.is_remote),
        span.name,
        span.start_time,
        span.end_time,
        _attributes(span.attributes),
        _events(events) if events else (),
        _scope_of(span.instrumentation_scope),
        _resource_of(span.resource),
        span.kind._name_,
        status.status_code._name_,
        status.description,
    )


def span_from_fields(
    trace_id: int,
    span_id: int,
    parent_id: int,
    parent_is_remote: bool,
    name: str,
    start_time: int | None,
    end_time: int | None,
    attributes: dict[str, Any],
    events: tuple[SpanEvent, ...],
    scope: tuple[str | None, str | None],
    resource: Mapping[str, Any],
    kind: str,
    status_code: str,
    status_message: str | None,
) -> Span | None:
    """The internal :class:`Span` of a finished span's fields as a ``ReadableSpan`` holds them (ids as integers, 0:
    none; a kind and a status code by their members' names), already in this module's forms: ``attributes`` from
    :func:`owned_attributes`, ``events`` from :func:`span_events`, ``scope`` from
    :func:`converted_scope`. The one rule for every ``ReadableSpan`` read here, and for a span another process read and
    shipped (:class:`ConvertedSpan`). None, logged, for a span without a valid context (a zero id)."""
    if not trace_id or not span_id:
        logger.warning("skipped span %r: it has no valid span context", name)
        return None
    start = start_time or 0
    # ``int.to_bytes(...).hex()``: several times faster than ``format``. Positional: a keyword call of the 15 fields
    # costs twice as much (the order is checked at import: _SPAN_FIELDS).
    return Span(
        trace_id.to_bytes(16, "big").hex(),
        span_id.to_bytes(8, "big").hex(),
        parent_id.to_bytes(8, "big").hex() if parent_id else None,
        name,
        start,
        end_time or start,
        attributes,
        events,
        scope[0],
        scope[1],
        resource,
        kind,
        status_code,
        status_message or None,
        parent_is_remote,
    )


class ConvertedSpan:
    """A stand-in for a ``ReadableSpan`` that holds its internal form already (``span``; None: it has no valid
    context): a span another process read and shipped, made straight into that form where it is decoded
    (:func:`span_from_fields`). :func:`spans_from_readable` takes ``span`` as it is, without a second conversion."""

    __slots__ = ("span",)

    def __init__(self, span: Span | None) -> None:
        self.span = span


def converted_scope(name: str | None, version: str | None) -> tuple[str | None, str | None]:
    """An instrumentation scope's name and version as :class:`Span` holds them."""
    return name or None, version or None


def span_events(events: Iterable[tuple[str, int, Mapping[str, Any] | None]]) -> tuple[SpanEvent, ...]:
    """Events from (name, timestamp, attributes) tuples (the attributes copied)."""
    return tuple(
        SpanEvent(name=name, timestamp_ns=timestamp, attributes=_attributes(attributes))
        for name, timestamp, attributes in events
    )


def _scope(scope: Any) -> _Scope:
    return converted_scope(scope.name, scope.version) if scope is not None else (None, None)


def _events(events: Iterable[Any]) -> tuple[SpanEvent, ...]:
    return tuple(
        SpanEvent(name=event.name, timestamp_ns=event.timestamp, attributes=_attributes(event.attributes))
        for event in events
    )


def _attributes(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    if not attributes:
        return {}
    # A dict (the SDK's BoundedAttributes' own) is copied in C; the BoundedAttributes (behind a MappingProxyType or
    # not) copy their inner dict in C too; iterating the Mapping ABC item by item is several times slower.
    if type(attributes) is dict:
        result = attributes.copy()
    else:
        copy = getattr(attributes, "copy", None)
        result = copy() if copy is not None else dict(attributes)
        if type(result) is not dict:
            result = dict(result)
    for value in result.values():  # most spans hold no sequence: looked for first, without a call
        if type(value) is tuple:
            return owned_attributes(result)
    return result


def owned_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """``attributes`` (a dict nothing else holds: a copy, or one decoded from another process) as :class:`Span` holds
    them, changed in place: sequences as lists (tuples in the SDK), as from the file readers."""
    for value in attributes.values():  # most spans hold no sequence: looked for first, without writing
        if type(value) is tuple:
            break
    else:
        return attributes
    for key, value in attributes.items():
        if type(value) is tuple:
            attributes[key] = list(value)
    return attributes
