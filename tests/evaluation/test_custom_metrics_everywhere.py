"""One ADK custom metric, configured once, gives the same scores in ``otel-eval run``, in the embedded worker (the
processor configured by ``OTEL_EVAL_CRITERIA``) and in the Kafka worker's core (``--criteria FILE``)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, environment_variables, semconv
from otel_eval.cli import main
from otel_eval.demo import TravelAgent
from otel_eval.demo.workload import Scenario, ToolStep
from otel_eval.errors import ConfigurationError
from otel_eval.evaluation.sessions import SessionLimits
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import spans_from_readable
from otel_eval.worker.service import build_core
from otel_eval.worker.settings import WorkerSettings
from tests.metrics import custom_metrics_fixture
from tests.processor.telemetry import Telemetry, hex_id
from tests.reconstruct.adk_agents import adk_telemetry
from tests.reconstruct.adk_sessions import RecordedSessions, record_sessions
from tests.waiting import wait_until
from tests.worker._harness import MemoryTelemetry

METRIC = "answer_has_digit"
CONFIG: dict[str, Any] = {
    "criteria": {METRIC: 0.5},
    "custom_metrics": {METRIC: {"code_config": {"name": f"tests.metrics.custom_metrics_fixture.{METRIC}"}}},
}
SCENARIOS = [
    Scenario(
        "weather", "weather", "Weather in Paris?", (ToolStep("get_weather", {"city": "Paris"}),), "18°C in Paris."
    ),
    Scenario("greeting", "greeting", "Hi", (), "Hello there!"),
]


def test_run_embedded_and_kafka_core_agree(tmp_path: Path) -> None:
    config_path = tmp_path / "config.json"
    config_path.write_text(json.dumps(CONFIG))

    # Embedded: the processor reads the config from OTEL_EVAL_CRITERIA (a file path), as a deployment sets it.
    telemetry = Telemetry()
    environ = {environment_variables.OTEL_EVAL_CRITERIA: str(config_path)}
    processor = EvaluationSpanProcessor.from_env(environ, **telemetry.providers())
    telemetry.tracer_provider.add_span_processor(processor)
    telemetry.add_exporting_processor()
    agent = TravelAgent(telemetry.tracer_provider)
    for index, scenario in enumerate(SCENARIOS):
        agent.run(scenario, conversation_id=f"conversation-{index}")
    assert processor.force_flush(30_000)
    embedded = {
        hex_id(event.log_record.trace_id, 32): (
            (event.log_record.attributes or {}).get(semconv.GEN_AI_EVALUATION_SCORE_VALUE),
            (event.log_record.attributes or {})[semconv.GEN_AI_EVALUATION_SCORE_LABEL],
        )
        for event in telemetry.result_events()
        if (event.log_record.attributes or {})[semconv.GEN_AI_EVALUATION_NAME] == METRIC
    }
    spans = [s for s in telemetry.finished_spans() if s.instrumentation_scope.name != semconv.INSTRUMENTATION_SCOPE]
    processor.shutdown()
    telemetry.shutdown()
    assert sorted(embedded.values()) == [(0.0, "fail"), (1.0, "pass")]

    # Offline: otel-eval run on the same spans with the same config file.
    trace_file = tmp_path / "traces.otlp.json"
    trace_file.write_text(json.dumps(MessageToDict(encode_spans(spans))))
    result = CliRunner().invoke(
        main, ["run", str(trace_file), "--config", str(config_path), "--output", "json"], catch_exceptions=False
    )
    offline = {
        conversation["trace_ids"][0]: (metric["score"], "pass" if metric["eval_status"] == "PASSED" else "fail")
        for conversation in json.loads(result.stdout)["results"]
        for metric in conversation["metrics"]
        if metric["metric_name"] == METRIC
    }
    assert offline == embedded

    # Kafka worker: its core, built from its settings (--criteria FILE), on the same invocations as requests.
    core = build_core(WorkerSettings(criteria=str(config_path)), MemoryTelemetry().providers)
    invocations = [i for t in rebuild_traces(spans_from_readable(spans)) for i in t.invocations]

    async def score() -> dict[str, tuple[float | None, str]]:
        found = {}
        for invocation in invocations:
            for record in await core.evaluate(EvaluationRequest(invocations=[invocation])):
                if record.metric_name == METRIC:
                    found[record.trace_id] = (record.score, record.label)
        return found

    assert asyncio.run(score()) == embedded


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_bad_custom_metric_code_stops_the_processor_at_start_up(isolation: str) -> None:
    bad = {
        "criteria": {METRIC: 0.5},
        "custom_metrics": {METRIC: {"code_config": {"name": "tests.metrics.no_such_module.metric"}}},
    }
    with pytest.raises(ConfigurationError, match=r"custom metric 'answer_has_digit' \(tests.metrics.no_such_module"):
        EvaluationSpanProcessor(criteria=bad, settings=ProcessorSettings(isolation=isolation))


@pytest.mark.usefixtures("quiet_adk")
def test_a_conversation_level_custom_metric_runs_once_per_session_window() -> None:
    """A function marked ``conversation_level`` runs on each recorded ADK session's window, with all its turns,
    once; the per-turn custom metric beside it still runs on each turn as it ends."""

    async def record() -> RecordedSessions:
        with adk_telemetry(schema=2):
            return await record_sessions()

    recorded = asyncio.run(record())
    config = {
        "criteria": {"turns_in_conversation": {"threshold": 0.0}, METRIC: 0.5},
        "custom_metrics": {
            **CONFIG["custom_metrics"],
            "turns_in_conversation": custom_metrics_fixture.TURNS_IN_CONVERSATION_CONFIG,
        },
    }
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(
        config,
        settings=ProcessorSettings(sessions=SessionLimits(idle_timeout=0.5)),
        sinks=[records.extend],
        tracer_provider=TracerProvider(),
    )
    custom_metrics_fixture.CONVERSATION_CALLS.clear()
    for span in sorted(recorded.spans, key=lambda s: s.end_time or 0):  # at once: each session is one window
        processor.on_end(span)
    turns = {recorded.session_ids[name]: len(invocations) for name, invocations in recorded.invocations.items()}
    assert wait_until(
        lambda: sum(r.metric_name == "turns_in_conversation" for r in records) == sum(turns.values()), timeout=30
    )
    processor.shutdown()

    assert sorted(custom_metrics_fixture.CONVERSATION_CALLS) == sorted(turns.values())  # once per session, all turns
    by_session: dict[str, list[EvaluationRecord]] = {}
    for record in records:
        if record.metric_name == "turns_in_conversation":
            by_session.setdefault(record.session_id or "", []).append(record)
    assert {session: len(found) for session, found in by_session.items()} == turns
    for session, found in by_session.items():
        assert {(r.session_window, r.session_first_turn, r.session_last_turn) for r in found} == {
            (0, 0, turns[session] - 1)
        }
        assert [r.score for r in found if r.score is not None] == [float(turns[session])]  # on the last turn
    per_turn = [r for r in records if r.metric_name == METRIC]
    assert len(per_turn) == sum(turns.values()) and all(r.session_window is None for r in per_turn)


def test_a_hung_custom_metric_at_shutdown_costs_only_its_own_records() -> None:
    """The processor shuts down within its bound with a custom metric's calls hung: the request's other metrics
    (the healthy custom metric, ADK's efficiency metrics) still reach the sinks, as they reached the events; the hung
    metric's records are the ones lost, and the requests are counted as not evaluated."""
    names = ("never_returns", METRIC)
    config = {
        "criteria": dict.fromkeys(names, 0.5),
        "custom_metrics": {n: {"code_config": {"name": f"tests.metrics.custom_metrics_fixture.{n}"}} for n in names},
    }
    telemetry = Telemetry()
    sunk: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(config, sinks=[sunk.extend], **telemetry.providers())
    telemetry.tracer_provider.add_span_processor(processor)
    custom_metrics_fixture.RELEASE.clear()
    try:
        agent = TravelAgent(telemetry.tracer_provider)
        for index, scenario in enumerate(SCENARIOS):
            agent.run(scenario, conversation_id=f"conversation-{index}")
        evented = lambda: [  # noqa: E731
            (event.log_record.attributes or {})[semconv.GEN_AI_EVALUATION_NAME] for event in telemetry.result_events()
        ]
        assert wait_until(lambda: evented().count(METRIC) == len(SCENARIOS), timeout=30)
        started = time.monotonic()
        processor.shutdown(2_000)
        assert time.monotonic() - started < 3
    finally:
        custom_metrics_fixture.RELEASE.set()
    sunk_names = [r.metric_name for r in sunk]
    assert sunk_names.count(METRIC) == len(SCENARIOS) and "never_returns" not in sunk_names
    assert sorted(sunk_names) == sorted(name for name in evented() if name != "never_returns")
    assert processor.stats()[f"invocations.dropped.{semconv.DROP_SHUTDOWN}"] == len(SCENARIOS)
    telemetry.shutdown()
