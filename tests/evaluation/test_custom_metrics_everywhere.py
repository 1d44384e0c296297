"""One ADK custom metric, configured once, gives the same scores in ``otel-eval run``, in the embedded worker (the
processor configured by ``OTEL_EVAL_CRITERIA``) and in the Kafka worker's core (``--criteria FILE``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from otel_eval import EvaluationSpanProcessor, environment_variables, semconv
from otel_eval.cli import main
from otel_eval.demo import TravelAgent
from otel_eval.demo.workload import Scenario, ToolStep
from otel_eval.errors import ConfigurationError
from otel_eval.model.messages import EvaluationRequest
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import spans_from_readable
from otel_eval.worker.service import build_core
from otel_eval.worker.settings import WorkerSettings
from tests.processor.telemetry import Telemetry, hex_id
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
        EvaluationSpanProcessor(criteria=bad, isolation=isolation)
