"""ADK with ``EVENT_ONLY`` content capture: the messages are on log records, never on the spans. With the companion
``processor.log_record_processor`` on the (real, global) ``LoggerProvider``, a real google-adk agent rebuilds into
the same invocations, and scores the same, as with ``SPAN_ONLY``; log records that cannot join are counted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.model import EvalCase, EvalSet, TracedInvocation
from otel_eval.model.messages import EvaluationRecord
from otel_eval.transport import InMemoryInvocationExporter
from tests.reconstruct.adk_agents import SCENARIOS, adk_telemetry, global_logger_provider, run_turns, span_exporter

EQUAL_SCENARIOS = ("single_tool", "parallel_tools", "transfer", "multi_turn")
_VARYING = {"invocation_id", "creation_timestamp", "duration", "model_duration", "tool_duration"}


pytestmark = pytest.mark.usefixtures("quiet_adk")


@pytest.fixture
def providers() -> tuple[TracerProvider, LoggerProvider]:
    span_exporter()  # the session's global SDK tracer provider, which ADK's proxy tracer uses
    tracer_provider = trace.get_tracer_provider()
    assert isinstance(tracer_provider, TracerProvider)
    return tracer_provider, global_logger_provider()


def attach_both(providers: tuple[TracerProvider, LoggerProvider], **options: Any) -> Iterator[EvaluationSpanProcessor]:
    tracer_provider, logger_provider = providers
    processor = EvaluationSpanProcessor(**options)
    tracer_provider.add_span_processor(processor)
    logger_provider.add_log_record_processor(processor.log_record_processor)  # the README's one-line attach
    try:
        yield processor
    finally:
        processor.shutdown()  # a shut-down processor (and its companion) stays registered but ignores everything


def comparable(invocation: TracedInvocation) -> dict[str, Any]:
    """What must be equal between two runs of the same scripted scenario (ids and times differ)."""
    dumped = invocation.model_dump(mode="json", exclude={"trace_id", "span_id", "session_id", "start_time_ns",
                                                          "end_time_ns", "model_seconds", "tool_seconds"})  # fmt: skip
    dumped["invocation"] = {k: v for k, v in dumped["invocation"].items() if k not in _VARYING}
    return _without_adk_ids(dumped)


def _without_adk_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: "<id>" if k == "id" and isinstance(v, str) else _without_adk_ids(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_adk_ids(item) for item in value]
    return value


async def rebuilt(
    providers: tuple[TracerProvider, LoggerProvider], scenario: str, mode: str
) -> tuple[list[TracedInvocation], dict[str, int]]:
    exporter = InMemoryInvocationExporter()
    for processor in attach_both(providers, exporter=exporter):
        with adk_telemetry(schema=2, capture_mode=mode):
            await run_turns(SCENARIOS[scenario]())
        assert processor.force_flush(30_000)
        stats = processor.stats()
    invocations = [inv for request in exporter.get_finished_requests() for inv in request.invocations]
    return sorted(invocations, key=lambda inv: inv.start_time_ns), stats


@pytest.mark.parametrize("scenario", EQUAL_SCENARIOS)
async def test_event_only_rebuilds_the_same_invocations_as_span_only(
    providers: tuple[TracerProvider, LoggerProvider], scenario: str
) -> None:
    spans_only, _ = await rebuilt(providers, scenario, "SPAN_ONLY")
    events_only, stats = await rebuilt(providers, scenario, "EVENT_ONLY")

    assert len(events_only) == len(SCENARIOS[scenario]().turns)
    assert all(inv.content_captured and inv.invocation.final_response is not None for inv in events_only)
    assert [comparable(inv) for inv in events_only] == [comparable(inv) for inv in spans_only]
    assert not any(key.startswith("log_records.dropped") for key in stats), stats


@pytest.mark.parametrize("capture_mode", ["EVENT_ONLY", "true"])  # ADK reads the older boolean true as EVENT_ONLY
async def test_without_the_companion_event_only_content_is_missing_and_the_processor_says_so(
    providers: tuple[TracerProvider, LoggerProvider], caplog: pytest.LogCaptureFixture, capture_mode: str
) -> None:
    exporter = InMemoryInvocationExporter()
    processor = EvaluationSpanProcessor(exporter=exporter)
    providers[0].add_span_processor(processor)  # span processor only: what users had before
    try:
        with adk_telemetry(schema=2, capture_mode=capture_mode), caplog.at_level("WARNING", "otel_eval.processor"):
            await run_turns(SCENARIOS["single_tool"]())
            assert processor.force_flush(30_000)
            await run_turns(SCENARIOS["single_tool"]())
            assert processor.force_flush(30_000)
    finally:
        processor.shutdown()
    first, _ = exporter.get_finished_requests()
    assert first.invocations[0].content_captured is False
    hints = [r for r in caplog.records if "processor.log_record_processor" in r.getMessage()]
    assert len(hints) == 1  # once, not per invocation
    assert (
        f"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT={capture_mode} puts it on log records"
        in hints[0].getMessage()
    )


async def test_event_only_scores_equal_span_only(providers: tuple[TracerProvider, LoggerProvider]) -> None:
    # The golden case is the SPAN_ONLY invocation itself, so the reference metrics (which read the content) pass.
    (golden,), _ = await rebuilt(providers, "single_tool", "SPAN_ONLY")
    eval_set = EvalSet(eval_set_id="event-only", eval_cases=[EvalCase(eval_id="c1", conversation=[golden.invocation])])
    criteria = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
    scores: dict[str, list[tuple[str, float | None, str]]] = {}
    for mode in ("SPAN_ONLY", "EVENT_ONLY"):
        records: list[EvaluationRecord] = []
        for processor in attach_both(
            providers, criteria=criteria, settings=ProcessorSettings(eval_set=eval_set), sinks=[records.extend]
        ):
            with adk_telemetry(schema=2, capture_mode=mode):
                await run_turns(SCENARIOS["single_tool"]())
            assert processor.force_flush(30_000)
        timed = "invocation_duration_v1"  # wall time differs between any two runs
        scores[mode] = sorted((r.metric_name, r.score, r.eval_status.name) for r in records if r.metric_name != timed)

    assert scores["EVENT_ONLY"] == scores["SPAN_ONLY"]
    assert ("tool_trajectory_avg_score", 1.0, "PASSED") in scores["EVENT_ONLY"]
    assert ("response_match_score", 1.0, "PASSED") in scores["EVENT_ONLY"]


async def test_log_records_whose_span_was_handed_on_are_counted_late(
    providers: tuple[TracerProvider, LoggerProvider],
) -> None:
    from opentelemetry._logs import LogRecord

    exporter = InMemoryInvocationExporter()
    for processor in attach_both(providers, exporter=exporter):
        tracer = providers[0].get_tracer("tests.late")
        otel_logger = providers[1].get_logger("tests.late")
        details = {"event_name": semconv.GEN_AI_OPERATION_DETAILS_EVENT, "attributes": {"gen_ai.input.messages": "[]"}}
        with tracer.start_as_current_span("invoke_agent late") as span:
            otel_logger.emit(LogRecord(**details))  # in time: joins its span (content records flow)
        assert processor.force_flush(30_000)
        context = trace.set_span_in_context(span)
        otel_logger.emit(LogRecord(context=context, **details))  # after its span (and trace) were handed on
        orphan_context = trace.set_span_in_context(tracer.start_span("never ends"))
        otel_logger.emit(LogRecord(context=orphan_context, **details))
        otel_logger.emit(LogRecord(event_name="app.log", body="not GenAI content", context=context))
        assert processor.force_flush(30_000)
    counts = processor.stats()  # after shutdown
    assert counts.get("log_records.dropped.late") == 1
    assert counts.get("log_records.dropped.shutdown") == 1  # the orphan's span never ended: dropped at shutdown


def test_log_records_are_bounded_and_every_drop_is_counted_by_reason() -> None:
    from opentelemetry._logs import LogRecord
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    from tests.waiting import wait_until

    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    processor = EvaluationSpanProcessor(
        exporter=InMemoryInvocationExporter(),
        settings=ProcessorSettings(max_buffer_bytes=2_000, trace_idle_timeout=0.2),
    )
    tracer_provider.add_span_processor(processor)
    logger_provider.add_log_record_processor(processor.log_record_processor)
    otel_logger = logger_provider.get_logger("tests.bounds")

    def emit(trace_id: int, content: str, *, sampled: bool = True) -> None:
        flags = TraceFlags(TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT)
        span = NonRecordingSpan(SpanContext(trace_id, 7, is_remote=False, trace_flags=flags))
        attributes = {"gen_ai.input.messages": content}
        otel_logger.emit(
            LogRecord(
                event_name=semconv.GEN_AI_OPERATION_DETAILS_EVENT,
                attributes=attributes,
                context=trace.set_span_in_context(span),
            )
        )

    emit(1, "x" * 100)  # kept, then dropped: no span of trace 1 ever comes
    emit(2, "x" * 5_000)  # over the byte budget on its own
    emit(3, "x", sampled=False)  # not sampled: not the evaluator's, ignored
    assert wait_until(lambda: processor.stats().get("log_records.dropped.no_trace") == 1)
    counts = processor.stats()
    processor.shutdown()
    tracer_provider.shutdown()
    logger_provider.shutdown()
    assert counts.get("log_records.dropped.max_buffer_bytes") == 1
    assert sum(v for k, v in counts.items() if k.startswith("log_records.dropped")) == 2
