"""``otel-eval run --from mlflow`` against a real MLflow server (from PyPI, own venv, on loopback) holding a trace that
is still running: its sub-agent's spans exported by the real SDK exporter, its root not ended. MLflow stores such a
trace as ``IN_PROGRESS``; read then, it was rebuilt without its root and its score written on the sub-agent's span,
never replaced once the trace was whole. A trace whose root has a remote parent stays ``IN_PROGRESS`` for good in
MLflow: it is read once its last span is older than the idle timeout. And which traces ``--limit`` takes from a real
Phoenix: the ones it stored last."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from opentelemetry import context, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from otel_eval import semconv
from otel_eval.demo import SCENARIOS, TravelAgent
from tests.cli.conftest import CliResult
from tests.emit.sinks.servers import BackendServer, mlflow_server, phoenix_server
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

METRIC = "tool_call_count_v1"
"""Informational and deterministic: no judge, no eval set; written with OTEL_EVAL_SINKS_INFORMATIONAL."""


@pytest.fixture(scope="module")
def mlflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackendServer]:
    server = mlflow_server(Path(tmp_path_factory.mktemp("mlflow")))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _traces(mlflow: BackendServer, experiment: str) -> list[dict[str, Any]]:
    body = {
        "locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment}}],
        "max_results": 100,
    }
    response = httpx2.post(f"{mlflow.url}/api/3.0/mlflow/traces/search", json=body, timeout=30)
    response.raise_for_status()
    return list(response.json().get("traces", []))


def _assessments(mlflow: BackendServer, trace_id: str) -> list[dict[str, Any]]:
    response = httpx2.get(f"{mlflow.url}/api/3.0/mlflow/traces/tr-{trace_id}", timeout=30)
    response.raise_for_status()
    return list(response.json()["trace"]["trace_info"].get("assessments", []))


def _remote_parent_invocation(tracer: trace.Tracer, minutes_ago: float) -> tuple[str, str]:
    """An agent invocation whose root's parent is in another service, ended ``minutes_ago``: (trace id, root id)."""
    remote = SpanContext(0x5EED << 64 | 0xBEEF, 0xFEED, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return _invocation(tracer, minutes_ago, trace.set_span_in_context(NonRecordingSpan(remote)))


def _invocation(tracer: trace.Tracer, minutes_ago: float, parent: context.Context | None = None) -> tuple[str, str]:
    """An agent invocation (under ``parent``) that ran ``minutes_ago``: (trace id, root span id)."""
    start = time.time_ns() - int(minutes_ago * 60e9)
    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Weather in Oslo?"}]}])
    answer = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Cold."}]}])
    root = tracer.start_span(
        "invoke_agent travel_assistant",
        context=parent,
        start_time=start,
        attributes={
            semconv.GEN_AI_OPERATION_NAME: "invoke_agent",
            semconv.GEN_AI_AGENT_NAME: "travel_assistant",
            semconv.GEN_AI_INPUT_MESSAGES: messages,
            semconv.GEN_AI_OUTPUT_MESSAGES: answer,
        },
    )
    chat = tracer.start_span(
        "chat scripted-flash-1",
        context=trace.set_span_in_context(root),
        start_time=start + 1_000_000,
        attributes={
            semconv.GEN_AI_OPERATION_NAME: "chat",
            semconv.GEN_AI_REQUEST_MODEL: "scripted-flash-1",
            semconv.GEN_AI_INPUT_MESSAGES: messages,
            semconv.GEN_AI_OUTPUT_MESSAGES: answer,
        },
    )
    chat.end(end_time=start + 2_000_000)
    root.end(end_time=start + 3_000_000)
    return format(root.get_span_context().trace_id, "032x"), format(root.get_span_context().span_id, "016x")


def test_a_trace_still_running_is_read_once_whole_and_scored_on_its_root_and_a_remote_parent_root_is_read(
    mlflow: BackendServer, cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    created = httpx2.post(f"{mlflow.url}/api/2.0/mlflow/experiments/create", json={"name": "running"}, timeout=30)
    created.raise_for_status()
    experiment = created.json()["experiment_id"]
    provider = TracerProvider(shutdown_on_exit=False)
    exporter = OTLPSpanExporter(f"{mlflow.url}/v1/traces", headers={"x-mlflow-experiment-id": experiment}, timeout=60)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("orchestrator")
    remote_trace, remote_root = _remote_parent_invocation(tracer, minutes_ago=10)
    root = tracer.start_span(
        "invoke_agent orchestrator",
        attributes={semconv.GEN_AI_OPERATION_NAME: "invoke_agent", semconv.GEN_AI_AGENT_NAME: "orchestrator"},
    )
    running_trace = format(root.get_span_context().trace_id, "032x")
    running_root = format(root.get_span_context().span_id, "016x")
    token = context.attach(trace.set_span_in_context(root))
    try:
        TravelAgent(provider).run(SCENARIOS[0])  # the sub-agent's spans end and are exported; the root runs on
    finally:
        context.detach(token)
    assert wait_until(lambda: len(_traces(mlflow, experiment)) == 2, 60)
    assert {t["state"] for t in _traces(mlflow, experiment)} == {"IN_PROGRESS"}  # both: neither has a parentless span

    for key, value in {
        "MLFLOW_TRACKING_URI": mlflow.url,
        "MLFLOW_EXPERIMENT_ID": experiment,
        "OTEL_EVAL_SINKS": "",
        "OTEL_EVAL_SINKS_INFORMATIONAL": "true",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    monkeypatch.delenv("OTEL_EVAL_TRACE_IDLE_TIMEOUT", raising=False)
    run = ("run", "--from", "mlflow", "-m", METRIC, "--sinks", "mlflow", "--output", "json")

    first = cli(*run)
    assert first.exit_code == 0, first.stderr
    assert [trace_id for r in first.json()["results"] for trace_id in r["trace_ids"]] == [remote_trace]
    assert "note: 1 trace(s) still running" in first.stderr and "OTEL_EVAL_TRACE_IDLE_TIMEOUT" in first.stderr
    assert [(a["assessment_name"], a["span_id"]) for a in _assessments(mlflow, remote_trace)] == [(METRIC, remote_root)]
    assert _assessments(mlflow, running_trace) == []  # nothing written on the sub-agent's span

    root.end()
    assert wait_until(lambda: {t["state"] for t in _traces(mlflow, experiment)} == {"OK", "IN_PROGRESS"}, 60)
    second = cli(*run)
    assert second.exit_code == 0, second.stderr
    read = sorted(trace_id for r in second.json()["results"] for trace_id in r["trace_ids"])
    assert read == sorted([remote_trace, running_trace]) and "still running" not in second.stderr
    assert [(a["assessment_name"], a["span_id"]) for a in _assessments(mlflow, running_trace)] == [
        (METRIC, running_root)
    ]
    provider.shutdown()


def test_phoenix_limit_takes_the_traces_phoenix_stored_last_not_the_newest_started(
    tmp_path: Path, cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/backfill.md: Phoenix's span search orders by insertion; a trace exported late counts as new."""
    phoenix = phoenix_server(tmp_path)
    phoenix.start()
    try:
        provider = TracerProvider(
            resource=Resource.create({"openinference.project.name": "limit"}), shutdown_on_exit=False
        )
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{phoenix.url}/v1/traces", timeout=60)))
        tracer = provider.get_tracer("agent")
        newest_started, _ = _invocation(tracer, minutes_ago=1)
        assert wait_until(lambda: _phoenix_roots(phoenix) == 1, 60)
        exported_late, _ = _invocation(tracer, minutes_ago=5)  # started earlier, stored later
        assert wait_until(lambda: _phoenix_roots(phoenix) == 2, 60)
        provider.shutdown()
        monkeypatch.setenv("PHOENIX_COLLECTOR_ENDPOINT", phoenix.url)
        monkeypatch.setenv("PHOENIX_PROJECT_NAME", "limit")
        monkeypatch.setenv("OTEL_EVAL_SINKS", "")
        run = ("run", "--from", "phoenix", "-m", METRIC, "--output", "json")
        last = cli(*run, "--limit", "1")
        assert last.exit_code == 0, last.stderr
        assert [t for r in last.json()["results"] for t in r["trace_ids"]] == [exported_late]
        both = cli(*run, "--since", "3m")  # the window is by start time
        assert [t for r in both.json()["results"] for t in r["trace_ids"]] == [newest_started]
    finally:
        phoenix.stop()


def _phoenix_roots(phoenix: BackendServer) -> int:
    url = f"{phoenix.url}/v1/projects/limit/spans/otlpv1"
    response = httpx2.get(url, params={"parent_id": "null"}, timeout=30)
    return len(response.json()["data"]) if response.status_code == 200 else 0
