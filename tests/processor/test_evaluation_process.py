"""``isolation="process"``: the spans go to a real child process, whose real OTLP exporters deliver the scores.

Each test runs the child (``python -m otel_eval.processor._process.main``) and a loopback OTLP/HTTP
receiver; the scores are read from what the SDK's OTLP exporters sent, never from the processor's internals.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.errors import ConfigurationError
from otel_eval.metrics import default_registry
from otel_eval.model import EvalCase, EvalSet
from otel_eval.model.messages import EvaluationRecord
from otel_eval.processor._process.wire import Origins, SpanDecoder, encode_span
from otel_eval.traces import spans_from_readable
from otel_eval.transport import InMemoryInvocationExporter
from tests.processor.telemetry import evaluation_process_pid, is_running
from tests.reconstruct.adk_agents import SCENARIOS as ADK_SCENARIOS
from tests.reconstruct.adk_agents import adk_telemetry, global_logger_provider, run_turns, span_exporter
from tests.waiting import wait_until
from tests.worker._harness import MemoryTelemetry, OtlpSink, child_otlp_sink

pytestmark = pytest.mark.integration


class _Recorder(SpanProcessor):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


@pytest.fixture
def sink(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpSink]:
    """A receiver, and the child's exporters pointed at it through the SDK's own variables."""
    with child_otlp_sink(monkeypatch) as receiver:
        yield receiver


def _recorded_spans(invocations: int) -> list[ReadableSpan]:
    provider = TracerProvider()
    recorder = _Recorder()
    provider.add_span_processor(recorder)
    agent = TravelAgent(provider)
    for index in range(invocations):
        agent.run(SCENARIOS[index % len(SCENARIOS)])
    provider.shutdown()
    return recorder.spans


def _isolated_agent(
    *also: SpanProcessor, settings: ProcessorSettings | None = None, **options: Any
) -> tuple[TracerProvider, EvaluationSpanProcessor, TravelAgent]:
    """A travel agent with the processor in ``process`` isolation (with ``settings``, ``options``, and ``also``),
    its evaluation process started by a first invocation and flushed."""
    provider = TracerProvider()
    settings = replace(settings or ProcessorSettings(), isolation="process")
    processor = EvaluationSpanProcessor(settings=settings, **options)
    provider.add_span_processor(processor)
    for other in also:
        provider.add_span_processor(other)
    agent = TravelAgent(provider)
    agent.run(SCENARIOS[0])
    assert processor.force_flush(60_000)
    assert evaluation_process_pid() is not None
    return provider, processor, agent


def _scores(sink: OtlpSink) -> set[tuple[str, str, str, str, object]]:
    return {(e.trace_id, e.span_id, e.metric, e.label, e.score) for e in sink.events()}


def test_the_same_spans_score_the_same_in_a_child_process_as_on_threads(sink: OtlpSink) -> None:
    spans = _recorded_spans(len(SCENARIOS))
    isolated = EvaluationSpanProcessor(settings=ProcessorSettings(isolation="process"))
    for span in spans:
        isolated.on_end(span)
    assert isolated.force_flush(60_000)
    from_child = _scores(sink)
    assert isolated.stats()["evaluation_process.invocations.sampled"] == len(SCENARIOS)  # the child's own counts
    isolated.shutdown(30_000)
    sink.log_requests.clear()

    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(
        BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{sink.endpoint}/v1/logs"))
    )
    threaded = EvaluationSpanProcessor(logger_provider=logger_provider)
    for span in spans:
        threaded.on_end(span)
    assert threaded.force_flush(60_000)
    logger_provider.force_flush()
    threaded.shutdown()
    logger_provider.shutdown()

    trace_ids = {format(span.context.trace_id, "032x") for span in spans if span.context is not None}
    assert len(trace_ids) == len(SCENARIOS)
    assert {trace_id for trace_id, *_ in from_child} == trace_ids
    assert from_child == _scores(sink)
    assert sink.evaluation_span_count() > 0  # the child's evaluation spans went out through its trace exporter


def test_a_live_agent_scores_the_same_records_in_a_child_process_as_on_threads(sink: OtlpSink) -> None:
    # Both processors on one provider see every start and end of the same spans: the child's records (from its
    # exporters) equal the in-thread isolation's, result ids included.
    telemetry = MemoryTelemetry()
    providers = telemetry.providers
    threaded = EvaluationSpanProcessor(
        tracer_provider=providers.tracer_provider,
        logger_provider=providers.logger_provider,
        meter_provider=providers.meter_provider,
    )
    _, isolated, agent = _isolated_agent(threaded)
    for index in range(3 * len(SCENARIOS)):
        agent.run(SCENARIOS[index % len(SCENARIOS)])
    assert isolated.force_flush(60_000) and threaded.force_flush(60_000)
    child_stats = isolated.stats()
    isolated.shutdown(30_000)
    threaded.shutdown()
    evaluated = 3 * len(SCENARIOS) + 1  # and the first, which started the child
    assert child_stats["evaluation_process.invocations.sampled"] == evaluated
    from_child, on_threads = set(sink.events()), set(telemetry.events())
    assert len({event.trace_id for event in on_threads}) == evaluated
    assert from_child == on_threads


def test_a_killed_evaluation_process_is_replaced_and_the_agent_never_sees_it(sink: OtlpSink) -> None:
    provider, processor, agent = _isolated_agent()
    first = evaluation_process_pid()
    assert first is not None
    os.kill(first, signal.SIGKILL)

    def replaced() -> bool:
        agent.run(SCENARIOS[1])  # never raises, never blocks, while the child is dead and restarting
        pid = evaluation_process_pid()
        return pid is not None and pid != first

    assert wait_until(replaced, timeout=30)
    before = {trace_id for trace_id, *_ in _scores(sink)}
    agent.run(SCENARIOS[2])
    assert not processor.force_flush(60_000)  # the spans lost with the killed one were not evaluated
    after = {trace_id for trace_id, *_ in _scores(sink)} - before
    assert after, "the new evaluation process scored the invocation that ran after it started"
    assert processor.stats()[f"spans.dropped.{semconv.DROP_TRANSPORT_ERROR}"] > 0
    provider.shutdown()


def test_a_flush_fails_once_when_spans_were_lost_with_a_killed_evaluation_process(sink: OtlpSink) -> None:
    """``force_flush`` said True after the child was killed and the spans sent its way were lost (counted as
    dropped): the SDK's contract is that it says whether everything handed on before it was exported."""
    provider, processor, agent = _isolated_agent()
    first = evaluation_process_pid()
    assert first is not None
    os.kill(first, signal.SIGKILL)
    assert wait_until(lambda: not is_running(first), timeout=10)
    # Its spans are lost: refused by the dead one's socket (counted as dropped), none starts for a second (counted
    # too), or written before its socket closed and never evaluated.
    agent.run(SCENARIOS[1])
    assert not processor.force_flush(60_000)
    dropped = f"spans.dropped.{semconv.DROP_TRANSPORT_ERROR}"

    def replaced() -> bool:
        agent.run(SCENARIOS[1])
        pid = evaluation_process_pid()
        return pid is not None and pid != first

    assert wait_until(replaced, timeout=30)
    processor.force_flush(60_000)  # says whether spans were lost while the new one was starting
    lost = processor.stats().get(dropped, 0)
    agent.run(SCENARIOS[2])
    assert processor.force_flush(60_000)  # each loss fails one flush: nothing more was lost
    assert processor.stats().get(dropped, 0) == lost
    provider.shutdown()


