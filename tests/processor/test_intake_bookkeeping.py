"""The intake's per-span bookkeeping read the cheap way gives what the plain way gives: span sizes, the SDK's
``SpanContext`` layout, a buffered subtree taken without walking its tree."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.processor._buffers import TraceBuffers, _attributes_size, approximate_size
from otel_eval.processor._open_spans import OpenSpans


def _reference_size(attributes: Mapping[str, object]) -> int:
    """The documented estimate, item by item: key length + 16, a string its length, a sequence its strings' lengths
    (8 for any other item), any other value 8."""
    size = 0
    for key, value in attributes.items():
        size += 16 + len(key)
        if isinstance(value, str):
            size += len(value)
        elif isinstance(value, (tuple, list)):
            size += sum(len(item) if isinstance(item, str) else 8 for item in value)
        else:
            size += 8
    return size


def _spans() -> tuple[InMemorySpanExporter, TracerProvider]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider


def test_span_sizes_are_the_documented_estimate() -> None:
    exporter, provider = _spans()
    TravelAgent(provider).run(next(s for s in SCENARIOS if s.key == "two_tools"))
    with provider.get_tracer("t").start_as_current_span("mixed") as span:
        span.set_attributes(
            {"s": "abc", "i": 7, "f": 0.5, "b": True, "ss": ("x", "yy"), "is": [1, 2, 3], "empty": "", "é": "ü"}
        )
        span.add_event("e", {"k": "value", "n": 3})
    spans = exporter.get_finished_spans()
    assert len(spans) == 6
    for span in spans:
        assert span.attributes is not None
        assert _attributes_size(span.attributes) == _reference_size(span.attributes)
        assert _attributes_size(dict(span.attributes)) == _reference_size(span.attributes)  # a plain mapping too
        events = sum(64 + len(e.name) + _reference_size(e.attributes or {}) for e in span.events)
        assert approximate_size(span) == 400 + len(span.name) + _reference_size(span.attributes) + events


def test_a_span_context_reads_as_its_four_first_fields() -> None:
    context = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    assert context[:4] == (context.trace_id, context.span_id, context.is_remote, context.trace_flags)


def test_a_subtree_is_taken_alone_when_two_local_roots_share_a_trace() -> None:
    exporter, provider = _spans()
    tracer = provider.get_tracer("t")
    remote = SpanContext(0x1234, 0x99, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    parent = trace.set_span_in_context(NonRecordingSpan(remote))
    for name in ("a", "b"):
        with tracer.start_as_current_span(name, context=parent), tracer.start_as_current_span(f"{name}.child"):
            pass
    spans: list[ReadableSpan] = list(exporter.get_finished_spans())  # a.child, a, b.child, b
    open_spans = OpenSpans(max_traces=10, max_spans_per_trace=10)
    for span in (spans[1], spans[0], spans[3], spans[2]):  # start order
        assert span.context is not None and span.parent is not None
        local = span.parent.span_id if not span.parent.is_remote else None
        open_spans.started(0x1234, span.context.span_id, local, 0.0)
    buffers = TraceBuffers(max_open_traces=10, max_spans_per_trace=10, max_bytes=1 << 20)
    for span in spans[:3]:  # b still open
        assert span.context is not None
        assert buffers.add(span, 0x1234, 0.0, open_spans.ended(0x1234, span.context.span_id, 0.0)) is None
    a, b = spans[1].context, spans[3].context
    assert a is not None and b is not None
    assert [s.name for s in buffers.take_subtree(0x1234, a.span_id)] == ["a.child", "a"]
    assert buffers.total_spans == 1
    assert buffers.add(spans[3], 0x1234, 0.0, open_spans.ended(0x1234, b.span_id, 0.0)) is None
    assert [s.name for s in buffers.take_subtree(0x1234, b.span_id)] == ["b.child", "b"]
    assert (buffers.open_traces, buffers.total_spans, buffers.total_bytes) == (0, 0, 0)


def test_the_byte_limit_counts_only_what_stays_buffered_after_a_step() -> None:
    exporter, provider = _spans()
    tracer = provider.get_tracer("t")
    remote = SpanContext(0x1234, 0x99, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    parent = trace.set_span_in_context(NonRecordingSpan(remote))
    for name in ("a", "b"):
        with tracer.start_as_current_span(name, context=parent), tracer.start_as_current_span(f"{name}.child") as s:
            s.set_attribute("payload", "x" * 1000)
    spans: list[ReadableSpan] = list(exporter.get_finished_spans())  # a.child, a, b.child, b
    sizes = [approximate_size(span) for span in spans]
    a, b = spans[1].context, spans[3].context
    assert a is not None and b is not None
    # Under a limit smaller than one subtree: a subtree handed on in the step it arrived in is never counted.
    buffers = TraceBuffers(max_open_traces=10, max_spans_per_trace=10, max_bytes=sizes[0] + sizes[1] - 1)
    for span in spans[:2]:
        assert buffers.add(span, 0x1234, 0.0) is None
    assert [s.name for s in buffers.take_subtree(0x1234, a.span_id)] == ["a.child", "a"]
    assert buffers.settle() == []
    assert (buffers.open_traces, buffers.total_spans, buffers.total_bytes) == (0, 0, 0)
    # What stays buffered is counted at the step's end; taking part of it releases exactly what was counted.
    buffers = TraceBuffers(max_open_traces=10, max_spans_per_trace=10, max_bytes=1 << 20)
    for span in spans[:3]:
        assert buffers.add(span, 0x1234, 0.0) is None
    assert buffers.settle() == []
    assert buffers.total_bytes == sum(sizes[:3])
    assert buffers.add(spans[3], 0x1234, 0.0) is None
    assert [s.name for s in buffers.take_subtree(0x1234, a.span_id)] == ["a.child", "a"]
    assert buffers.total_bytes == sizes[2]
    assert buffers.settle() == []
    assert buffers.total_bytes == sizes[2] + sizes[3]
    # The span that would pass the limit discards its trace whole at the step's end, counted as add would count it.
    buffers = TraceBuffers(max_open_traces=10, max_spans_per_trace=10, max_bytes=sizes[0] + sizes[1] - 1)
    for span in spans[:2]:
        assert buffers.add(span, 0x1234, 0.0) is None
    [rejection] = buffers.settle()
    assert (rejection.trace_id, rejection.reason, rejection.spans) == (0x1234, "max_buffer_bytes", 2)  # both spans
    assert (buffers.open_traces, buffers.total_spans, buffers.total_bytes) == (0, 0, 0)
    assert buffers.add(spans[2], 0x1234, 0.0) == "max_buffer_bytes"


class _Ended(SpanProcessor):
    def __init__(self, ended: list[ReadableSpan]) -> None:
        self.ended = ended

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(span)


class _PropertySpan(ReadableSpan):
    """A ``ReadableSpan`` class that overrides a property: read through its properties, as any other class."""

    @property
    def context(self) -> SpanContext | None:
        return super().context


def _as_property_span(span: ReadableSpan) -> _PropertySpan:
    return _PropertySpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=span.attributes,
        events=span.events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def test_on_end_reads_an_sdk_span_through_its_fields_as_through_its_properties() -> None:
    from opentelemetry.sdk.trace.sampling import Decision, StaticSampler

    from otel_eval import semconv
    from otel_eval.processor._intake import SpanIntake
    from otel_eval.processor._selection import Sampling
    from otel_eval.traces.readable import reads_fields

    exporter, provider = _spans()
    for scenario in SCENARIOS:
        TravelAgent(provider).run(scenario)
    TravelAgent(provider, scope=semconv.INSTRUMENTATION_SCOPE).run(SCENARIOS[0])  # own traffic: roots never wake
    remote = SpanContext(0x1234, 0x5678, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    with provider.get_tracer("t").start_as_current_span(
        "remote child", trace.set_span_in_context(NonRecordingSpan(remote))
    ):
        pass
    ended: list[ReadableSpan] = []
    record_only = TracerProvider(sampler=StaticSampler(Decision.RECORD_ONLY))  # recorded, not sampled: never queued
    record_only.add_span_processor(_Ended(ended))
    with record_only.get_tracer("t").start_as_current_span("unsampled"):
        pass
    spans = [*exporter.get_finished_spans(), *ended]
    assert not spans[-1].context.trace_flags.sampled
    waiting = {spans[1].context.trace_id}  # a trace whose root waits: any of its spans wakes the thread

    def intake() -> SpanIntake:
        made = SpanIntake(max_pending=100, sampling=Sampling(None, None), wake_batch=1000)
        made.waiting = waiting
        return made

    by_fields, by_properties = intake(), intake()
    outcomes = []
    for span in spans:
        copy = _as_property_span(span)
        assert reads_fields(type(span)) and not reads_fields(type(copy))
        queued = (by_fields._queue(span), by_properties._queue(copy))
        woken = (by_fields.wake.wait(0), by_properties.wake.wait(0))
        assert queued[0] == queued[1] and woken[0] == woken[1], span.name
        outcomes.append((queued[0], woken[0]))
    assert list(by_fields.ends) == spans[:-1] and len(by_properties.ends) == len(spans) - 1
    assert (False, False) in outcomes and (True, True) in outcomes and (True, False) in outcomes
    assert (
        sum(woken for _, woken in outcomes)
        == len(SCENARIOS) + 1 + len([s for s in spans if s.context.trace_id in waiting]) - 1
    )
