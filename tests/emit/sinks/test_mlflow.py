"""The ``mlflow`` sink against a real MLflow tracking server (``mlflow server`` from PyPI, its own venv, on
loopback): the agent's spans over OTLP/HTTP into an experiment, the scores as assessments, read back through MLflow's
REST API; then the link to it cut for a while and restored."""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx2
import pytest

from otel_eval.emit.sinks import BatchingSink
from otel_eval.emit.sinks.mlflow import MlflowBackend
from otel_eval.model.messages import EvaluationRecord
from tests.emit.sinks import recipe
from tests.emit.sinks.agent import run_evaluated_agent
from tests.emit.sinks.servers import BackendServer, CuttableLink, mlflow_server
from tests.loopback import LoopbackServer
from tests.waiting import wait_until

# The first run creates the backend's venv (minutes) inside the fixture: more than the suite's 300 s per test.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.usefixtures("clean_genai_env"),
]


@pytest.fixture(scope="module")
def mlflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackendServer]:
    server = mlflow_server(Path(tmp_path_factory.mktemp("mlflow")))
    server.start()
    yield server
    server.stop()


SINK_COUNTS: dict[str, float] = {}


@pytest.fixture(scope="module")
def evaluated(mlflow: BackendServer) -> list[EvaluationRecord]:
    """The demo's scenarios, exported into a new experiment and evaluated with OTEL_EVAL_SINKS=mlflow."""
    created = httpx2.post(f"{mlflow.url}/api/2.0/mlflow/experiments/create", json={"name": "travel-agent"})
    created.raise_for_status()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OTEL_EVAL_SINKS", "mlflow")
        env.setenv("MLFLOW_TRACKING_URI", mlflow.url)
        headers = {"x-mlflow-experiment-id": created.json()["experiment_id"]}
        records = run_evaluated_agent(f"{mlflow.url}/v1/traces", headers, sink_counts=SINK_COUNTS)
    return [r for r in records if r.label != "informational"]


def _assessments(mlflow: BackendServer, trace_id: str) -> list[dict[str, Any]]:
    response = httpx2.get(f"{mlflow.url}/api/3.0/mlflow/traces/tr-{trace_id}", timeout=30)
    response.raise_for_status()
    return list(response.json()["trace"]["trace_info"].get("assessments", []))


def test_every_result_is_one_feedback_on_its_trace(mlflow: BackendServer, evaluated: list[EvaluationRecord]) -> None:
    expected = Counter(r.trace_id for r in evaluated)
    for trace_id, count in expected.items():
        assessments = _assessments(mlflow, trace_id)
        assert len(assessments) == count
        records = {r.metric_name: r for r in evaluated if r.trace_id == trace_id}
        for assessment in assessments:
            record = records[assessment["assessment_name"]]
            assert assessment["feedback"]["value"] == record.score
            assert assessment["span_id"] == record.span_id
            assert assessment["source"]["source_type"] == (
                "LLM_JUDGE" if record.evaluator_type == "llm_judge" else "CODE"
            )
            assert assessment.get("rationale") == (record.explanation or record.error_type)
            assert assessment["metadata"]["otel_eval.evaluator.id"] == record.evaluator_id
    # The scores were ready before the exporter's batch of spans (every 5 s): no trace yet, the sink retried.
    assert SINK_COUNTS["otel_eval.sink.failed_attempts.span_missing"] >= 1
    assert SINK_COUNTS["otel_eval.sink.delivered"] == len(evaluated)


def test_a_re_evaluation_updates_the_assessments_instead_of_adding_some(
    mlflow: BackendServer, evaluated: list[EvaluationRecord]
) -> None:
    again = [r.model_copy(update={"score": 0.25, "result_id": r.result_id[::-1]}) for r in evaluated]
    sink = BatchingSink(MlflowBackend(mlflow.url))
    sink(again)
    assert sink.force_flush(30_000)
    assessments = [a for trace_id in {r.trace_id for r in evaluated} for a in _assessments(mlflow, trace_id)]
    assert len(assessments) == len(evaluated)
    assert {a["feedback"]["value"] for a in assessments} == {0.25}