def test_shutdown_kills_a_hung_evaluation_process_within_its_timeout(sink: OtlpSink) -> None:
    _provider, processor, agent = _isolated_agent()
    pid = evaluation_process_pid()
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # hung: reads nothing, answers nothing
    try:
        agent.run(SCENARIOS[1])
        done = threading.Thread(target=processor.shutdown, kwargs={"timeout_millis": 1500})
        done.start()
        done.join(60)
        assert not done.is_alive()
        assert wait_until(lambda: not is_running(pid), timeout=10)  # killed: a stopped process ends no other way
    finally:
        if is_running(pid):
            os.kill(pid, signal.SIGKILL)


def test_the_child_runs_only_the_metrics_the_settings_name(sink: OtlpSink) -> None:
    spans = _recorded_spans(len(SCENARIOS))
    settings = ProcessorSettings(isolation="process", metrics=("tool_call_count_v1",))
    isolated = EvaluationSpanProcessor(settings=settings)
    for span in spans:
        isolated.on_end(span)
    assert isolated.force_flush(60_000)
    try:
        assert isolated.stats()["evaluation_process.invocations.evaluated"] == len(SCENARIOS)
        events = sink.events()
        assert {event.metric for event in events} == {"tool_call_count_v1"}  # not ADK's other efficiency metrics
        assert len(events) == len(SCENARIOS)
    finally:
        isolated.shutdown(30_000)


def test_an_unknown_metric_to_run_fails_at_start_up_in_this_process() -> None:
    with pytest.raises(ConfigurationError, match=r"OTEL_EVAL_METRICS / metrics: unknown metric 'tool_calls'"):
        EvaluationSpanProcessor(settings=ProcessorSettings(isolation="process", metrics="tool_calls"))
    assert evaluation_process_pid() is None  # no child was started


