"""The worker's ``OTEL_EVAL_EMIT`` / ``--emit``: the shared evaluation core built from the worker's settings emits only
the selected signals (agent -> Kafka -> the real worker, read back from in-memory exporters); the results topic does
not depend on it; a bad value stops the worker at start-up, naming the variable and the value."""

from __future__ import annotations

import asyncio
import pathlib
import sys

import pytest
from click.testing import CliRunner
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor, semconv
from otel_eval import environment_variables as env
from otel_eval.cli import main
from otel_eval.demo import SCENARIOS, TravelAgent, golden_eval_set
from otel_eval.errors import ConfigurationError
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord
from otel_eval.transport.kafka import KafkaInvocationExporter
from otel_eval.worker.service import Worker
from otel_eval.worker.settings import WorkerSettings
from otel_eval.worker.telemetry import create_telemetry
from tests._kafka import create_topics, random_topic, read_topic
from tests.waiting import wait_until, wait_until_async
from tests.worker._harness import MemoryTelemetry, OtlpSink, running_worker, worker_settings


@pytest.fixture(autouse=True)
def _no_default_judge(clean_genai_env: None) -> None:
    """No judge credentials: the worker's default criteria are the efficiency metrics."""


def test_the_worker_reads_its_selection_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert WorkerSettings().emit_signals == frozenset(env.EMIT_SIGNALS)  # all four by default, as before
    monkeypatch.setenv(env.OTEL_EVAL_EMIT, " Metrics,events")
    assert WorkerSettings().emit == "events,metrics"
    assert WorkerSettings().emit_signals == {"events", "metrics"}
    assert WorkerSettings(emit="none").emit_signals == frozenset()


def test_a_bad_selection_stops_the_worker_with_exit_code_2_naming_the_variable_and_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = CliRunner().invoke(main, ["worker", "--telemetry", "none", "--emit", "events,traces"])
    assert result.exit_code == 2
    assert "--emit events,traces: unknown signal 'traces'" in result.output
    monkeypatch.setenv(env.OTEL_EVAL_EMIT, "logs")
    result = CliRunner().invoke(main, ["worker", "--telemetry", "none"])
    assert result.exit_code == 2
    assert "OTEL_EVAL_EMIT='logs': unknown signal 'logs'" in result.output


@pytest.mark.kafka
@pytest.mark.integration
@pytest.mark.parametrize("emit", ["events,metrics", "spans"])
async def test_the_worker_emits_only_the_selected_signals(kafka_bootstrap: str, emit: str) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic])
    provider = TracerProvider()
    processor = EvaluationSpanProcessor(exporter=KafkaInvocationExporter(kafka_bootstrap, topic=requests_topic))
    provider.add_span_processor(processor)
    agent = TravelAgent(provider)
    telemetry = MemoryTelemetry()
    settings = worker_settings(
        kafka_bootstrap,
        kafka_requests_topic=requests_topic,
        kafka_results_topic=results_topic,
        kafka_group_id=random_topic("group"),
        emit=emit,
    )
    worker = Worker(settings, telemetry=telemetry.providers)  # the core built from the settings, as in production
    try:
        async with running_worker(worker):
            for scenario in SCENARIOS[:2]:
                await asyncio.to_thread(agent.run, scenario)
            assert await asyncio.to_thread(processor.force_flush, 30_000)
            total = 2 * len(EFFICIENCY_METRICS)
            await wait_until_async(
                lambda: worker.metrics.snapshot().get("results_published", 0) >= total, timeout=60, what="the results"
            )
    finally:
        await asyncio.to_thread(processor.shutdown)
    published = [
        EvaluationRecord.model_validate_json(r.value) for r in await read_topic(kafka_bootstrap, results_topic)
    ]
    assert len(published) == total  # the results topic: every result, whatever is emitted
    assert len({(r.trace_id, r.span_id) for r in published}) == 2
    ids = sorted(r.result_id for r in published)
    events = sorted(e.result_id for e in telemetry.events())
    spans = telemetry.evaluation_spans()
    counted = sum(p.value for p in telemetry.metric_points(semconv.METRIC_EVALUATION_RESULTS))
    scores = sum(p.count for p in telemetry.metric_points(semconv.METRIC_EVALUATION_SCORE))
    if emit == "events,metrics":
        assert events == ids
        assert counted == len(ids) and scores == sum(r.score is not None for r in published)
        assert spans == []
    else:
        assert sorted(s.attributes[semconv.OTEL_EVAL_RESULT_ID] for s in spans) == ids
        assert events == [] and counted == 0 and scores == 0
    telemetry.shutdown()


