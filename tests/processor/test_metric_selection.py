"""``ProcessorSettings.metrics`` / ``OTEL_EVAL_METRICS``: the processor runs only the metrics named, each with its
criterion from the criteria when they name it, as ``otel-eval run --metrics`` does; empty, the criteria (or the
defaults) plus ADK's efficiency metrics, as before. The travel agent's real spans go through the real SDK; the scores
are read from the ``gen_ai.evaluation.result`` events its in-memory log exporter received. (Process isolation:
``test_evaluation_process.py``.)"""

from __future__ import annotations

from typing import Any

import pytest

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval import environment_variables as env
from otel_eval.demo import SCENARIOS, TravelAgent, golden_eval_set
from otel_eval.errors import ConfigurationError
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord
from otel_eval.transport import InMemoryInvocationExporter
from tests.processor.telemetry import Telemetry

ONE_METRIC = "tool_call_count_v1"


def _scored(
    telemetry: Telemetry, criteria: Any = None, settings: ProcessorSettings | None = None
) -> dict[str, list[EvaluationRecord]]:
    """Metric -> its records, for the demo's scenarios evaluated with ``criteria`` and ``settings`` (every scenario
    evaluated, each record emitted as a ``gen_ai.evaluation.result`` event)."""
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(criteria, settings=settings, sinks=[records.extend], **telemetry.providers())
    telemetry.tracer_provider.add_span_processor(processor)
    agent = TravelAgent(telemetry.tracer_provider)
    for scenario in SCENARIOS:
        agent.run(scenario)
    assert processor.force_flush(30_000)
    assert processor.stats()["invocations.evaluated"] == len(SCENARIOS)
    events = telemetry.result_events()
    assert sorted(e.log_record.attributes[semconv.GEN_AI_EVALUATION_NAME] for e in events) == sorted(
        r.metric_name for r in records
    )
    scored: dict[str, list[EvaluationRecord]] = {}
    for record in records:
        scored.setdefault(record.metric_name, []).append(record)
    return scored


def test_only_the_named_metric_runs_in_thread_isolation(telemetry: Telemetry) -> None:
    scored = _scored(telemetry, settings=ProcessorSettings(metrics=(ONE_METRIC,)))
    assert set(scored) == {ONE_METRIC}
    assert len(telemetry.result_events()) == len(SCENARIOS)  # one result per invocation, nothing else


def test_a_named_metric_takes_its_criterion_from_the_criteria_and_the_unnamed_are_left_out(
    telemetry: Telemetry,
) -> None:
    criteria = {"tool_trajectory_avg_score": 0.5, "response_match_score": 0.8}
    settings = ProcessorSettings(eval_set=golden_eval_set(), metrics="tool_trajectory_avg_score, tool_call_count_v1")
    scored = _scored(telemetry, criteria, settings)
    assert set(scored) == {"tool_trajectory_avg_score", ONE_METRIC}  # not response_match_score, nor the other 3
    assert {record.threshold for record in scored["tool_trajectory_avg_score"]} == {0.5}  # ADK's default: 1.0


def test_without_metrics_the_criteria_get_the_efficiency_metrics_as_before(telemetry: Telemetry) -> None:
    assert ProcessorSettings().metrics == ()
    scored = _scored(telemetry, {"tool_trajectory_avg_score": 0.5}, ProcessorSettings(eval_set=golden_eval_set()))
    assert set(scored) == {"tool_trajectory_avg_score", *EFFICIENCY_METRICS}


def test_the_names_are_normalised_to_a_tuple() -> None:
    assert ProcessorSettings(metrics=" tool_call_count_v1, token_usage_v1,,").metrics == (
        "tool_call_count_v1",
        "token_usage_v1",
    )
    assert ProcessorSettings(metrics=["token_usage_v1", "token_usage_v1"]).metrics == ("token_usage_v1",)


def test_from_env_reads_the_variable() -> None:
    settings = ProcessorSettings.from_env({env.OTEL_EVAL_METRICS: "tool_call_count_v1 , inference_call_count_v1"})
    assert settings.metrics == ("tool_call_count_v1", "inference_call_count_v1")
    assert ProcessorSettings.from_env({env.OTEL_EVAL_METRICS: " "}).metrics == ()


def test_from_env_runs_only_the_metrics_the_variable_names(telemetry: Telemetry) -> None:
    processor = EvaluationSpanProcessor.from_env({env.OTEL_EVAL_METRICS: ONE_METRIC}, **telemetry.providers())
    telemetry.tracer_provider.add_span_processor(processor)
    TravelAgent(telemetry.tracer_provider).run(SCENARIOS[0])
    assert processor.force_flush(30_000)
    names = {event.log_record.attributes[semconv.GEN_AI_EVALUATION_NAME] for event in telemetry.result_events()}
    assert names == {ONE_METRIC}


def test_an_unknown_name_fails_at_start_up_naming_the_setting_and_the_name() -> None:
    with pytest.raises(ConfigurationError, match=r"OTEL_EVAL_METRICS / metrics: unknown metric 'tool_calls'"):
        EvaluationSpanProcessor.from_env({env.OTEL_EVAL_METRICS: "tool_call_count_v1,tool_calls"})
    with pytest.raises(ConfigurationError, match=r"OTEL_EVAL_METRICS / metrics: unknown metric 'no_such_metric'"):
        EvaluationSpanProcessor(settings=ProcessorSettings(metrics=("no_such_metric",)))


def test_with_an_exporter_the_names_are_refused_and_with_kafka_from_env_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with pytest.raises(ConfigurationError, match=r"ProcessorSettings.metrics \(OTEL_EVAL_METRICS\).*exporter"):
        EvaluationSpanProcessor(settings=ProcessorSettings(metrics=ONE_METRIC), exporter=InMemoryInvocationExporter())
    environ = {env.OTEL_EVAL_METRICS: ONE_METRIC, env.OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS: "127.0.0.1:1"}  # never sent
    with caplog.at_level("INFO", logger="otel_eval.processor._settings"):
        processor = EvaluationSpanProcessor.from_env(environ)
    try:
        assert f"{env.OTEL_EVAL_METRICS}={ONE_METRIC} are not used here" in caplog.text  # the workers choose
    finally:
        processor.shutdown(1_000)
