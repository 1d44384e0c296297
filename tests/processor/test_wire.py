"""The spans the processor ships to its evaluation process come out as they went in: any span the SDK can record
(attribute values of every type it accepts, events, remote parents, suppressed starts; links are not read) converts to
the same internal span on both sides of the socket, and a frame survives the real socket byte for byte."""

from __future__ import annotations

import enum
import gc
import socket
from datetime import timedelta
from typing import Any, cast

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, Context, get_current
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor, TracerProvider
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

from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.processor._process.framing import receive_frame, send_frame
from otel_eval.processor._process.messages import Batch, Flush
from otel_eval.processor._process.wire import Origins, SpanDecoder, encode_span, encode_start, encode_starts
from otel_eval.traces import Span as TraceSpan
from otel_eval.traces import spans_from_readable
from tests.reconstruct.recorded import ALL_TRACE_FILES as TRACE_FILES
from tests.reconstruct.recorded import file_spans

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
    batch = _through_the_socket(Batch([], encoded, [], origins.take_new(), {}))  # marshalled: every value a core type
    assert type(batch) is Batch
    received = batch.ends
    decoder = SpanDecoder()
    decoder.add_origins(batch.origins)
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
        sdk_spans = cast("list[Span]", [child, root])  # start_as_current_span yields the SDK's Span, typed as the API's
        encoded = _through_the_socket(
            [encode_start(sdk_spans[0], True, origins), encode_start(sdk_spans[1], False, origins)]
        )
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


class _Level(enum.IntEnum):
    HIGH = 3


def test_a_batch_of_other_values_is_pickled_and_crosses_unchanged() -> None:
    # An IntEnum is an int to the SDK (kept as an attribute value) but not to marshal: the batch is pickled instead.
    values = {"level": _Level.HIGH, "tags": ("a", "b"), "n": 2**63 - 1, "x": -0.0, "ok": True, "none": None}
    batch = Batch(
        [(1, 2, 0, False, 0, False), 0], [("span", 1, 2)], [], ({0: values}, {0: ("s", None)}), {9: "queue_full"}
    )
    received = _through_the_socket(batch)
    assert received == batch and type(received) is Batch
    assert type(received.origins[0][0]["level"]) is _Level  # pickled: the class survived
    core = batch._replace(origins=({0: {**values, "level": 3}}, batch.origins[1]))
    assert _through_the_socket(core) == core  # marshalled
    assert _through_the_socket(Flush(10, 1)) == Flush(10, 1)  # any other message: pickled


class _Recorder(SpanProcessor):
    """Span starts (each with whether it began under suppressed instrumentation) and ends, as the intake queues them."""

    def __init__(self) -> None:
        self.starts: list[tuple[Span, bool]] = []
        self.ends: list[ReadableSpan] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.starts.append((span, bool((parent_context or get_current()).get(_SUPPRESS_INSTRUMENTATION_KEY))))

    def on_end(self, span: ReadableSpan) -> None:
        self.ends.append(span)


def _start_fields(start: tuple[Any, bool]) -> tuple[Any, ...]:
    """What the processor's start bookkeeping reads of a start."""
    span, suppressed = start
    parent = span.parent
    return tuple(span.context), None if parent is None else tuple(parent), span.instrumentation_scope, suppressed


def test_a_start_given_by_its_ended_span_reads_as_its_own_start() -> None:
    recorder = _Recorder()
    provider = TracerProvider()
    provider.add_span_processor(recorder)
    agent = TravelAgent(provider)
    for scenario in SCENARIOS:
        agent.run(scenario)
    tracer = provider.get_tracer("tests.wire")
    with tracer.start_as_current_span("open"):  # started in this batch, ends in a later one
        pass
    open_end = recorder.ends.pop()
    recorder.starts[1] = (recorder.starts[1][0], True)  # suppressed: always sent whole
    starts, ends = recorder.starts, recorder.ends
    origins = Origins()
    by_position = encode_starts(starts, ends, origins)
    whole = [encode_start(span, suppressed, origins) for span, suppressed in starts]
    encoded_ends = [encode_span(span, origins) for span in ends]
    assert sum(isinstance(start, int) for start in by_position) == len(starts) - 2  # all but the suppressed and open
    assert not isinstance(by_position[1], int) and not isinstance(by_position[-1], int)
    batch = _through_the_socket(Batch(by_position, encoded_ends, [], origins.take_new(), {}))
    decoder = SpanDecoder()
    decoder.add_origins(batch.origins)
    ended = [decoder.span(end) for end in batch.ends]
    from_positions = decoder.starts(batch.starts, ended)
    from_tuples = [decoder.start(start) for start in whole]
    assert [_start_fields(start) for start in from_positions] == [_start_fields(start) for start in from_tuples]
    assert open_end.context is not None and from_positions[-1][0].context.span_id == open_end.context.span_id


def test_every_recorded_trace_converts_the_same_after_the_wire() -> None:
    assert len(TRACE_FILES) >= 15
    for path in TRACE_FILES:  # the recorded, framework and hostile traces
        spans = [_readable(span) for span in file_spans(path)]
        origins = Origins()
        batch = _through_the_socket(
            Batch([], [encode_span(span, origins) for span in spans], [], origins.take_new(), {})
        )
        decoder = SpanDecoder()
        decoder.add_origins(batch.origins)
        assert spans_from_readable([decoder.span(end) for end in batch.ends]) == spans_from_readable(spans), path


def _readable(span: TraceSpan) -> ReadableSpan:
    """An SDK span of a recorded span's fields (as an agent's SDK would have held them)."""
    trace_id = int(span.trace_id, 16)
    parent = span.parent_span_id
    return ReadableSpan(
        name=span.name,
        context=SpanContext(trace_id, int(span.span_id, 16), is_remote=False, trace_flags=TraceFlags(1)),
        parent=None if parent is None else SpanContext(trace_id, int(parent, 16), is_remote=span.parent_is_remote),
        resource=Resource(dict(span.resource)),
        attributes=_sdk_attributes(span.attributes),
        events=[Event(e.name, _sdk_attributes(e.attributes), e.timestamp_ns) for e in span.events],
        kind=SpanKind.__members__.get(span.kind or "", SpanKind.INTERNAL),
        status=Status(StatusCode[span.status_code], span.status_message),
        start_time=span.start_time_ns,
        end_time=span.end_time_ns,
        instrumentation_scope=InstrumentationScope(span.scope_name or "", span.scope_version),
    )


def _sdk_attributes(attributes: Any) -> dict[str, Any]:
    return {key: tuple(value) if isinstance(value, list) else value for key, value in attributes.items()}


def test_scopes_made_per_span_are_not_kept_and_still_cross_by_name() -> None:
    # An SDK before tracers were cached per scope made a new scope at every get_tracer: an agent calling it per
    # request sent the evaluation process a new scope each time, and both processes kept every one for their life.
    origins, decoder = Origins(), SpanDecoder()
    names = []
    for batch in range(50):
        starts = []
        for index in range(100):
            name = f"tool-{batch}-{index}"
            names.append(name)
            context = SpanContext(batch + 1, index + 1, is_remote=False)
            span = ReadableSpan(name, context, instrumentation_scope=InstrumentationScope(name, "1.0"))
            starts.append(encode_start(cast("Span", span), False, origins))
        decoder.add_origins(origins.take_new())
        assert [decoder.start(start)[0].instrumentation_scope.name for start in starts] == names[-100:]
    gc.collect()
    kept = sum(isinstance(o, InstrumentationScope) for o in gc.get_objects())
    assert kept < 2_000  # of 5,000 made: what the two sides keep is bounded, not one per span