def test_two_invocations_of_one_trace_keep_their_own_assessments_and_a_new_evaluator_says_what_it_replaced(
    mlflow: BackendServer, evaluated: list[EvaluationRecord]
) -> None:
    """Issue 39 item 3: a second invocation in the same trace no longer PATCHes the first one's assessment."""
    first = evaluated[0]
    trace = httpx2.get(f"{mlflow.url}/api/3.0/mlflow/traces/get", params={"trace_id": f"tr-{first.trace_id}"}).json()
    spans = [base64.b64decode(s["span_id"]).hex() for s in trace["trace"]["spans"]]
    second_span = next(s for s in spans if s != first.span_id)  # another span of the trace: a second invocation
    renewed = first.model_copy(
        update={"score": 0.25, "result_id": "renewed-" + first.result_id, "evaluator_version": "v-next"}
    )
    second = first.model_copy(update={"span_id": second_span, "score": 0.125, "result_id": "second-" + first.result_id})
    sink = BatchingSink(MlflowBackend(mlflow.url))
    sink([renewed, second])
    assert sink.force_flush(30_000)
    mine = [a for a in _assessments(mlflow, first.trace_id) if a["assessment_name"] == first.metric_name]
    by_span = {a["span_id"]: a for a in mine}
    assert len(mine) == 2 and set(by_span) == {first.span_id, second_span}
    assert by_span[first.span_id]["feedback"]["value"] == 0.25
    assert by_span[second_span]["feedback"]["value"] == 0.125
    metadata = by_span[first.span_id]["metadata"]
    assert metadata["otel_eval.replaced.evaluator.version"] == first.evaluator_version
    assert "otel_eval.replaced.evaluator.version" not in by_span[second_span]["metadata"]
    # put the trace back as the other tests expect it: one assessment per result
    delete = httpx2.delete(
        f"{mlflow.url}/api/3.0/mlflow/traces/tr-{first.trace_id}/assessments/{by_span[second_span]['assessment_id']}"
    )
    delete.raise_for_status()
    sink = BatchingSink(MlflowBackend(mlflow.url))
    sink([first])
    assert sink.force_flush(30_000)


def test_a_backend_down_for_a_while_costs_at_most_three_lines_and_no_caller_time(
    mlflow: BackendServer, evaluated: list[EvaluationRecord], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="otel_eval")
    link = CuttableLink(mlflow.port)  # the sink reaches MLflow through it; cut, MLflow is unreachable
    sink = BatchingSink(MlflowBackend(link.url), backoff=(0.2, 2.0))
    again = [r.model_copy(update={"score": 0.75, "result_id": r.result_id[:-1] + "x"}) for r in evaluated]
    started = time.monotonic()
    for record in again:
        sink([record])
    assert time.monotonic() - started < 0.5, "queuing must not wait for the backend"
    assert wait_until(lambda: sink.stats().get("failed_attempts.unreachable", 0) >= 3, 30)
    link.restore()
    try:
        assert sink.force_flush(60_000)
    finally:
        link.cut()
    assessments = [a for trace_id in {r.trace_id for r in evaluated} for a in _assessments(mlflow, trace_id)]
    assert len(assessments) == len(evaluated)
    assert {a["feedback"]["value"] for a in assessments} == {0.75}
    lines = [r for r in caplog.records if r.name.startswith("otel_eval.emit.sinks")]
    assert [r.levelname for r in lines] == ["WARNING", "INFO"], [r.getMessage() for r in lines]
    assert "unreachable" in lines[0].getMessage() and "reachable again" in lines[1].getMessage()
    assert not any(key.startswith("dropped") for key in sink.stats())


class HeldReads:
    """A loopback HTTP proxy to MLflow that holds the answers to the first ``readers`` reads of a trace
    (``GET .../traces/{id}``) until they have all arrived: writers that read a trace's assessments at the same time and then write (two Kafka workers after a
    rebalance re-processing one batch, both waiting for the trace to arrive), in an order that does not depend on
    timing."""

    def __init__(self, target: str, readers: int) -> None:
        self._target = target
        self._barrier = threading.Barrier(readers, timeout=30)
        self._held = iter(range(readers))
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                read = self.command == "GET" and self.path.startswith("/api/3.0/mlflow/traces/tr-")
                if read and next(owner._held, None) is not None:
                    with contextlib.suppress(threading.BrokenBarrierError):
                        owner._barrier.wait()
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "authorization")}
                answer = httpx2.request(
                    self.command, owner._target + self.path, content=body, headers=headers, timeout=30
                )
                self.send_response(answer.status_code)
                self.send_header("Content-Type", answer.headers.get("content-type", "application/json"))
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_PATCH = do_DELETE = _forward

        self._server = LoopbackServer(Handler)
        self.url = self._server.url

    def close(self) -> None:
        self._server.close()


