"""Priority sampling: with a sample rate below 1, a left-out trace whose local root ended in error or carries negative
feedback is still evaluated; the trace-id decision stays the rule for every other trace; the switch turns it off."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from otel_eval import ProcessorSettings, semconv
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.errors import ConfigurationError
from otel_eval.judge.priority import PriorityPolicy
from otel_eval.model import content_text
from otel_eval.processor._selection import SamplePriority, is_sampled, sampling_bound
from otel_eval.transport import InMemoryInvocationExporter
from tests.processor.telemetry import attach, hex_id

ERRORED, DISLIKED, PLAIN = SCENARIOS[0], SCENARIOS[1], SCENARIOS[2]


def _request(provider: TracerProvider, scenario: Any, *, error: bool = False, feedback: object = None) -> int:
    """One agent invocation under a local root span (a web request); returns the trace id."""
    tracer = provider.get_tracer("web.server")
    with tracer.start_as_current_span("POST /chat") as root:
        TravelAgent(provider).run(scenario)
        if feedback is not None:
            root.set_attribute("user.feedback", feedback)  # type: ignore[arg-type]
        if error:
            root.set_status(Status(StatusCode.ERROR, "upstream failed"))
        return root.get_span_context().trace_id


def _user_texts(exporter: InMemoryInvocationExporter) -> set[str]:
    return {
        content_text(request.invocations[0].invocation.user_content) for request in exporter.get_finished_requests()
    }


def test_left_out_traces_that_errored_or_got_negative_feedback_are_evaluated(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    processor = attach(
        provider, exporter, settings=ProcessorSettings(sample_rate=0.0)
    )  # every trace is left out by its trace id
    _request(provider, ERRORED, error=True)
    _request(provider, DISLIKED, feedback=" Thumbs_Down")
    _request(provider, PLAIN, feedback="thumbs_up")
    assert processor.force_flush(10_000)
    assert _user_texts(exporter) == {ERRORED.user_text, DISLIKED.user_text}
    stats = processor.stats()
    assert stats["invocations.priority_sampled.error"] == 1
    assert stats["invocations.priority_sampled.negative_feedback"] == 1
    assert stats["invocations.sampled_out"] == 1
    assert stats["invocations.sampled"] == 2
    assert not any(key.startswith("invocations.dropped") for key in stats)  # sampling is not loss
    assert (stats["open_traces"], stats["buffered_spans"], stats["buffered_bytes"]) == (0, 0, 0)
    processor.shutdown()


def test_the_switch_off_is_pure_head_sampling(provider: TracerProvider, exporter: InMemoryInvocationExporter) -> None:
    processor = attach(provider, exporter, settings=ProcessorSettings(sample_rate=0.0, sample_priority=False))
    _request(provider, ERRORED, error=True)
    _request(provider, DISLIKED, feedback="negative")
    assert processor.force_flush(10_000)
    assert exporter.get_finished_requests() == []
    stats = processor.stats()
    assert {key: n for key, n in stats.items() if key.startswith("invocations.") and n} == {}  # nothing decided
    assert stats["wakeups"] == 1  # only the flush's: left-out spans never reached the background thread
    processor.shutdown()


def test_the_trace_id_decision_still_rules_every_other_trace(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    processor = attach(provider, exporter, settings=ProcessorSettings(sample_rate=0.5))
    trace_ids = [_request(provider, PLAIN) for _ in range(8)]
    errored = _request(provider, ERRORED, error=True)
    assert processor.force_flush(10_000)
    bound = sampling_bound(0.5)
    kept = {hex_id(t, 32) for t in trace_ids if is_sampled(t, bound)}
    assert {r.trace_id for r in exporter.get_finished_requests()} == kept | {hex_id(errored, 32)}
    stats = processor.stats()
    assert stats.get("invocations.sampled_out", 0) == len(trace_ids) - len(kept)
    assert stats.get("invocations.priority_sampled.error", 0) == (0 if is_sampled(errored, bound) else 1)
    processor.shutdown()


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield provider, memory
    provider.shutdown()


def _root(provider: TracerProvider, memory: InMemorySpanExporter, attributes: dict[str, Any]) -> ReadableSpan:
    memory.clear()
    with provider.get_tracer("web.server").start_as_current_span("POST /chat", attributes=attributes):
        pass
    (span,) = memory.get_finished_spans()
    return span


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (-1, semconv.PRIORITY_REASON_NEGATIVE_FEEDBACK),  # an int attribute: "-1"
        ("DISLIKE", semconv.PRIORITY_REASON_NEGATIVE_FEEDBACK),
        (True, None),
        (0.5, None),
        ("", None),
        ("x" * 100_000, None),
        (("negative", "thumbs_down"), None),  # a sequence is not a feedback value
        ("\x00\ud7ff negative", None),
    ],
)
def test_feedback_values_of_any_shape_decide_without_raising(
    spans: tuple[TracerProvider, InMemorySpanExporter], value: object, reason: str | None
) -> None:
    root = _root(*spans, {"user.feedback": value})
    assert SamplePriority().reason(root) == reason


def test_the_feedback_attribute_and_values_are_those_of_the_judge_budget_policy(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    priority = SamplePriority(policy=PriorityPolicy(frozenset({"bad"})), attribute="app.rating")
    assert priority.reason(_root(*spans, {"app.rating": "Bad"})) == semconv.PRIORITY_REASON_NEGATIVE_FEEDBACK
    assert priority.reason(_root(*spans, {"user.feedback": "bad", "app.rating": "negative"})) is None


def test_the_switch_is_read_from_the_environment_and_a_bad_value_fails_at_start_up() -> None:
    assert ProcessorSettings.from_env({}).sample_priority is True
    assert ProcessorSettings.from_env({"OTEL_EVAL_SAMPLE_PRIORITY": " False "}).sample_priority is False
    with pytest.raises(ConfigurationError, match="OTEL_EVAL_SAMPLE_PRIORITY='maybe'"):
        ProcessorSettings.from_env({"OTEL_EVAL_SAMPLE_PRIORITY": "maybe"})


def test_the_root_is_the_local_root_not_a_child(provider: TracerProvider, exporter: InMemoryInvocationExporter) -> None:
    """A failed tool call inside an invocation that recovered does not rescue it: only the root's status counts."""
    processor = attach(provider, exporter, settings=ProcessorSettings(sample_rate=0.0))
    tracer = provider.get_tracer("web.server")
    with tracer.start_as_current_span("POST /chat"):
        with tracer.start_as_current_span("retry") as child:
            child.set_status(Status(StatusCode.ERROR))
        TravelAgent(provider).run(PLAIN)
    assert processor.force_flush(10_000)
    assert exporter.get_finished_requests() == []
    assert processor.stats()["invocations.sampled_out"] == 1
    processor.shutdown()


