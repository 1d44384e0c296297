"""The Collector path: OTLP protobuf spans from Kafka -> traces (idle timeout) -> the same evaluation as in-process.

Unit tests drive :class:`TraceAssembler` with real SDK spans; the end-to-end test runs OTel SDK -> OTLP/HTTP ->
rotel (a real collector) -> Kafka (protobuf) -> worker -> emitted scores, and compares them with the in-process
evaluation of the very same spans.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import semconv
from otel_eval.demo import SCENARIOS, TravelAgent, golden_eval_set
from otel_eval.errors import InputError
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.model import EvalSet
from otel_eval.model.messages import EvaluationRequest
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import SpanEvent, spans_from_readable
from otel_eval.traces.log_records import SpanLogRecord
from otel_eval.worker.collector_path import TraceAssembler, parse_otlp_logs, parse_otlp_spans, requests_from_trace
from tests._kafka import random_topic, read_topic
from tests.reconstruct.adk_agents import record_runs
from tests.worker._collector import agent_spans, collector_worker, run_until_scored, running_rotel
from tests.worker._harness import MemoryTelemetry


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_traces_spread_over_messages_are_assembled_after_the_idle_timeout() -> None:
    spans = agent_spans(runs=2)
    traces = sorted({s.context.trace_id for s in spans})
    assert len(traces) == 2
    first, second = ([s for s in spans if s.context.trace_id == t] for t in traces)
    # Message 10 mixes both traces; the first trace's last spans arrive in message 11.
    clock = FakeClock()
    assembler = TraceAssembler(idle_timeout=5.0, clock=clock)
    message_10 = encode_spans(first[:2] + second).SerializeToString()
    message_11 = encode_spans(first[2:]).SerializeToString()
    assembler.add(0, 10, parse_otlp_spans(message_10, "t/0@10"))
    clock.now = 3.0
    assembler.add(0, 11, parse_otlp_spans(message_11, "t/0@11"))
    assert assembler.committable(0, 12) == 10  # both traces are open: nothing past their first message
    clock.now = 6.0
    ready = assembler.ready()
    assert [t.trace_id for t in ready] == [format(traces[1], "032x")]  # idle for 6 s; the other only for 3 s
    assert assembler.committable(0, 12) == 10  # the first trace, still open, started at offset 10
    clock.now = 8.1
    (done,) = assembler.ready()
    assert len(done.spans) == len(first)
    assert assembler.committable(0, 12) == 12
    # Spans of a trace handed on are late: dropped and counted, the trace is not opened again.
    assembler.add(0, 11, parse_otlp_spans(message_11, "t/0@11"))
    assert len(assembler) == 0 and assembler.take_span_drops() == {semconv.DROP_LATE: len(first) - 2}
    # After a rewind (the partition forgotten) they are read again; a message read twice adds nothing.
    assembler.forget([0])
    assembler.add(0, 11, parse_otlp_spans(message_11, "t/0@11"))
    assembler.add(0, 11, parse_otlp_spans(message_11, "t/0@11"))
    (again,) = assembler.ready(everything=True)
    assert len(again.spans) == len(first) - 2
    # The rebuilt invocation is the one the in-process path rebuilds from the same spans.
    (request,) = requests_from_trace(done)
    (in_process,) = rebuild_traces(spans_from_readable(first))
    assert request.invocations == in_process.invocations


def test_evaluator_spans_and_their_children_are_ignored() -> None:
    spans = agent_spans(runs=1)
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    root = spans[-1]
    context = trace.set_span_in_context(trace.NonRecordingSpan(root.context))
    evaluator = provider.get_tracer(semconv.INSTRUMENTATION_SCOPE)
    judge = provider.get_tracer("google.genai")
    with (
        evaluator.start_as_current_span("evaluate hallucinations_v1", context=context),
        judge.start_as_current_span("generate_content judge"),
    ):
        pass
    assembler = TraceAssembler(idle_timeout=1.0)
    assembler.add(0, 0, parse_otlp_spans(encode_spans(list(exporter.get_finished_spans())).SerializeToString(), "x"))
    assert len(assembler) == 0  # only evaluator traffic: the evaluated trace is not re-opened
    assembler.add(0, 1, parse_otlp_spans(encode_spans(spans).SerializeToString(), "y"))
    (trace_,) = assembler.ready(everything=True)
    assert len(trace_.spans) == len(spans)


def test_bounds_and_bad_messages() -> None:
    spans = agent_spans(runs=3)
    per_trace = len(spans) // 3
    assembler = TraceAssembler(idle_timeout=60.0, max_open_traces=2)
    assembler.add(1, 5, spans_from_readable(spans))
    assert len(assembler) == 2  # the oldest trace was handed on early
    assert [len(trace.spans) for trace in assembler.ready()] == [per_trace]
    assembler = TraceAssembler(idle_timeout=60.0, max_spans_per_trace=2)
    assembler.add(1, 5, spans_from_readable(spans))
    assert len(assembler) == 0  # each trace handed on when it held two spans
    assert [len(trace.spans) for trace in assembler.ready()] == [2, 2, 2]
    assert assembler.take_span_drops() == {semconv.DROP_MAX_SPANS_PER_TRACE: len(spans) - 6}
    with pytest.raises(InputError, match="t/3@7: not an OTLP protobuf"):
        parse_otlp_spans(b"\xff\xff\xff not protobuf", "t/3@7")
    with pytest.raises(InputError, match="empty message"):
        parse_otlp_spans(b"", "t/3@8")


def test_a_trace_that_never_goes_idle_is_handed_on_when_full_and_stops_holding_back_the_offsets() -> None:
    # A root span around a process's whole life: it never ends, its children keep coming, one message each, never
    # idle for the idle timeout. Held open, it kept the partition's committable offset at its first message and every
    # record that carried a span of it, for as long as the process lived.
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("daemon")
    lifelong = tracer.start_span("serve forever")
    with trace.use_span(lifelong, end_on_exit=False):
        for index in range(10):
            tracer.start_span(f"handle {index}").end()
    children = exporter.get_finished_spans()
    clock = FakeClock()
    assembler = TraceAssembler(idle_timeout=5.0, max_spans_per_trace=4, clock=clock)
    ready = []
    for offset, child in enumerate(children):
        clock.now = float(offset)
        message = encode_spans([child]).SerializeToString()
        assembler.add(0, offset, parse_otlp_spans(message, f"t/0@{offset}"), message)
        ready += assembler.ready()
    (full,) = ready
    assert [span.name for span in full.spans] == [f"handle {index}" for index in range(4)]
    assert sorted(full.messages) == [(0, offset) for offset in range(4)]
    assert len(assembler) == 0 and assembler.committable(0, len(children)) == len(children)
    assert assembler.take_span_drops() == {semconv.DROP_MAX_SPANS_PER_TRACE: len(children) - 4}


def _scores(telemetry: MemoryTelemetry) -> set[tuple[str, str, str, str, float | None]]:
    return {(e.trace_id, e.span_id, e.metric, e.label, e.score) for e in telemetry.events()}


def test_the_trace_handed_on_early_is_the_one_seen_least_recently_and_held_traces_stay_open() -> None:
    spans = agent_spans(runs=3)
    a, b, c = ([s for s in spans if s.context.trace_id == t] for t in dict.fromkeys(s.context.trace_id for s in spans))
    clock = FakeClock()
    assembler = TraceAssembler(idle_timeout=5.0, max_open_traces=2, clock=clock)
    assembler.add(0, 0, spans_from_readable(a[:1]))
    clock.now = 1.0
    assembler.add(0, 1, spans_from_readable(b))
    clock.now = 2.0
    assembler.add(0, 2, spans_from_readable(a[1:]))  # a, opened first, is seen again after b
    clock.now = 3.0
    assembler.add(0, 3, spans_from_readable(c))
    [early] = assembler.ready()
    assert early.trace_id == format(b[0].context.trace_id, "032x")
    clock.now = 7.5
    a_id = format(a[0].context.trace_id, "032x")
    assert [t.trace_id for t in assembler.idle()] == [a_id]  # idle by now: a (seen at 2), not c (seen at 3)
    assert assembler.ready(held=lambda trace: True) == [] and len(assembler) == 2
    [whole] = assembler.ready(held=lambda trace: False)
    assert whole.trace_id == a_id and len(whole.spans) == len(a) and len(assembler) == 1


def test_traces_handed_on_early_are_said_at_once_then_counted_at_most_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    assembler = TraceAssembler(idle_timeout=60.0, max_open_traces=2, clock=clock)
    said = "2 traces open (max_open_traces): handed on {} trace(s) early"
    assembler.add(1, 5, spans_from_readable(agent_spans(runs=3)))
    assert [r.getMessage().startswith(said.format(1)) for r in caplog.records] == [True]
    assembler.add(1, 6, spans_from_readable(agent_spans(runs=3)))  # three more within the minute: not a line each
    assert len(caplog.records) == 1
    clock.now = 61.0
    assembler.add(1, 7, spans_from_readable(agent_spans(runs=1)))
    assert [r.getMessage().startswith(said.format(4)) for r in caplog.records[1:]] == [True]


@pytest.mark.kafka
@pytest.mark.integration
async def test_collector_path_through_rotel_scores_like_the_in_process_path(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    spans_topic = random_topic("otlp_spans")
    telemetry, reference = MemoryTelemetry(), MemoryTelemetry()

    def core(t: MemoryTelemetry) -> EvaluationCore:
        return EvaluationCore(eval_set=golden_eval_set(), emitters=t.emitters(), judge_configured=False)

    worker = collector_worker(kafka_bootstrap, core(telemetry), telemetry, spans_topic)
    with running_rotel(kafka_bootstrap, spans_topic, tmp_path) as endpoint:
        local = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint), schedule_delay_millis=100))
        provider.add_span_processor(SimpleSpanProcessor(local))
        agent = TravelAgent(provider)
        for index, scenario in enumerate(SCENARIOS):
            agent.run(scenario, conversation_id=f"collector-{index}")
        assert provider.force_flush(10_000)
        spans = list(local.get_finished_spans())
        # rotel wrote the spans as OTLP protobuf messages (one ExportTraceServiceRequest each).
        messages = await read_topic(kafka_bootstrap, spans_topic, expected=1, timeout=20)
        assert messages and all(parse_otlp_spans(m.value, "check") for m in messages)

        # The in-process path on the same spans is the reference.
        requests = [
            EvaluationRequest(invocations=[invocation])
            for trace_ in rebuild_traces(spans_from_readable(spans))
            for invocation in trace_.invocations
        ]
        reference_core = core(reference)
        for request_ in requests:
            await reference_core.evaluate(request_)
        expected = _scores(reference)
        assert len({(t, s) for t, s, *_ in expected}) == len(SCENARIOS)

        await run_until_scored(worker, lambda: len(telemetry.events()) >= len(expected))
        provider.shutdown()
    assert _scores(telemetry) == expected
    assert len(telemetry.events()) == len(reference.events())
    assert worker.metrics.snapshot().get("dead_letters", 0) == 0
    telemetry.shutdown()
    reference.shutdown()


ADK_SCENARIOS = ("single_tool", "parallel_tools", "multi_turn", "transfer")
ADK_CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.6}


def _score_counts(telemetry: MemoryTelemetry) -> Counter[tuple[str, str, float | None]]:
    timed = "invocation_duration_v1"  # wall time differs between any two runs
    return Counter((e.metric, e.label, e.score) for e in telemetry.events() if e.metric != timed)


@pytest.mark.kafka
@pytest.mark.integration
@pytest.mark.usefixtures("quiet_adk")
async def test_event_only_adk_logs_through_rotel_score_like_span_only(kafka_bootstrap: str, tmp_path: Path) -> None:
    """ADK with EVENT_ONLY: spans and log records exported by the SDK's OTLP/HTTP exporters to rotel, which writes
    otlp_spans and otlp_logs; the worker joins them and scores every invocation as the SPAN_ONLY run scores."""
    span_only = await record_runs(ADK_SCENARIOS, capture_mode="SPAN_ONLY")
    event_only = await record_runs(ADK_SCENARIOS, capture_mode="EVENT_ONLY")
    eval_set = EvalSet.model_validate({"eval_set_id": "adk", "eval_cases": span_only.cases})
    spans_topic, logs_topic = random_topic("otlp_spans"), random_topic("otlp_logs")
    telemetry, reference = MemoryTelemetry(), MemoryTelemetry()

    def core(t: MemoryTelemetry) -> EvaluationCore:
        return EvaluationCore(criteria=ADK_CRITERIA, eval_set=eval_set, emitters=t.emitters(), judge_configured=False)

    reference_core = core(reference)  # SPAN_ONLY spans, rebuilt as in-process
    for trace_ in rebuild_traces(spans_from_readable(span_only.spans)):
        for invocation in trace_.invocations:
            await reference_core.evaluate(EvaluationRequest(invocations=[invocation]))
    expected = _score_counts(reference)
    assert ("tool_trajectory_avg_score", "pass", 1.0) in expected

    worker = collector_worker(kafka_bootstrap, core(telemetry), telemetry, spans_topic, logs_topic)
    with running_rotel(kafka_bootstrap, spans_topic, tmp_path, logs_topic=logs_topic) as endpoint:
        base = endpoint.removesuffix("/v1/traces")
        assert OTLPLogExporter(endpoint=f"{base}/v1/logs").export(event_only.logs).name == "SUCCESS"
        assert OTLPSpanExporter(endpoint=endpoint).export(event_only.spans).name == "SUCCESS"
        logs_messages = await read_topic(kafka_bootstrap, logs_topic, expected=1, timeout=20)
        assert logs_messages and all(parse_otlp_logs(m.value, "check") for m in logs_messages)
        await run_until_scored(worker, lambda: sum(_score_counts(telemetry).values()) >= sum(expected.values()))
    assert _score_counts(telemetry) == expected
    counts = worker.metrics.snapshot()
    assert not any(key.startswith("log_records.dropped") for key in counts), counts
    assert counts.get("dead_letters", 0) == 0
    telemetry.shutdown()
    reference.shutdown()


def test_log_records_after_their_trace_are_counted_late() -> None:
    clock = FakeClock()
    assembler = TraceAssembler(1.0, clock=clock)
    spans = spans_from_readable(agent_spans(1))
    trace_id, span_id = spans[0].trace_id, spans[0].span_id
    record = SpanLogRecord(trace_id, span_id, SpanEvent(semconv.GEN_AI_OPERATION_DETAILS_EVENT, 1, {}))
    assembler.add(0, 0, spans)
    assembler.add_logs(0, 0, [record])
    clock.now = 2.0
    (trace_,) = assembler.ready()
    assert trace_.log_records == [record]
    assert assembler.committable(0, 5, logs=True) == 5  # handed on: holds nothing back
    assembler.add_logs(0, 1, [record])
    assert assembler.take_log_drops() == Counter({semconv.DROP_LATE: 1})
    assert len(assembler) == 0