def test_objects_that_cannot_cross_into_the_child_are_refused() -> None:
    with pytest.raises(TypeError, match="registry"):
        EvaluationSpanProcessor(settings=ProcessorSettings(isolation="process"), registry=default_registry())
    with pytest.raises(TypeError, match="tracer_provider"):
        EvaluationSpanProcessor(settings=ProcessorSettings(isolation="process"), tracer_provider=TracerProvider())
    with pytest.raises(ValueError, match="isolation"):
        EvaluationSpanProcessor(settings=ProcessorSettings(isolation="fork"))


def test_an_unknown_exporter_name_fails_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "no-such-exporter")
    with pytest.raises(ConfigurationError, match=r"OTEL_LOGS_EXPORTER.*no-such-exporter"):
        EvaluationSpanProcessor(settings=ProcessorSettings(isolation="process"))


def test_from_env_with_kafka_says_the_isolation_is_not_used(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_EVAL_ISOLATION", "process")
    monkeypatch.setenv("OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")  # never reached: nothing is sent
    with caplog.at_level("INFO", logger="otel_eval.processor._settings"):
        processor = EvaluationSpanProcessor.from_env()
    try:
        assert "OTEL_EVAL_ISOLATION=process are not used here" in caplog.text
        assert "isolation='process'" not in repr(processor)
    finally:
        processor.shutdown(1_000)


def test_from_env_with_process_isolation_leaves_out_the_in_thread_providers_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, sink: OtlpSink
) -> None:
    monkeypatch.setenv("OTEL_EVAL_ISOLATION", "process")
    with caplog.at_level("INFO", logger="otel_eval.processor._settings"):
        # The shipped examples' one line for the in-thread set-up (their --otlp mode) runs under process isolation.
        processor = EvaluationSpanProcessor.from_env(tracer_provider=TracerProvider(), logger_provider=None)
    try:
        assert "isolation='process'" in repr(processor)
        assert "so tracer_provider= are not used there" in caplog.text
    finally:
        processor.shutdown(10_000)
    with pytest.raises(TypeError, match="tracer_provider"):  # given to the constructor: refused, by name
        EvaluationSpanProcessor(settings=ProcessorSettings(isolation="process"), tracer_provider=TracerProvider())


def test_from_env_reads_the_isolation(monkeypatch: pytest.MonkeyPatch, sink: OtlpSink) -> None:
    monkeypatch.setenv("OTEL_EVAL_ISOLATION", "process")
    processor = EvaluationSpanProcessor.from_env()
    try:
        assert "isolation='process'" in repr(processor)
    finally:
        processor.shutdown(10_000)
    monkeypatch.setenv("OTEL_EVAL_ISOLATION", "forked")
    with pytest.raises(ConfigurationError, match="OTEL_EVAL_ISOLATION"):
        EvaluationSpanProcessor.from_env()


def test_spans_cross_the_wire_unchanged() -> None:
    spans = _recorded_spans(len(SCENARIOS))
    origins = Origins()
    encoded = [encode_span(span, origins) for span in spans]
    decoder = SpanDecoder()
    decoder.add_origins(origins.take_new())
    assert spans_from_readable([decoder.span(e) for e in encoded]) == spans_from_readable(spans)


@pytest.mark.usefixtures("quiet_adk")
async def test_event_only_content_log_records_reach_the_child(sink: OtlpSink) -> None:
    # A real ADK agent under EVENT_ONLY: its messages exist only on log records, which the companion
    # LogRecordProcessor ships with the spans. The reference metrics read that content: they pass only if it crossed.
    span_exporter()  # the session's global SDK tracer provider, which ADK's proxy tracer uses
    tracer_provider = trace.get_tracer_provider()
    assert isinstance(tracer_provider, TracerProvider)
    logger_provider = global_logger_provider()
    golden_exporter = InMemoryInvocationExporter()
    recorder = EvaluationSpanProcessor(exporter=golden_exporter)
    tracer_provider.add_span_processor(recorder)
    with adk_telemetry(schema=2, capture_mode="SPAN_ONLY"):
        await run_turns(ADK_SCENARIOS["single_tool"]())
    assert recorder.force_flush(30_000)
    recorder.shutdown()
    (request,) = golden_exporter.get_finished_requests()
    golden = request.invocations[0].invocation
    eval_set = EvalSet(eval_set_id="event-only", eval_cases=[EvalCase(eval_id="c1", conversation=[golden])])

    criteria = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
    processor = EvaluationSpanProcessor(
        criteria=criteria, settings=ProcessorSettings(eval_set=eval_set, isolation="process")
    )
    tracer_provider.add_span_processor(processor)
    logger_provider.add_log_record_processor(processor.log_record_processor)
    try:
        with adk_telemetry(schema=2, capture_mode="EVENT_ONLY"):
            await run_turns(ADK_SCENARIOS["single_tool"]())
        assert processor.force_flush(60_000)
    finally:
        processor.shutdown(30_000)
    scores = {(e.metric, e.score, e.label) for e in sink.events()}
    assert ("tool_trajectory_avg_score", 1.0, "pass") in scores
    assert ("response_match_score", 1.0, "pass") in scores


