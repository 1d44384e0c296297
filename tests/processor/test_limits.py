"""Bounded memory: floods of traces whose roots never end, huge traces and a full intake queue stay within the
limits, and every drop is counted by reason."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.model.messages import EvaluationRequest
from otel_eval.transport import ExportResult, InMemoryInvocationExporter


@pytest.fixture
def provider() -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider()
    yield tracer_provider
    tracer_provider.shutdown()


def _open_roots(provider: TracerProvider, traces: int, children: int) -> list:
    """``traces`` traces whose root never ends, each with ``children`` ended child spans."""
    tracer = provider.get_tracer("flood")
    roots = []
    for index in range(traces):
        root = tracer.start_span(f"never ends {index}")
        roots.append(root)
        context = trace.set_span_in_context(root)
        for child in range(children):
            tracer.start_span(f"child {child}", context=context, attributes={"payload": "x" * 100}).end()
    return roots


def test_a_flood_of_traces_whose_roots_never_end_keeps_the_buffers_at_their_limits(provider: TracerProvider) -> None:
    exporter = InMemoryInvocationExporter()
    processor = EvaluationSpanProcessor(
        exporter=exporter, settings=ProcessorSettings(max_open_traces=50, trace_idle_timeout=3600)
    )
    provider.add_span_processor(processor)
    _open_roots(provider, traces=300, children=4)
    assert processor.force_flush(10_000)
    stats = processor.stats()
    assert stats["open_traces"] == 50
    assert stats["buffered_spans"] == 50 * 4
    assert stats[f"invocations.dropped.{semconv.DROP_MAX_OPEN_TRACES}"] == 250
    assert stats[f"spans.dropped.{semconv.DROP_MAX_OPEN_TRACES}"] == 250 * 4
    assert exporter.get_finished_requests() == []
    processor.shutdown()
    after = processor.stats()
    assert after["open_traces"] == 0 and after["buffered_spans"] == 0 and after["buffered_bytes"] == 0
    assert after[f"spans.dropped.{semconv.DROP_SHUTDOWN}"] == 50 * 4
    assert after[f"invocations.dropped.{semconv.DROP_SHUTDOWN}"] == 50


def test_a_trace_over_the_span_limit_is_discarded_whole_and_its_later_spans_dropped(provider: TracerProvider) -> None:
    exporter = InMemoryInvocationExporter()
    processor = EvaluationSpanProcessor(exporter=exporter, settings=ProcessorSettings(max_spans_per_trace=5))
    provider.add_span_processor(processor)
    _open_roots(provider, traces=1, children=9)
    TravelAgent(provider).run(SCENARIOS[0])  # 4 spans: under the limit, still evaluated
    assert processor.force_flush(10_000)
    stats = processor.stats()
    assert stats[f"invocations.dropped.{semconv.DROP_MAX_SPANS_PER_TRACE}"] == 1
    assert stats[f"spans.dropped.{semconv.DROP_MAX_SPANS_PER_TRACE}"] == 9  # 5 buffered + the 6th, then 3 more
    assert stats["open_traces"] == 0
    assert len(exporter.get_finished_requests()) == 1
    processor.shutdown()


def test_the_byte_limit_discards_the_trace_that_would_pass_it(provider: TracerProvider) -> None:
    exporter = InMemoryInvocationExporter()
    processor = EvaluationSpanProcessor(
        exporter=exporter, settings=ProcessorSettings(max_buffer_bytes=20_000, trace_idle_timeout=3600)
    )
    provider.add_span_processor(processor)
    _open_roots(provider, traces=100, children=2)
    assert processor.force_flush(10_000)
    stats = processor.stats()
    assert 0 < stats["buffered_bytes"] <= 20_000
    assert stats[f"invocations.dropped.{semconv.DROP_MAX_BUFFER_BYTES}"] > 0
    dropped = stats[f"spans.dropped.{semconv.DROP_MAX_BUFFER_BYTES}"]
    assert dropped + stats["buffered_spans"] == 200
    processor.shutdown()


class StalledExporter(InMemoryInvocationExporter):
    """A transport whose ``export`` waits until released (e.g. a producer stuck on a full socket buffer)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def export(self, requests: Sequence[EvaluationRequest]) -> ExportResult:
        self.entered.set()
        self.release.wait(30)
        return super().export(requests)


def test_a_full_intake_queue_drops_and_counts_in_on_end(provider: TracerProvider) -> None:
    exporter = StalledExporter()
    processor = EvaluationSpanProcessor(
        exporter=exporter, settings=ProcessorSettings(max_pending_spans=10, trace_idle_timeout=3600)
    )
    provider.add_span_processor(processor)
    TravelAgent(provider).run(SCENARIOS[0])
    assert exporter.entered.wait(10)  # the background thread is now stuck in the transport
    _open_roots(provider, traces=1, children=40)  # on_end keeps returning at once
    exporter.release.set()
    assert processor.force_flush(10_000)
    stats = processor.stats()
    # 30 dropped in on_end, and the 10 queued with them: their trace is dropped whole
    assert stats[f"spans.dropped.{semconv.DROP_QUEUE_FULL}"] == 40
    assert stats["buffered_spans"] == 0
    assert len(exporter.get_finished_requests()) == 1
    processor.shutdown()