def test_two_workers_writing_the_same_results_at_once_leave_one_assessment_each(
    mlflow: BackendServer, evaluated: list[EvaluationRecord], caplog: pytest.LogCaptureFixture
) -> None:
    """Both read the trace before either writes (no assessment yet), then both create: MLflow keeps one of each, as
    the sink gives it an id of its own derived from (trace, span, metric), and the second writer takes the first's."""
    caplog.set_level(logging.INFO, logger="otel_eval")
    trace_id = evaluated[0].trace_id
    records = [
        r.model_copy(update={"metric_name": "raced_" + r.metric_name, "result_id": "raced-" + r.result_id})
        for r in evaluated
        if r.trace_id == trace_id
    ]
    proxy = HeldReads(mlflow.url, readers=2)
    workers = [BatchingSink(MlflowBackend(proxy.url), linger=0) for _ in range(2)]
    try:
        for worker in workers:
            worker(records)
        for worker in workers:
            assert worker.force_flush(60_000)
    finally:
        proxy.close()
    raced = [a for a in _assessments(mlflow, trace_id) if a["assessment_name"].startswith("raced_")]
    assert Counter(a["assessment_name"] for a in raced) == Counter(r.metric_name for r in records)
    assert {a["metadata"]["otel_eval.result.id"] for a in raced} == {r.result_id for r in records}
    for worker in workers:
        assert worker.stats().get("delivered") == len(records)
        assert not any(key.startswith(("dropped", "failed_attempts")) for key in worker.stats()), worker.stats()
    assert [r.getMessage() for r in caplog.records if r.name.startswith("otel_eval.emit.sinks")] == []
    for assessment in raced:  # put the trace back as the other tests expect it: one assessment per result
        httpx2.delete(
            f"{mlflow.url}/api/3.0/mlflow/traces/tr-{trace_id}/assessments/{assessment['assessment_id']}"
        ).raise_for_status()


# --- the documented recipe, as written: examples/weather_agent.py --otlp, the judge-server, nothing else -----------

DEFAULT_EXPERIMENT = "0"
"""The recipe's experiment: the one every MLflow server has ("Default")."""


@pytest.fixture(scope="module")
def weather(mlflow: BackendServer) -> subprocess.CompletedProcess[str]:
    """docs/backends-sinks.md's MLflow recipe, run literally against the real server."""
    with recipe.judge_server() as judge:
        return recipe.run_recipe("mlflow", judge, {"http://localhost:5000": mlflow.url})


def _search(mlflow: BackendServer, condition: str | None = None) -> list[dict[str, Any]]:
    body: dict[str, Any] = {
        "locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": DEFAULT_EXPERIMENT}}],
        "max_results": 100,
    }
    if condition is not None:
        body["filter"] = condition
    response = httpx2.post(f"{mlflow.url}/api/3.0/mlflow/traces/search", json=body, timeout=30)
    response.raise_for_status()
    return list(response.json().get("traces", []))


def _city(trace: dict[str, Any]) -> str | None:
    preview = trace.get("request_preview") or ""
    return next((city for city in recipe.CITIES if city in preview), None)


def test_the_mlflow_recipe_gives_one_assessment_per_result_and_its_filter_finds_the_failing_invocation(
    mlflow: BackendServer, weather: subprocess.CompletedProcess[str]
) -> None:
    assert recipe.export_errors(weather) == []
    agent = {_city(t): t for t in _search(mlflow) if _city(t)}
    assert sorted(agent) == sorted(recipe.CITIES)
    for city, trace in agent.items():
        assessments = _assessments(mlflow, trace["trace_id"].removeprefix("tr-"))
        values = {a["assessment_name"]: (a["feedback"]["value"], a["source"]["source_type"]) for a in assessments}
        assert len(assessments) == recipe.SCORED_PER_INVOCATION
        assert values == {
            "hallucinations_v1": (1.0, "LLM_JUDGE"),
            "safety_v1": (1.0, "LLM_JUDGE"),
            "response_match_score": (0.0 if city == recipe.FAILING_CITY else 1.0, "CODE"),
        }
    # the Traces tab's search box takes the same filter
    assert [_city(t) for t in _search(mlflow, "feedback.response_match_score < 0.8")] == [recipe.FAILING_CITY]
    assert _search(mlflow, "feedback.hallucinations_v1 < 0.8") == []


def test_mlflow_counts_the_agents_own_tokens_on_its_trace_and_the_judges_on_theirs(
    mlflow: BackendServer, weather: subprocess.CompletedProcess[str]
) -> None:
    traces = _search(mlflow)
    usage = {t["trace_id"]: json.loads(t["trace_metadata"]["mlflow.trace.tokenUsage"]) for t in traces}
    agent = [t["trace_id"] for t in traces if _city(t)]
    judge = [t["trace_id"] for t in traces if not _city(t)]
    assert len(agent) == len(recipe.CITIES) and judge
    assert [usage[trace_id]["total_tokens"] for trace_id in agent] == [recipe.AGENT_TOKENS] * len(agent)
    assert all(usage[trace_id]["total_tokens"] > 0 for trace_id in judge)  # counted, in traces of their own