def test_a_left_out_trace_still_open_at_shutdown_is_not_counted_as_lost(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    processor = attach(provider, exporter, settings=ProcessorSettings(sample_rate=0.0))
    root = provider.get_tracer("web.server").start_span("POST /chat")
    with trace.use_span(root, end_on_exit=False):
        TravelAgent(provider).run(PLAIN)
    assert processor.force_flush(10_000)
    assert processor.stats()["open_traces"] == 1  # buffered until its root ends: it may still end in error
    processor.shutdown()
    assert {key: n for key, n in processor.stats().items() if key.startswith("invocations.") and n} == {}
    root.end()


def test_a_rescued_trace_keeps_its_content_log_records_and_a_discarded_one_leaves_none_behind(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    """``EVENT_ONLY`` content: the log records of left-out traces are kept until their root decides."""
    import json

    from opentelemetry._logs import LogRecord
    from opentelemetry.sdk._logs import LoggerProvider

    processor = attach(provider, exporter, settings=ProcessorSettings(sample_rate=0.0))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(processor.log_record_processor)
    tracer, otel_logger = provider.get_tracer("agent"), logger_provider.get_logger("agent")

    def invocation(user_text: str, *, error: bool) -> None:
        agent = {semconv.GEN_AI_OPERATION_NAME: "invoke_agent", semconv.GEN_AI_AGENT_NAME: "helper"}
        with tracer.start_as_current_span("invoke_agent helper", attributes=agent) as root:
            with tracer.start_as_current_span("chat m", attributes={semconv.GEN_AI_OPERATION_NAME: "chat"}):
                message = [{"role": "user", "parts": [{"type": "text", "content": user_text}]}]
                attributes = {"gen_ai.input.messages": json.dumps(message)}
                otel_logger.emit(LogRecord(event_name=semconv.GEN_AI_OPERATION_DETAILS_EVENT, attributes=attributes))
            if error:
                root.set_status(Status(StatusCode.ERROR))

    invocation("only on a log record", error=True)
    invocation("left out", error=False)
    assert processor.force_flush(10_000)
    assert _user_texts(exporter) == {"only on a log record"}
    assert processor.stats()["buffered_log_records"] == 0
    assert {key: n for key, n in processor.stats().items() if "dropped" in key and n} == {}
    processor.shutdown()
    logger_provider.shutdown()


def test_a_left_out_trace_that_goes_idle_without_its_root_is_discarded_uncounted(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    from tests.waiting import wait_until

    processor = attach(provider, exporter, settings=ProcessorSettings(sample_rate=0.0, trace_idle_timeout=0.1))
    root = provider.get_tracer("web.server").start_span("POST /chat")  # stays open past the idle timeout
    with trace.use_span(root, end_on_exit=False):
        TravelAgent(provider).run(PLAIN)
    assert processor.force_flush(10_000)
    assert processor.stats()["open_traces"] == 1
    assert wait_until(lambda: processor.stats()["open_traces"] == 0)
    root.set_status(Status(StatusCode.ERROR))
    root.end()  # decided now, from the root alone: rescued, though its idle spans are gone
    assert processor.force_flush(10_000)
    stats = processor.stats()
    assert stats.get("traces.idle_flushed", 0) == 0 and stats["invocations.priority_sampled.error"] == 1
    assert {key: n for key, n in stats.items() if "dropped" in key and n} == {}
    processor.shutdown()
