"""The spans the processor ships to its evaluation process come out as they went in: any span the SDK can record
(attribute values of every type it accepts, events, remote parents, suppressed starts; links are not read) converts to
the same internal span on both sides of the socket, and a frame survives the real socket byte for byte."""

from __future__ import annotations

import socket
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
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

from otel_eval.processor._process.framing import receive_frame, send_frame
from otel_eval.processor._process.wire import Origins, SpanDecoder, encode_span, encode_start
from otel_eval.traces import spans_from_readable

_TEXT = st.text(max_size=40)
_SCALARS = st.one_of(
    _TEXT,
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
)
_VALUES = st.one_of(
    _SCALARS,
    st.lists(_TEXT, max_size=4).map(tuple),
    st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=4).map(tuple),
    st.lists(st.floats(allow_nan=False), max_size=4).map(tuple),
    st.lists(st.booleans(), max_size=4).map(tuple),
)
_ATTRIBUTES = st.dictionaries(_TEXT, _VALUES, max_size=6)
_IDS = st.integers(min_value=1, max_value=2**64 - 1)


@st.composite
def _spans(draw: st.DrawFn) -> ReadableSpan:
    trace_id = draw(st.integers(min_value=1, max_value=2**128 - 1))
    parent_id = draw(st.one_of(st.none(), _IDS))
    start = draw(st.integers(min_value=0, max_value=2**62))
    return ReadableSpan(
        name=draw(_TEXT),
        context=SpanContext(trace_id, draw(_IDS), is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED)),
        parent=None if parent_id is None else SpanContext(trace_id, parent_id, is_remote=draw(st.booleans())),
        resource=Resource(draw(_ATTRIBUTES)),
        attributes=draw(_ATTRIBUTES),
        events=[
            Event(name, attributes, timestamp)
            for name, attributes, timestamp in draw(
                st.lists(st.tuples(_TEXT, _ATTRIBUTES, st.integers(min_value=0, max_value=2**62)), max_size=3)
            )
        ],
        kind=draw(st.sampled_from(list(SpanKind))),
        status=Status(draw(st.sampled_from(list(StatusCode))), draw(st.one_of(st.none(), _TEXT))),
        start_time=start,
        end_time=start + draw(st.integers(min_value=0, max_value=10**12)),
        instrumentation_scope=InstrumentationScope(draw(_TEXT), draw(st.one_of(st.none(), _TEXT))),
    )


class _PropertiesOnly(ReadableSpan):
    """A span class overriding a property: the encoders read it through the properties, as any other class."""

    @property
    def attributes(self) -> Any:
        return ReadableSpan.attributes.fget(self)  # type: ignore[attr-defined]


def _properties_only(span: ReadableSpan) -> ReadableSpan:
    copy = _PropertiesOnly.__new__(_PropertiesOnly)
    copy.__dict__.update(vars(span))
    return copy


def _through_the_socket(message: Any) -> Any:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        send_frame(ours, message)
        return receive_frame(theirs)


@settings(max_examples=150, deadline=timedelta(seconds=5), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_spans(), min_size=1, max_size=5))
def test_any_recorded_span_converts_the_same_after_the_wire(spans: list[ReadableSpan]) -> None:
    origins = Origins()
    encoded = [encode_span(span, origins) for span in spans]
    _, received, new = _through_the_socket(("batch", encoded, origins.take_new()))
    decoder = SpanDecoder()
    decoder.add_origins(new)
    assert spans_from_readable([decoder.span(e) for e in received]) == spans_from_readable(spans)
    # The SDK's own classes are read through their fields: the same tuples as through the properties.
    by_properties = Origins()
    assert encoded == [encode_span(_properties_only(span), by_properties) for span in spans]


def test_sdk_spans_encode_the_same_through_their_fields_as_through_their_properties() -> None:
    provider = TracerProvider()
    tracer = provider.get_tracer("tests.wire", "2.0")
    remote = SpanContext(7, 9, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    with tracer.start_as_current_span("root", context=set_span_in_context(NonRecordingSpan(remote))) as root:
        root.set_attribute("tags", ("a", "b"))
        with tracer.start_as_current_span("child", attributes={"n": 1}) as child:
            child.add_event("note", {"k": "v"})
            child.set_status(Status(StatusCode.ERROR, "failed"))
    spans: list[Any] = [child, root]  # the SDK's recording spans
    assert all(type(span) is not ReadableSpan for span in spans)  # the SDK's recording class
    by_fields, by_properties = Origins(), Origins()
    encoded = [encode_span(span, by_fields) for span in spans]
    assert encoded == [encode_span(_properties_only(span), by_properties) for span in spans]
    assert by_fields.take_new() == by_properties.take_new()
    assert encoded[0][11] == (("note", spans[0].events[0].timestamp, {"k": "v"}),) and encoded[1][4] is True
    starts = [encode_start(span, False, Origins()) for span in spans]
    assert starts == [encode_start(_properties_only(span), False, Origins()) for span in spans]  # type: ignore[arg-type]


def test_a_span_start_keeps_its_ids_parent_scope_and_suppression() -> None:
    provider = TracerProvider()
    tracer = provider.get_tracer("tests.wire", "2.0")
    with tracer.start_as_current_span("root") as root, tracer.start_as_current_span("child") as child:
        origins = Origins()
        encoded = _through_the_socket([encode_start(child, True, origins), encode_start(root, False, origins)])
    decoder = SpanDecoder()
    decoder.add_origins(origins.take_new())
    (child_start, suppressed), (root_start, root_suppressed) = (decoder.start(e) for e in encoded)
    child_context, root_context = child.get_span_context(), root.get_span_context()
    assert child_start.context is not None and child_start.parent is not None
    assert (child_start.context.trace_id, child_start.context.span_id) == (
        child_context.trace_id,
        child_context.span_id,
    )
    assert child_start.parent.span_id == root_context.span_id and not child_start.parent.is_remote
    assert child_start.context.trace_flags.sampled  # only sampled spans are shipped: the flags say no more
    assert root_start.parent is None
    assert child_start.instrumentation_scope == InstrumentationScope("tests.wire", "2.0")
    assert (suppressed, root_suppressed) == (True, False)
