"""What the processor ships to its evaluation process (``isolation="process"``): span starts, ended spans and GenAI
content log records as plain tuples in a :class:`~otel_eval.processor._process.messages.Batch`
(:mod:`~otel_eval.processor._process.framing` frames it), and back into span objects on the other side.

The agent's process pays only for reading each span's fields into a tuple (the ``BatchSpanProcessor``'s exporters
do as much; a span of the SDK's own classes is read through the fields behind its properties, as
:func:`~otel_eval.traces.spans_from_readable` reads it); a span that started and ended within a batch crosses once,
its start given as its position among the ends (:func:`encode_starts`). The evaluation process decodes each ended
span straight into the internal :class:`~otel_eval.traces.Span` the rebuild reads
(:func:`~otel_eval.traces.readable.span_from_fields`, the rule by which the in-thread isolation converts SDK spans, so
both sides score a trace from equal spans), held by an :class:`EndedSpan` (the fields of a ``ReadableSpan`` the
processor reads: its contexts plain :class:`SpanIds` tuples), and queues each batch whole into an ordinary in-thread
engine, whose conversion takes that form as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from operator import attrgetter
from typing import Any, NamedTuple, cast

from opentelemetry._logs import LogRecord
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk._logs import ReadWriteLogRecord
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span
from opentelemetry.sdk.util import BoundedList
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    set_span_in_context,
)

from otel_eval.processor._process.messages import (
    Ended,
    LogTuple,
    NewOrigins,
    Start,
)
from otel_eval.traces import Span as TraceSpan
from otel_eval.traces import SpanEvent
from otel_eval.traces.readable import (
    ConvertedSpan,
    converted_scope,
    owned_attributes,
    reads_fields,
    span_events,
    span_from_fields,
)

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_DEFAULT_FLAGS = TraceFlags(TraceFlags.DEFAULT)
_KIND_NAMES = {kind.value: kind.name for kind in SpanKind}
_STATUS_NAMES = {code.value: code.name for code in StatusCode}


# --- the agent's side ------------------------------------------------------------------------------------------------


ORIGINS_KEPT = 256
"""Resources and scopes an :class:`Origins` keeps numbered at once, each kind. A process has a handful: more means
they are made per span or per call (an SDK before tracers were cached per scope made a scope at every
``get_tracer``), so a full map is emptied and what comes next is numbered afresh."""
DECODED_KEPT = 4 * ORIGINS_KEPT
"""The latest numbers a :class:`SpanDecoder` keeps, each kind: those of the sender's map and of the one before it
(a batch numbered across an emptying), with room for a batch that numbers a few hundred at once."""


class Origins:
    """Numbers each distinct ``Resource`` and ``InstrumentationScope`` once (spans share a handful);
    :meth:`take_new` returns those numbered since the last call, sent along with the spans referring to them.
    Numbers are never reused; at most :data:`ORIGINS_KEPT` objects of each kind are held."""

    def __init__(self) -> None:
        # id(object) -> (number, object): the object is kept so that its id is not reused by another.
        self._resources: dict[int, tuple[int, Resource]] = {}
        self._scopes: dict[int, tuple[int, InstrumentationScope | None]] = {}
        self._numbered = [0, 0]
        """Resources and scopes numbered so far: the next number of each."""
        self._new: NewOrigins = ({}, {})

    def resource(self, resource: Resource) -> int:
        """The number of ``resource``, assigned on first sight."""
        found = self._resources.get(id(resource))
        if found is not None:
            return found[0]
        key = self._number(self._resources, 0)
        self._resources[id(resource)] = (key, resource)
        self._new[0][key] = dict(resource.attributes)
        return key

    def scope(self, scope: InstrumentationScope | None) -> int:
        """The number of ``scope``, assigned on first sight."""
        found = self._scopes.get(id(scope))
        if found is not None:
            return found[0]
        key = self._number(self._scopes, 1)
        self._scopes[id(scope)] = (key, scope)
        self._new[1][key] = (scope.name, scope.version) if scope is not None else ("", None)
        return key

    def _number(self, numbered: dict[int, Any], kind: int) -> int:
        if len(numbered) >= ORIGINS_KEPT:
            numbered.clear()
        key = self._numbered[kind]
        self._numbered[kind] = key + 1
        return key

    def take_new(self) -> NewOrigins:
        """Resource attributes and scope names numbered since the last call."""
        new, self._new = self._new, ({}, {})
        return new


def encode_start(span: Span, suppressed: bool, origins: Origins) -> Start:
    """A span start: what the completion bookkeeping needs (ids, local parent, scope)."""
    context: Any
    if reads_fields(type(span)):
        fields: Any = span  # the SDK's own class: read through its fields (see _encode_fields)
        context, parent, scope = fields._context, fields._parent, fields._instrumentation_scope
    else:
        context, parent, scope = span.get_span_context(), span.parent, span.instrumentation_scope
    return (
        context.trace_id,
        context.span_id,
        parent.span_id if parent is not None else 0,
        parent is not None and parent.is_remote,
        origins.scope(scope),
        suppressed,
    )


def encode_starts(starts: list[tuple[Span, bool]], ends: list[ReadableSpan], origins: Origins) -> list[Start | int]:
    """Span starts (each with whether it began under suppressed instrumentation), in order: a start whose span is
    among ``ends`` (it ended before this batch was taken: most spans) is its position there, since the ended span
    carries every field of its start (the evaluation process reads them from it, :meth:`SpanDecoder.starts`); any
    other start is encoded (:func:`encode_start`), a suppressed one always. A start is told from its end by their
    shared ``SpanContext`` (the SDK ends a span with a ``ReadableSpan`` of its own context object): another span
    class that makes a new context on each read has its starts encoded."""
    if not ends:
        return [encode_start(span, suppressed, origins) for span, suppressed in starts]
    ended_at = {id(context): position for position, context in enumerate(map(_CONTEXT_OF, ends))}
    encoded: list[Start | int] = []
    append = encoded.append
    for span, suppressed in starts:
        position = None if suppressed else ended_at.get(id(span.get_span_context()))
        append(encode_start(span, suppressed, origins) if position is None else position)
    return encoded


_CONTEXT_OF = attrgetter("context")


def encode_span(span: ReadableSpan, origins: Origins) -> Ended:
    """An ended span: every field the rebuild reads."""
    if reads_fields(type(span)):
        return _encode_fields(span, origins)
    context = cast(SpanContext, span.get_span_context())  # the processor ships only spans with a context
    parent = span.parent
    status = span.status
    events = span.events
    return (
        span.name,
        context.trace_id,
        context.span_id,
        parent.span_id if parent is not None else 0,
        parent is not None and parent.is_remote,
        span.kind._value_,
        span.start_time,
        span.end_time,
        status.status_code._value_,
        status.description,
        _attributes(span.attributes),
        tuple((event.name, event.timestamp, _attributes(event.attributes)) for event in events) if events else (),
        origins.scope(span.instrumentation_scope),
        origins.resource(span.resource),
    )


def _encode_fields(span: Any, origins: Origins) -> Ended:
    """:func:`encode_span` of a span of the SDK's own classes, read through the fields behind its properties (as
    :func:`~otel_eval.traces.spans_from_readable` reads them): each property is a Python call, ``attributes`` wraps
    the dict in a proxy and ``events`` copies the list under a lock. The span has ended: its fields no longer
    change."""
    context, parent, status = span._context, span._parent, span._status
    attributes: Any = span._attributes
    events: Any = span._events
    if type(events) is _SDK_LIST:
        events = events._dq
    return (
        span._name,
        context.trace_id,  # the processor ships only spans with a context
        context.span_id,
        parent.span_id if parent is not None else 0,
        parent is not None and parent.is_remote,
        span._kind._value_,
        span._start_time,
        span._end_time,
        status.status_code._value_,
        status.description,
        (attributes._dict.copy() if type(attributes) is _SDK_ATTRIBUTES else _attributes(attributes)) or None,
        tuple((event.name, event.timestamp, _attributes(event.attributes)) for event in events) if events else (),
        origins.scope(span._instrumentation_scope),
        origins.resource(span._resource),
    )


_SDK_ATTRIBUTES: Any = BoundedAttributes
_SDK_LIST: Any = BoundedList
"""The SDK's classes of a span's attributes and events, whose own dict and deque are read (a copy, or the Mapping
ABC item by item, costs more)."""


def encode_log_record(record: ReadWriteLogRecord) -> LogTuple:
    """A content log record: its span context, event name, times, attributes and body."""
    log = record.log_record
    return (
        log.trace_id or 0,
        log.span_id or 0,
        int(log.trace_flags or 0),
        log.event_name,
        log.timestamp,
        log.observed_timestamp,
        _attributes(log.attributes),
        log.body,
    )


def _attributes(attributes: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not attributes:
        return None
    # The SDK's BoundedAttributes (behind a MappingProxyType) copy their inner dict in C.
    copy = getattr(attributes, "copy", None)
    result = copy() if copy is not None else dict(attributes)
    return result if type(result) is dict else dict(result)


# --- the evaluation process's side -----------------------------------------------------------------------------------


class SpanIds(NamedTuple):
    """A span's context in the evaluation process: the first four items of a ``SpanContext`` (a tuple too), which are
    all the processor reads there. A ``SpanContext`` validates its ids in Python on every construction, and the
    evaluation process makes one or two per span start and end."""

    trace_id: int
    span_id: int
    is_remote: bool
    trace_flags: int


_ids = partial(tuple.__new__, SpanIds)
"""``SpanIds`` of a tuple, made in C (its ``__new__`` is a Python function)."""


class SpanDecoder:
    """Turns tuples back into span stand-ins and log records (scopes and resources shared)."""

    def __init__(self) -> None:
        self._resources: dict[int, tuple[Resource, dict[str, Any]]] = {}
        self._scopes: dict[int, tuple[InstrumentationScope, tuple[str | None, str | None]]] = {}
        self._empty: tuple[Resource, dict[str, Any]] = (Resource({}), {})
        self._no_scope = (InstrumentationScope(""), converted_scope("", None))

    def add_origins(self, new: NewOrigins) -> None:
        """Resources and scopes numbered by the sender (:meth:`Origins.take_new`)."""
        resources, scopes = new
        for key, attributes in resources.items():
            self._resources[key] = (Resource(attributes), owned_attributes(dict(attributes)))
        for key, (name, version) in scopes.items():
            self._scopes[key] = (InstrumentationScope(name, version), converted_scope(name, version))
        for kept in (self._resources, self._scopes):  # numbered in order: the oldest first
            while len(kept) > DECODED_KEPT:
                del kept[next(iter(kept))]

    def resource(self, key: int) -> Resource:
        """The resource numbered ``key`` (an empty one when it was never sent)."""
        return self._resources.get(key, self._empty)[0]

    def start(self, start: Start) -> tuple[Span, bool]:
        """A stand-in for a started span (:class:`StartedSpan`: the ids and scope the processor's ``on_start`` and
        completion bookkeeping read), and whether it started under suppressed instrumentation."""
        trace_id, span_id, parent_id, parent_remote, scope, suppressed = start
        span = StartedSpan(
            _ids((trace_id, span_id, False, _SAMPLED)),
            _ids((trace_id, parent_id, parent_remote, _DEFAULT_FLAGS)) if parent_id else None,
            self._scopes.get(scope, self._no_scope)[0],
        )
        return span, suppressed  # type: ignore[return-value]  # on_start reads only what a StartedSpan has

    def starts(self, starts: list[Start | int], ended: list[ReadableSpan]) -> list[tuple[Span, bool]]:
        """The starts of a batch (:func:`encode_starts`), each with whether it began under suppressed instrumentation:
        a start given by its span's position among the batch's ``ended`` spans (decoded by :meth:`span`) is that
        ended span, which has every field a :class:`StartedSpan` has, with the same values."""
        # An EndedSpan stands for the start: the processor's start bookkeeping reads only what a StartedSpan has.
        stand_ins = cast("list[Span]", ended)
        return [(stand_ins[start], False) if isinstance(start, int) else self.start(start) for start in starts]

    def span(self, ended: Ended) -> ReadableSpan:
        """The ended span: an :class:`EndedSpan` (the fields of a ``ReadableSpan`` the processor reads), holding its
        internal form, made here at once (:func:`~otel_eval.traces.readable.span_from_fields`, the rule the in-thread
        isolation converts each span with), so the rebuild does not convert it again."""
        (
            name, trace_id, span_id, parent_id, parent_remote, kind, start_time, end_time, status_code,
            status_description, attributes, events, scope, resource_key,
        ) = ended  # fmt: skip
        scope_object, scope_fields = self._scopes.get(scope, self._no_scope)
        resource, resource_fields = self._resources.get(resource_key, self._empty)
        attributes = owned_attributes(attributes) if attributes else {}  # off the socket: nothing else holds it
        span_events_ = span_events(events) if events else ()
        converted = span_from_fields(
            trace_id, span_id, parent_id, parent_remote, name, start_time, end_time, attributes, span_events_,
            scope_fields, resource_fields, _KIND_NAMES[kind], _STATUS_NAMES[status_code], status_description,
        )  # fmt: skip
        return EndedSpan(  # type: ignore[return-value]  # the processor reads only what an EndedSpan has
            converted,
            converted or TraceSpan("", "", None, name, start_time or 0, end_time or 0, attributes, span_events_),
            _ids((trace_id, span_id, False, _SAMPLED)),
            _ids((trace_id, parent_id, parent_remote, _DEFAULT_FLAGS)) if parent_id else None,
            scope_object,
            resource,
        )


class EndedSpan(ConvertedSpan):
    """An ended span in the evaluation process: the fields of a ``ReadableSpan`` that the processor and its enricher
    read, and its internal :class:`~otel_eval.traces.Span` (``span``, None without a valid context), which the
    rebuild takes as it is (:func:`~otel_eval.traces.spans_from_readable`). Its ids, parent and scope are slots;
    the rest is read from that form (``fields``) when asked: its attributes (sequences as lists), events
    (:class:`~otel_eval.traces.SpanEvent`, whose ``name`` and ``attributes`` are an SDK event's), times, kind and
    status. Nothing here is shared with a caller that could change it (the attributes came off the socket)."""

    __slots__ = ("context", "fields", "instrumentation_scope", "parent", "resource")
    links: tuple[Any, ...] = ()
    """Links are not shipped: nothing in the evaluation reads them."""

    def __init__(
        self,
        span: TraceSpan | None,
        fields: TraceSpan,
        context: SpanIds,
        parent: SpanIds | None,
        instrumentation_scope: InstrumentationScope,
        resource: Resource,
    ) -> None:
        self.span = span
        self.fields = fields
        self.context = context
        self.parent = parent
        self.instrumentation_scope = instrumentation_scope
        self.resource = resource

    @property
    def name(self) -> str:
        """The span's name."""
        return self.fields.name

    @property
    def attributes(self) -> Mapping[str, Any]:
        """The span's attributes (sequences as lists)."""
        return self.fields.attributes

    @property
    def events(self) -> tuple[SpanEvent, ...]:
        """The span's events."""
        return self.fields.events

    @property
    def start_time(self) -> int:
        """When the span started (Unix nanoseconds)."""
        return self.fields.start_time_ns

    @property
    def end_time(self) -> int:
        """When the span ended (Unix nanoseconds)."""
        return self.fields.end_time_ns

    @property
    def kind(self) -> SpanKind:
        """The span's kind."""
        return SpanKind[self.fields.kind or "INTERNAL"]

    @property
    def status(self) -> Status:
        """The span's status."""
        return Status(StatusCode[self.fields.status_code], self.fields.status_message)

    def get_span_context(self) -> SpanIds:
        """The span's context, as ``ReadableSpan.get_span_context``."""
        return self.context


class StartedSpan:
    """What the evaluation process knows of a span when it starts: its context, its parent's and its scope (the
    fields of a ``ReadableSpan`` the processor's start bookkeeping reads; a whole ``ReadableSpan`` costs twice as
    much to make, per span)."""

    __slots__ = ("context", "instrumentation_scope", "parent")

    def __init__(self, context: SpanIds, parent: SpanIds | None, instrumentation_scope: InstrumentationScope) -> None:
        self.context = context
        self.parent = parent
        self.instrumentation_scope = instrumentation_scope

    def get_span_context(self) -> SpanIds:
        """The span's context, as ``Span.get_span_context``."""
        return self.context


def decode_log_record(encoded: LogTuple) -> ReadWriteLogRecord:
    """The SDK log record a companion ``LogRecordProcessor`` receives."""
    trace_id, span_id, flags, event_name, timestamp, observed, attributes, body = encoded
    context = set_span_in_context(NonRecordingSpan(SpanContext(trace_id, span_id, False, TraceFlags(flags))))
    record = LogRecord(
        timestamp=timestamp,
        observed_timestamp=observed,
        context=context,
        body=body,
        attributes=attributes,
        event_name=event_name,
    )
    return ReadWriteLogRecord(record)