def test_a_child_that_falls_behind_makes_the_agent_shed_whole_traces(sink: OtlpSink) -> None:
    recorder = _Recorder()
    provider, processor, agent = _isolated_agent(
        recorder, settings=ProcessorSettings(max_pending_spans=64)
    )  # sheds past 32 spans queued
    pid = evaluation_process_pid()
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # reads nothing: the agent's process must stop sending
    try:
        index = 0

        def shedding() -> bool:
            nonlocal index
            index += 1
            agent.run(SCENARIOS[index % len(SCENARIOS)])
            return processor.stats().get(f"spans.dropped.{semconv.DROP_TRANSPORT_QUEUE_FULL}", 0) > 0

        assert wait_until(shedding, timeout=60)
        for extra in range(20):  # shed in on_end now, with traces whose first spans went out before
            agent.run(SCENARIOS[extra % len(SCENARIOS)])
    finally:
        os.kill(pid, signal.SIGCONT)
    for extra in range(5):
        agent.run(SCENARIOS[extra % len(SCENARIOS)])
    assert processor.force_flush(60_000)
    provider.shutdown()

    tools: dict[str, int] = {}
    for span in recorder.spans:
        trace_id = format(span.context.trace_id, "032x") if span.context is not None else ""
        is_tool = (span.attributes or {}).get("gen_ai.operation.name") == "execute_tool"
        tools[trace_id] = tools.get(trace_id, 0) + int(is_tool)
    counted = {e.trace_id: e.score for e in sink.events() if e.metric == "tool_call_count_v1"}
    assert len(counted) < len(tools)  # some traces were shed ...
    assert {trace_id: tools[trace_id] for trace_id in counted} == counted  # ... and none was evaluated in part


def test_a_forked_agent_process_starts_its_own_evaluation_process(sink: OtlpSink) -> None:
    provider, processor, agent = _isolated_agent()
    parent_child = evaluation_process_pid()
    pid = os.fork()
    if pid == 0:  # the forked agent: its invocation is scored by a new evaluation process of its own
        try:
            agent.run(SCENARIOS[1])
            flushed = processor.force_flush(60_000)
            own = evaluation_process_pid()
            provider.shutdown()
            os._exit(0 if flushed and own not in (None, parent_child) else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    agent.run(SCENARIOS[2])  # the parent's evaluation process is untouched by the fork
    assert processor.force_flush(60_000)
    assert evaluation_process_pid() == parent_child
    provider.shutdown()
    assert len({trace_id for trace_id, *_ in _scores(sink)}) == 3


def test_enrich_exports_each_root_span_once_with_the_scores_the_child_worked_out(sink: OtlpSink) -> None:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    processor = EvaluationSpanProcessor(
        settings=ProcessorSettings(isolation="process"), enrich=SimpleSpanProcessor(exported)
    )
    provider.add_span_processor(processor)
    agent = TravelAgent(provider)
    for scenario in SCENARIOS:
        agent.run(scenario)
    assert processor.force_flush(60_000)
    provider.shutdown()

    spans = exported.get_finished_spans()
    assert len({(s.context.trace_id, s.context.span_id) for s in spans if s.context is not None}) == len(spans)
    roots = [span for span in spans if span.parent is None]
    assert len(roots) == len(SCENARIOS)
    scored: dict[str, dict[str, object]] = {e.trace_id: {} for e in sink.events()}
    for event in sink.events():
        scored[event.trace_id][semconv.OTEL_EVAL_LABEL_ATTRIBUTE_TEMPLATE.format(metric=event.metric)] = event.label
        if event.score is not None:
            scored[event.trace_id][semconv.OTEL_EVAL_SCORE_ATTRIBUTE_TEMPLATE.format(metric=event.metric)] = event.score
    for root in roots:
        assert root.context is not None
        attributes = dict(root.attributes or {})
        expected = scored[format(root.context.trace_id, "032x")]
        assert expected  # the child scored it ...
        assert {
            key: attributes.get(key) for key in expected
        } == expected  # ... and the root carries those scores and labels


def test_sinks_get_the_records_the_evaluation_process_sends_back(sink: OtlpSink) -> None:
    records: list[EvaluationRecord] = []
    provider, processor, agent = _isolated_agent(sinks=[records.extend])
    agent.run(SCENARIOS[1])
    assert processor.force_flush(60_000)
    provider.shutdown()
    assert len({r.trace_id for r in records}) == 2
    assert {(r.trace_id, r.span_id, r.metric_name, r.score) for r in records} == {
        (e.trace_id, e.span_id, e.metric, e.score) for e in sink.events()
    }