def test_without_telemetry_the_core_counts_into_a_no_op_meter_provider_and_keeps_its_totals() -> None:
    """``--telemetry none``: the core's pipeline counters go to no provider (not the global one, which the worker
    never sets then and which would be looked up for every request); its in-process totals still count."""
    from opentelemetry.metrics import NoOpMeter

    from otel_eval.model.messages import EvaluationRequest
    from otel_eval.reconstruct import rebuild_traces
    from otel_eval.worker._evaluator import build_core
    from otel_eval.worker.telemetry import WorkerTelemetry
    from tests.reconstruct.recorded import demo_spans

    core = build_core(WorkerSettings(), WorkerTelemetry())
    pipeline = core.pipeline
    assert pipeline is not None
    assert isinstance(pipeline.meter, NoOpMeter)
    invocations = [i for _, spans in demo_spans() for t in rebuild_traces(spans) for i in t.invocations]
    assert invocations
    for invocation in invocations:
        assert core.start(EvaluationRequest(invocations=[invocation])).records
    assert pipeline.snapshot()["invocations.evaluated"] == len(invocations)


def test_prometheus_telemetry_without_its_exporter_names_the_variable_and_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # as an install without otel-eval[prometheus]
    with pytest.raises(ConfigurationError) as raised:
        create_telemetry("prometheus")
    assert str(raised.value) == (
        "OTEL_EVAL_WORKER_TELEMETRY=prometheus needs the 'prometheus_client' package, which is not installed: "
        "pip install 'otel-eval[prometheus]'"
    )


def test_the_worker_exports_its_metrics_every_otel_metric_export_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    sink = OtlpSink().start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "200")
    telemetry = create_telemetry("otlp")
    try:
        assert telemetry.meter_provider is not None
        telemetry.meter_provider.get_meter("test").create_counter("ticks").add(1)
        assert wait_until(lambda: sink.metric_exports >= 3, timeout=5)  # not at the 10 s default
    finally:
        telemetry.shutdown()
        sink.stop()


@pytest.mark.kafka
@pytest.mark.integration
@pytest.mark.parametrize("explanations", [None, "false"])
async def test_explanations_off_keep_the_tool_calls_off_the_results_topic_events_and_spans(
    kafka_bootstrap: str, explanations: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    """``OTEL_EVAL_EXPLANATIONS=false`` on the worker: the trajectory's explanation (which quotes the agent's tool calls
    and their arguments) is on no results-topic record, event or evaluation span; by default it is on each."""
    if explanations is None:
        monkeypatch.delenv(env.OTEL_EVAL_EXPLANATIONS, raising=False)
    else:
        monkeypatch.setenv(env.OTEL_EVAL_EXPLANATIONS, explanations)
    golden = tmp_path / "eval_set.json"
    golden.write_text(golden_eval_set().model_dump_json(), encoding="utf-8")
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic])
    provider = TracerProvider()
    processor = EvaluationSpanProcessor(exporter=KafkaInvocationExporter(kafka_bootstrap, topic=requests_topic))
    provider.add_span_processor(processor)
    telemetry = MemoryTelemetry()
    settings = worker_settings(
        kafka_bootstrap,
        kafka_requests_topic=requests_topic,
        kafka_results_topic=results_topic,
        kafka_group_id=random_topic("group"),
        metrics="tool_trajectory_avg_score",
        eval_set=str(golden),
    )
    worker = Worker(settings, telemetry=telemetry.providers)
    try:
        async with running_worker(worker):
            await asyncio.to_thread(TravelAgent(provider).run, next(s for s in SCENARIOS if s.key == "wrong_tool"))
            assert await asyncio.to_thread(processor.force_flush, 30_000)
            await wait_until_async(
                lambda: worker.metrics.snapshot().get("results_published", 0) >= 1, timeout=60, what="the result"
            )
    finally:
        await asyncio.to_thread(processor.shutdown)
    (published,) = [
        EvaluationRecord.model_validate_json(r.value) for r in await read_topic(kafka_bootstrap, results_topic)
    ]
    assert published.label == semconv.LABEL_FAIL
    (span,) = telemetry.evaluation_spans()
    (event,) = [data.log_record for data in telemetry.logs.get_finished_logs()]
    quoted = [
        published.explanation or "",
        str((event.attributes or {}).get(semconv.GEN_AI_EVALUATION_EXPLANATION, "")),
        str((span.attributes or {}).get(semconv.GEN_AI_EVALUATION_EXPLANATION, "")),
    ]
    if explanations:
        assert quoted == ["", "", ""]
    else:
        assert all('get_weather({"city": "London"})' in text for text in quoted)
    telemetry.shutdown()
