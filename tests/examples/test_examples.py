"""The shipped examples run as a user runs them (a fresh interpreter each) and show the scores: on the console, and
over OTLP/HTTP to a loopback receiver decoding what the SDK's exporters send. The ADK example's answers are also
written in this process, to check that each line goes out in one write."""

from __future__ import annotations

import asyncio
import gzip
import io
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_eval.evaluation.embedded import NO_DESTINATION_WARNING
from otel_eval.metrics import EFFICIENCY_METRICS
from tests.loopback import LoopbackServer

pytestmark = pytest.mark.integration  # each example runs in an interpreter of its own

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SCORE = re.compile(r"^otel-eval: (\w+) (\S+) (\w+) agent=(\S+) ", re.MULTILINE)


def _run(script: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOOGLE_", "GEMINI_"))}
    environ.update(PYTHONPATH=str(REPO), **env)
    process = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True, timeout=120, env=environ
    )
    assert process.returncode == 0, process.stderr
    return process


def test_the_adk_example_prints_a_failed_tool_trajectory_and_the_efficiency_scores_of_each_question() -> None:
    process = _run("adk_agent.py")
    assert "agent: It is sunny and 21°C in Paris." in process.stdout
    assert "agent: No, it is completely dry in Tokyo" in process.stdout  # the hallucination (judged when a judge is)
    scores = SCORE.findall(process.stdout)
    trajectories = sorted((s, label) for m, s, label, _ in scores if m == "tool_trajectory_avg_score")
    assert trajectories == [("0", "fail"), ("1", "pass"), ("1", "pass")]  # London: the weather tool, not the clock
    assert 'expected get_time({"city": "London"}), got get_weather({"city": "London"})' in process.stdout
    assert len(scores) == 3 * (2 + len(EFFICIENCY_METRICS))  # each question is a golden case: reference metrics too
    assert {agent for *_, agent in scores} == {"weather_agent"}


