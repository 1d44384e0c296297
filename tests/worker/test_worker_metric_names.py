"""The worker's ``OTEL_EVAL_METRICS`` / ``--metrics``: the core built from its settings runs only those metrics on the
requests it scores with its own criteria; a request's own criteria, when the request policy honours them, are scored
as before (with ADK's efficiency metrics); an unknown name stops the worker at start-up, naming it."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from otel_eval import environment_variables as env
from otel_eval.cli import main
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model import TracedInvocation
from otel_eval.model.messages import EvaluationRequest
from otel_eval.reconstruct import rebuild_traces
from otel_eval.worker.service import build_core
from otel_eval.worker.settings import WorkerSettings
from tests.reconstruct.recorded import demo_spans
from tests.worker._harness import MemoryTelemetry

ONE_METRIC = "tool_call_count_v1"


@pytest.fixture(autouse=True)
def _no_default_judge(clean_genai_env: None) -> None:
    """No judge credentials: the worker's default criteria are the efficiency metrics."""


def _invocations() -> list[TracedInvocation]:
    return [i for _, spans in demo_spans() for t in rebuild_traces(spans) for i in t.invocations]


def test_the_worker_reads_the_metrics_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert WorkerSettings().metric_names == ()
    monkeypatch.setenv(env.OTEL_EVAL_METRICS, " tool_call_count_v1, token_usage_v1 ,")
    assert WorkerSettings().metrics == "tool_call_count_v1,token_usage_v1"
    assert WorkerSettings().metric_names == ("tool_call_count_v1", "token_usage_v1")


async def test_only_the_named_metrics_run_with_the_worker_criteria_and_request_criteria_are_unchanged() -> None:
    telemetry = MemoryTelemetry()
    settings = WorkerSettings(metrics=ONE_METRIC, request_criteria=True, request_metrics="tool_trajectory_avg_score")
    core = build_core(settings, telemetry.providers)
    invocations = _invocations()
    assert invocations
    for invocation in invocations:
        records = await core.evaluate(EvaluationRequest(invocations=[invocation]))
        assert {record.metric_name for record in records} == {ONE_METRIC}
    # A request's own honoured criteria: scored as they always were (tool_trajectory_avg_score needs a reference,
    # which nothing pairs here, so only the efficiency metrics added to them are reported).
    carried = EvaluationRequest(invocations=[invocations[0]], criteria={"tool_trajectory_avg_score": 0.5})
    assert {record.metric_name for record in await core.evaluate(carried)} == set(EFFICIENCY_METRICS)
    assert {event.metric for event in telemetry.events()} == set(EFFICIENCY_METRICS)


def test_an_unknown_metric_stops_the_worker_with_exit_code_2_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(main, ["worker", "--telemetry", "none", "--metrics", "tool_call_count_v1,tool_calls"])
    assert result.exit_code == 2
    assert "error: --metrics: unknown metric 'tool_calls'" in result.output  # the flag it was given by
    monkeypatch.setenv(env.OTEL_EVAL_METRICS, "no_such_metric")
    result = CliRunner().invoke(main, ["worker", "--telemetry", "none"])
    assert result.exit_code == 2
    assert "error: OTEL_EVAL_METRICS: unknown metric 'no_such_metric'" in result.output
