"""``isolation="process"`` as a first-time user meets it: with ADK custom metrics, the evaluation process imports
their code with its own safe module path (``python -P``), not the agent's ``sys.path``. A module the agent finds only
through its script's folder (``python examples/weather_agent.py`` with ``examples/custom_metric_config.json``) used to
load here and fail in every evaluation process started: a traceback each time, every trace dropped, ``force_flush()``
True. And its exporters' warnings about an endpoint that is down keep a token in the endpoint's query to
themselves."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.errors import ConfigurationError
from otel_eval.model.messages import EvaluationRecord
from tests.processor.telemetry import evaluation_process_pid
from tests.waiting import wait_until
from tests.worker._harness import OtlpSink, child_otlp_sink

pytestmark = pytest.mark.integration

METRIC = "answer_is_short"
FUNCTION = """
from google.adk.evaluation.eval_metrics import EvalStatus
from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult

{guard}

def {metric}(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    per = [PerInvocationResult(actual_invocation=i, score=1.0, eval_status=EvalStatus.PASSED) for i in actual_invocations]
    return EvaluationResult(overall_score=1.0, overall_eval_status=EvalStatus.PASSED, per_invocation_results=per)
"""


def _config(module: str) -> dict[str, Any]:
    return {"criteria": {METRIC: 0.5}, "custom_metrics": {METRIC: {"code_config": {"name": f"{module}.{METRIC}"}}}}


@pytest.fixture
def sink(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpSink]:
    with child_otlp_sink(monkeypatch, traces=False) as receiver:
        yield receiver


def _on_pythonpath(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")])))


def _module(folder: Path, name: str, guard: str = "") -> str:
    (folder / f"{name}.py").write_text(FUNCTION.format(metric=METRIC, guard=guard))
    return name


def test_a_custom_metric_found_only_through_the_agents_sys_path_stops_start_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _module(tmp_path, "short_metric_only_on_sys_path")
    monkeypatch.syspath_prepend(str(tmp_path))  # as the script's folder is for `python examples/agent.py`
    with pytest.raises(ConfigurationError) as raised:
        EvaluationSpanProcessor(_config(module), settings=ProcessorSettings(isolation="process"))
    message = str(raised.value)
    assert f"custom metric {METRIC!r} ({module}.{METRIC})" in message
    assert f"cannot import {module}" in message
    assert f"put {tmp_path.resolve()} on PYTHONPATH" in message
    assert evaluation_process_pid() is None  # refused before any evaluation process started


def test_the_same_metric_with_its_folder_on_pythonpath_scores_in_the_evaluation_process(
    sink: OtlpSink, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _module(tmp_path, "short_metric_on_pythonpath")
    monkeypatch.syspath_prepend(str(tmp_path))
    _on_pythonpath(monkeypatch, tmp_path)
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(
        _config(module), settings=ProcessorSettings(isolation="process"), sinks=[records.extend]
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    TravelAgent(provider).run(SCENARIOS[0])
    try:
        assert processor.force_flush(60_000)
        assert [r.label for r in records if r.metric_name == METRIC] == ["pass"]
    finally:
        provider.shutdown()


def test_an_evaluation_process_that_cannot_load_its_configuration_says_so_once_and_is_not_restarted(
    sink: OtlpSink, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Found by both, but it fails to load where the module path is the safe one: the evaluation process only.
    guard = "import sys\nif sys.flags.safe_path:\n    raise RuntimeError('cannot load in the evaluation process')"
    module = _module(tmp_path, "short_metric_failing_in_the_child", guard)
    monkeypatch.syspath_prepend(str(tmp_path))
    _on_pythonpath(monkeypatch, tmp_path)
    processor = EvaluationSpanProcessor(_config(module), settings=ProcessorSettings(isolation="process"))
    provider = TracerProvider()
    provider.add_span_processor(processor)
    ended = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(ended))
    agent = TravelAgent(provider)
    caplog.set_level(logging.WARNING, logger="otel_eval.processor._process.feeder")
    try:
        said = "the evaluation process cannot start"

        def told() -> bool:
            agent.run(SCENARIOS[0])  # the agent goes on; the next batch finds the evaluation process gone
            return any(said in r.getMessage() for r in caplog.records)

        assert wait_until(told, timeout=60)
        time.sleep(2.5)  # past the first restarts' backoff (1 s, then 2 s)
        agent.run(SCENARIOS[1])
        processor.force_flush(10_000)
        assert evaluation_process_pid() is None  # not started again
        assert [r.levelname for r in caplog.records if said in r.getMessage()] == ["ERROR"]
        assert not any("starts in" in r.getMessage() for r in caplog.records)  # no restart announced
        stats = processor.stats()
        assert stats[f"spans.dropped.{semconv.DROP_TRANSPORT_ERROR}"] > 0
        # Every span is counted, not silent: those it was sent before it stopped too (or shed while it started).
        dropped = sum(count for name, count in stats.items() if name.startswith("spans.dropped."))
        assert dropped == len(ended.get_finished_spans())
    finally:
        provider.shutdown()


AGENT = """
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.demo import SCENARIOS, TravelAgent

provider = TracerProvider()
processor = EvaluationSpanProcessor(settings=ProcessorSettings(isolation="process"))
provider.add_span_processor(processor)
TravelAgent(provider).run(SCENARIOS[0])
processor.force_flush(30_000)
provider.shutdown()
"""


def test_the_evaluation_process_never_prints_the_query_of_its_otlp_endpoint(tmp_path: Path) -> None:
    """The child's OTLP exporters retry an endpoint that is down with warnings naming it; a token in its query
    (``?token=...``) is not printed, as the worker's and ``otel-eval run --export-otlp``'s are not."""
    from tests.emit.sinks.servers import free_port

    environ = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}/?token=0tlp-T0ken",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "4",  # room for a retry, whose warning names the endpoint
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_TRACES_EXPORTER": "none",
        "OTEL_METRICS_EXPORTER": "none",
    }
    agent = subprocess.run(
        [sys.executable, "-c", AGENT], env=environ, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert agent.returncode == 0, agent.stderr
    assert "otel-eval evaluation process: WARNING opentelemetry.exporter.otlp" in agent.stderr  # it did retry
    assert "?***" in agent.stderr
    assert "0tlp-T0ken" not in agent.stderr + agent.stdout