@pytest.mark.usefixtures("quiet_adk")
def test_the_adk_example_writes_each_answer_line_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The console sink writes the scores from the evaluation's threads while the example prints its answers. An
    answer printed in two writes (``print``'s text, then its newline) let a score line in between, and the test
    above then missed that score: ``agent: It is cloudy in London.otel-eval: tool_trajectory_avg_score 1 pass ...``
    (the first record of a request, about 1 run in 10 with the console unbuffered under load)."""
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")  # the example's default
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner

    from examples import adk_agent

    writes: list[str] = []

    class _Console(io.StringIO):
        def write(self, text: str) -> int:
            writes.append(text)
            return len(text)

    monkeypatch.setattr(sys, "stdout", _Console())
    agent = LlmAgent(
        name="weather_agent",
        model=adk_agent.ScriptedModel(model="scripted-gemini"),
        tools=[adk_agent.get_weather, adk_agent.get_time],
    )
    asyncio.run(adk_agent.ask_each_question(InMemoryRunner(agent=agent, app_name="weather_app")))
    lines = [text for text in writes if text]
    assert len(lines) == len(adk_agent.SCRIPT), lines  # one write a line, the newline in it
    assert all(line.startswith("agent: ") and line.endswith("\n") for line in lines), lines


def test_the_one_line_attach_prints_scores_with_the_console_switch() -> None:
    process = _run("weather_agent.py", OTEL_EVAL_CONSOLE="true")
    scores = SCORE.findall(process.stdout)
    assert len(scores) == 3 * len(EFFICIENCY_METRICS)
    assert NO_DESTINATION_WARNING not in process.stderr


def test_the_one_line_attach_without_a_destination_says_so() -> None:
    process = _run("weather_agent.py")
    assert not SCORE.findall(process.stdout)
    assert process.stderr.count(NO_DESTINATION_WARNING) == 1


OTLP_PATHS: dict[str, Any] = {
    "/v1/traces": ExportTraceServiceRequest,
    "/v1/metrics": ExportMetricsServiceRequest,
    "/v1/logs": ExportLogsServiceRequest,
}


class _OtlpReceiver:
    """OTLP/HTTP on loopback: decodes every export request by path; ``refused`` paths are answered 405 (as Phoenix
    answers /v1/logs and /v1/metrics) and counted in :attr:`refusals`."""

    def __init__(self, refused: frozenset[str] = frozenset()) -> None:
        self.received: dict[str, list[Any]] = {path: [] for path in OTLP_PATHS}
        self.refusals: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path in refused:
                    receiver.refusals.append(self.path)
                    self.send_response(405)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                kind = OTLP_PATHS[self.path]
                receiver.received[self.path].append(kind.FromString(body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.handler = Handler
        self.endpoint = ""


def _leaves(requests: list[Any], *levels: str) -> list[Any]:
    """The innermost items of OTLP export requests, e.g. every span: ``resource_spans`` → ``scope_spans`` → ``spans``."""
    items = requests
    for level in levels:
        items = [child for item in items for child in getattr(item, level)]
    return items


@contextmanager
def _receiving(refused: frozenset[str] = frozenset()) -> Iterator[_OtlpReceiver]:
    receiver = _OtlpReceiver(refused)
    with LoopbackServer(receiver.handler) as server:
        receiver.endpoint = server.url
        yield receiver


@pytest.fixture
def otlp_receiver() -> Iterator[_OtlpReceiver]:
    with _receiving() as receiver:
        yield receiver


@pytest.fixture
def traces_only_receiver() -> Iterator[_OtlpReceiver]:
    """A backend that takes only traces: /v1/logs and /v1/metrics answer 405."""
    with _receiving(frozenset({"/v1/logs", "/v1/metrics"})) as receiver:
        yield receiver


def test_the_otlp_set_up_delivers_events_spans_and_metrics(otlp_receiver: _OtlpReceiver) -> None:
    _run("weather_agent.py", "--otlp", OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.endpoint)
    received = otlp_receiver.received

    events = [
        record
        for record in _leaves(received["/v1/logs"], "resource_logs", "scope_logs", "log_records")
        if record.event_name == "gen_ai.evaluation.result"
    ]
    assert len(events) == 3 * len(EFFICIENCY_METRICS)

    spans = _leaves(received["/v1/traces"], "resource_spans", "scope_spans", "spans")
    roots = [s for s in spans if s.name == "invoke_agent WeatherAssistant"]
    evaluation_spans = [s for s in spans if s.name.startswith("evaluate ")]
    assert len(roots) == 3 and len(evaluation_spans) == len(events)
    assert {s.parent_span_id for s in evaluation_spans} == {s.span_id for s in roots}
    for root in roots:  # enrich=: the exported root span carries its scores
        keys = {attribute.key for attribute in root.attributes}
        assert "gen_ai.evaluation.tool_call_count_v1.score" in keys, keys

    metric_names = {
        metric.name for metric in _leaves(received["/v1/metrics"], "resource_metrics", "scope_metrics", "metrics")
    }
    assert {"gen_ai.evaluation.score", "gen_ai.evaluation.results"} <= metric_names


def _scored_roots_and_evaluation_spans(receiver: _OtlpReceiver) -> tuple[list[Any], list[Any]]:
    spans = _leaves(receiver.received["/v1/traces"], "resource_spans", "scope_spans", "spans")
    roots = [s for s in spans if s.name == "invoke_agent WeatherAssistant"]
    evaluation_spans = [s for s in spans if s.name.startswith("evaluate ")]
    return roots, evaluation_spans


def _attributes(span: Any) -> dict[str, Any]:
    return {
        a.key: a.value.WhichOneof("value") and getattr(a.value, a.value.WhichOneof("value")) for a in span.attributes
    }


def test_the_traces_only_set_up_sends_nothing_a_traces_only_backend_refuses(
    traces_only_receiver: _OtlpReceiver,
) -> None:
    process = _run(
        "weather_agent.py",
        "--otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT=traces_only_receiver.endpoint,
        OTEL_LOGS_EXPORTER="none",
        OTEL_METRICS_EXPORTER="none",
        OTEL_RESOURCE_ATTRIBUTES="openinference.project.name=weather-agent",
    )
    assert traces_only_receiver.refusals == []
    assert "Failed to export" not in process.stderr, process.stderr
    roots, evaluation_spans = _scored_roots_and_evaluation_spans(traces_only_receiver)
    assert len(roots) == 3 and len(evaluation_spans) == 3 * len(EFFICIENCY_METRICS)
    for root in roots:  # the scores and their labels on the root span, where a traces-only backend shows them
        attributes = _attributes(root)
        assert attributes["gen_ai.evaluation.inference_call_count_v1.score"] == 1.0
        assert attributes["gen_ai.evaluation.tool_call_count_v1.label"] == "informational"
    assert all(_attributes(s)["openinference.span.kind"] == "EVALUATOR" for s in evaluation_spans)
    [resource] = {
        tuple((a.key, a.value.string_value) for a in rs.resource.attributes)
        for rs in _leaves(traces_only_receiver.received["/v1/traces"], "resource_spans")
    }
    assert ("openinference.project.name", "weather-agent") in resource  # the Phoenix project


def test_the_default_otlp_set_up_is_what_a_traces_only_backend_complains_about(
    traces_only_receiver: _OtlpReceiver,
) -> None:
    """The reason for the recipe above: without the two variables, logs and metrics go where they are refused."""
    _run("weather_agent.py", "--otlp", OTEL_EXPORTER_OTLP_ENDPOINT=traces_only_receiver.endpoint)
    assert set(traces_only_receiver.refusals) == {"/v1/logs", "/v1/metrics"}


def test_the_otlp_set_up_works_with_the_evaluation_in_a_child_process(otlp_receiver: _OtlpReceiver) -> None:
    _run(
        "weather_agent.py",
        "--otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.endpoint,
        OTEL_EVAL_ISOLATION="process",
    )
    events = [
        record
        for record in _leaves(otlp_receiver.received["/v1/logs"], "resource_logs", "scope_logs", "log_records")
        if record.event_name == "gen_ai.evaluation.result"
    ]
    assert len(events) == 3 * len(EFFICIENCY_METRICS)
    roots, evaluation_spans = _scored_roots_and_evaluation_spans(otlp_receiver)
    assert len(roots) == 3 and len(evaluation_spans) == len(events)
    assert {s.parent_span_id for s in evaluation_spans} == {s.span_id for s in roots}
    assert all("gen_ai.evaluation.tool_call_count_v1.label" in _attributes(root) for root in roots)


@pytest.fixture
def metrics_only_receiver() -> Iterator[_OtlpReceiver]:
    """Prometheus's OTLP receiver: only /v1/metrics."""
    with _receiving(frozenset({"/v1/logs", "/v1/traces"})) as receiver:
        yield receiver


def test_the_per_signal_recipe_sends_each_signal_only_where_it_is_taken(
    traces_only_receiver: _OtlpReceiver, metrics_only_receiver: _OtlpReceiver
) -> None:
    """docs/backends.md's Jaeger/Tempo + Prometheus block: traces to one endpoint, metrics to another, no events."""
    process = _run(
        "weather_agent.py",
        "--otlp",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"{traces_only_receiver.endpoint}/v1/traces",
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=f"{metrics_only_receiver.endpoint}/v1/metrics",
        OTEL_LOGS_EXPORTER="none",
    )
    assert traces_only_receiver.refusals == [] and metrics_only_receiver.refusals == []
    assert "Failed to export" not in process.stderr, process.stderr
    roots, evaluation_spans = _scored_roots_and_evaluation_spans(traces_only_receiver)
    assert len(roots) == 3 and len(evaluation_spans) == 3 * len(EFFICIENCY_METRICS)
    metrics = _leaves(metrics_only_receiver.received["/v1/metrics"], "resource_metrics", "scope_metrics", "metrics")
    assert {"gen_ai.evaluation.score", "gen_ai.evaluation.results"} <= {metric.name for metric in metrics}
    assert traces_only_receiver.received["/v1/metrics"] == [] and metrics_only_receiver.received["/v1/traces"] == []
