"""What the processor evaluates: local roots (also under a remote parent), idle traces, filters, sampling, and never
the evaluator's own traffic. Requests are read from an InMemoryInvocationExporter."""

from __future__ import annotations

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.model import content_text
from otel_eval.processor._selection import sampling_bound
from otel_eval.transport import InMemoryInvocationExporter
from tests.processor.telemetry import attach, hex_id
from tests.waiting import wait_until

WEATHER, CURRENCY = SCENARIOS[0], SCENARIOS[1]
REMOTE_TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
REMOTE_SPAN_ID = 0x00F067AA0BA902B7


def _remote_parent() -> otel_context.Context:
    parent = SpanContext(REMOTE_TRACE_ID, REMOTE_SPAN_ID, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return trace.set_span_in_context(NonRecordingSpan(parent))


def _user_texts(exporter: InMemoryInvocationExporter) -> list[str]:
    return [
        content_text(request.invocations[0].invocation.user_content) for request in exporter.get_finished_requests()
    ]


def test_invocations_under_a_remote_parent_complete_when_their_local_root_ends(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    processor = attach(provider, exporter)
    agent = TravelAgent(provider)
    token = otel_context.attach(_remote_parent())
    try:
        agent.run(WEATHER)  # two local roots of one distributed trace, e.g. two requests of one frontend trace
        agent.run(CURRENCY)
    finally:
        otel_context.detach(token)
    assert processor.force_flush(10_000)
    requests = exporter.get_finished_requests()
    assert _user_texts(exporter) == [WEATHER.user_text, CURRENCY.user_text]
    assert {r.trace_id for r in requests} == {hex_id(REMOTE_TRACE_ID, 32)}
    assert len({r.invocations[0].span_id for r in requests}) == 2
    processor.shutdown()


def test_a_trace_whose_root_never_ends_locally_is_handed_on_after_the_idle_timeout(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    processor = attach(provider, exporter, settings=ProcessorSettings(trace_idle_timeout=0.2))
    tracer = provider.get_tracer("web.server")
    request_span = tracer.start_span("POST /chat")  # the root stays open: the agent runs inside it
    with trace.use_span(request_span, end_on_exit=False):
        TravelAgent(provider).run(WEATHER)
    assert processor.force_flush(10_000)
    assert exporter.get_finished_requests() == []  # incomplete: its root is still open
    assert processor.stats()["open_traces"] == 1
    assert wait_until(lambda: len(exporter.get_finished_requests()) == 1)
    assert _user_texts(exporter) == [WEATHER.user_text]
    assert processor.stats()["traces.idle_flushed"] == 1
    request_span.end()
    processor.shutdown()


def test_filters_by_agent_name_and_root_span_name(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    by_agent = attach(provider, exporter, settings=ProcessorSettings(agent_names=("someone_else",)))
    TravelAgent(provider).run(WEATHER)
    assert by_agent.force_flush(10_000)
    assert exporter.get_finished_requests() == []
    by_agent.shutdown()

    kept = InMemoryInvocationExporter()
    by_root = attach(
        provider, kept, settings=ProcessorSettings(agent_names=("travel_assistant",), root_span_names=("invoke_agent",))
    )
    skipped = InMemoryInvocationExporter()
    other_root = attach(provider, skipped, settings=ProcessorSettings(root_span_names=("POST ",)))
    TravelAgent(provider).run(WEATHER)
    assert by_root.force_flush(10_000) and other_root.force_flush(10_000)
    assert _user_texts(kept) == [WEATHER.user_text]
    assert skipped.get_finished_requests() == []
    by_root.shutdown()
    other_root.shutdown()


def test_names_given_as_one_string_are_read_as_the_variable_is(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    settings = ProcessorSettings(agent_names="planner, travel_assistant", root_span_names="invoke_agent")
    assert (settings.agent_names, settings.root_span_names) == (("planner", "travel_assistant"), ("invoke_agent",))
    processor = attach(provider, exporter, settings=settings)
    TravelAgent(provider).run(WEATHER)
    assert processor.force_flush(10_000)
    assert _user_texts(exporter) == [WEATHER.user_text]  # not filtered out as agents named "p", "l", ...
    processor.shutdown()


@pytest.mark.parametrize("scope", [semconv.INSTRUMENTATION_SCOPE, "otel_eval.judge", *semconv.KAFKA_CLIENT_SCOPES])
def test_spans_of_the_evaluator_and_of_kafka_clients_are_never_evaluated(
    provider: TracerProvider, exporter: InMemoryInvocationExporter, scope: str
) -> None:
    processor = attach(provider, exporter)
    TravelAgent(provider, scope=scope).run(WEATHER)
    TravelAgent(provider).run(CURRENCY)
    assert processor.force_flush(10_000)
    assert _user_texts(exporter) == [CURRENCY.user_text]
    assert processor.stats()["open_traces"] == 0
    processor.shutdown()


def test_spans_started_under_suppressed_instrumentation_are_never_evaluated(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    processor = attach(provider, exporter)
    token = otel_context.attach(otel_context.set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
    try:
        TravelAgent(provider).run(WEATHER)  # e.g. a judge or exporter call traced by the SDK anyway
    finally:
        otel_context.detach(token)
    TravelAgent(provider).run(CURRENCY)
    assert processor.force_flush(10_000)
    assert _user_texts(exporter) == [CURRENCY.user_text]
    assert processor.stats()["open_traces"] == 0
    processor.shutdown()


def test_spans_the_sdk_did_not_sample_are_ignored(exporter: InMemoryInvocationExporter) -> None:
    provider = TracerProvider(sampler=ALWAYS_OFF)
    processor = attach(provider, exporter)
    TravelAgent(provider).run(WEATHER)
    assert processor.force_flush(10_000)
    assert exporter.get_finished_requests() == []
    provider.shutdown()


def test_sampling_is_deterministic_on_the_low_64_bits_of_the_trace_id() -> None:
    bound = sampling_bound(0.25)
    assert bound == 1 << 62
    assert sampling_bound(1.0) is None and sampling_bound(0.0) == 0
    with pytest.raises(ValueError, match="sample_rate"):
        sampling_bound(1.5)


def test_criteria_and_unknown_metrics_are_checked_at_construction(exporter: InMemoryInvocationExporter) -> None:
    from otel_eval.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="tool_trajectory_avg_scor"):
        EvaluationSpanProcessor({"tool_trajectory_avg_scor": 1.0}, exporter=exporter)
    with pytest.raises(ConfigurationError, match="tool_trajectory_avg_score"):
        EvaluationSpanProcessor({"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "SOMETIMES"}})
    with pytest.raises(ValueError, match="max_open_traces"):
        EvaluationSpanProcessor(exporter=exporter, settings=ProcessorSettings(max_open_traces=0))


def test_requests_carry_the_criteria_and_the_golden_case_for_a_remote_worker(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    from otel_eval.demo import golden_eval_set

    processor = attach(
        provider,
        exporter,
        settings=ProcessorSettings(eval_set=golden_eval_set()),
        criteria={"criteria": {"tool_trajectory_avg_score": 0.9}},
    )
    TravelAgent(provider).run(WEATHER)
    TravelAgent(provider).run(SCENARIOS[-1])  # the greeting: no golden case
    assert processor.force_flush(10_000)
    matched, unmatched = exporter.get_finished_requests()
    assert matched.criteria == {"tool_trajectory_avg_score": {"threshold": 0.9}}
    assert matched.eval_case is not None and matched.eval_case.eval_id == "weather_paris"
    assert matched.eval_set_id == "travel_assistant_golden"
    assert unmatched.eval_case is None and unmatched.eval_set_id is None
    processor.shutdown()