class _AfterEnd(SpanProcessor):
    """Runs ``action`` after the other processors' ``on_end`` of the span named ``name`` (added after them)."""

    def __init__(self, name: str, action: Callable[[], None]) -> None:
        self._name, self._action = name, action

    def on_end(self, span: ReadableSpan) -> None:
        if span.name == self._name:
            self._action()


def test_an_invocation_that_lost_a_span_on_a_full_intake_queue_is_dropped_whole_not_scored_partial(
    provider: TracerProvider,
) -> None:
    exporter = StalledExporter()
    processor = EvaluationSpanProcessor(
        exporter=exporter, settings=ProcessorSettings(max_pending_spans=10, trace_idle_timeout=3600)
    )
    provider.add_span_processor(processor)
    TravelAgent(provider).run(SCENARIOS[0])
    assert exporter.entered.wait(10)  # the background thread is stuck: nothing leaves the queue
    scenario = next(s for s in SCENARIOS if len(s.tool_steps) >= 2)
    # The queue is left room for the invocation's first model call and its first tool: its second tool is dropped.
    _open_roots(provider, traces=1, children=8)
    last_tool = f"execute_tool {scenario.tool_steps[1].name}"

    def drain() -> None:  # the transport has room again before the invocation's last spans end
        exporter.release.set()
        assert processor.force_flush(10_000)

    provider.add_span_processor(_AfterEnd(last_tool, drain))
    TravelAgent(provider).run(scenario)
    assert processor.force_flush(10_000)
    stats = processor.stats()
    assert stats[f"invocations.dropped.{semconv.DROP_QUEUE_FULL}"] == 1
    assert len(exporter.get_finished_requests()) == 1  # the first run's: not the partial second
    processor.shutdown()


def test_a_backlog_of_complete_invocations_is_not_dropped_as_too_many_open_traces(provider: TracerProvider) -> None:
    # The background thread falls behind (here: stuck in the transport) while the agent completes invocations; the
    # step that catches up used to buffer every one of them before handing any on, so a backlog larger than
    # max_open_traces was dropped as max_open_traces although none of them was still open.
    exporter = StalledExporter()
    processor = EvaluationSpanProcessor(
        exporter=exporter, settings=ProcessorSettings(max_open_traces=4, trace_idle_timeout=3600)
    )
    provider.add_span_processor(processor)
    agent = TravelAgent(provider)
    agent.run(SCENARIOS[0])
    assert exporter.entered.wait(10)
    for index in range(20):
        agent.run(SCENARIOS[index % len(SCENARIOS)])
    exporter.release.set()
    assert processor.force_flush(10_000)
    stats = processor.stats()
    assert stats.get(f"invocations.dropped.{semconv.DROP_MAX_OPEN_TRACES}", 0) == 0
    assert len(exporter.get_finished_requests()) == 21
    processor.shutdown()


class GatedExporter(InMemoryInvocationExporter):
    """A transport whose capacity the test switches off and on (a full, then drained, evaluation queue)."""

    def __init__(self) -> None:
        super().__init__()
        self.open = True

    def has_capacity(self) -> bool:
        return self.open


def test_while_the_transport_is_full_spans_are_shed_in_on_end_and_straddling_traces_dropped_whole(
    provider: TracerProvider,
) -> None:
    exporter = GatedExporter()
    processor = EvaluationSpanProcessor(exporter=exporter, settings=ProcessorSettings(trace_idle_timeout=3600))
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("web.server")
    straddling = tracer.start_span("POST /chat")  # its agent run starts before, and ends after, the overload
    with trace.use_span(straddling, end_on_exit=False):
        TravelAgent(provider).run(SCENARIOS[0])
    assert processor.force_flush(10_000)
    assert processor.stats()["open_traces"] == 1

    exporter.open = False
    assert processor.force_flush(10_000)  # the background thread sees the full transport: shedding starts
    assert processor.stats()["shedding"] == 1
    TravelAgent(provider).run(SCENARIOS[1])  # shed entirely in on_end
    with trace.use_span(straddling, end_on_exit=False):
        tracer.start_span("late child").end()
    assert processor.force_flush(10_000)
    assert processor.stats()["pending_spans"] == 0

    exporter.open = True
    assert processor.force_flush(10_000)  # shedding stops
    straddling.end()
    TravelAgent(provider).run(SCENARIOS[2])
    assert processor.force_flush(10_000)
    texts = [r.invocations[0].invocation.user_content.parts[0].text for r in exporter.get_finished_requests()]
    assert texts == [SCENARIOS[2].user_text]  # neither the shed run nor the straddling (partial) one
    stats = processor.stats()
    assert stats[f"invocations.dropped.{semconv.DROP_TRANSPORT_QUEUE_FULL}"] == 2
    assert stats[f"spans.dropped.{semconv.DROP_TRANSPORT_QUEUE_FULL}"] == 4 + 1 + 4 + 1  # A's 4, late, B's 4, root
    assert stats["open_traces"] == 0
    processor.shutdown()
