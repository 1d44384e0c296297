"""A misspelt ``OTEL_EVAL_*`` variable is said at start-up (one WARNING, with the close names), by the worker, by
``EvaluationSpanProcessor.from_env()`` and by ``otel-eval run``; before, it was ignored without a word and the setting meant kept its default
(another broker, tenancy off)."""

from __future__ import annotations

import uuid

import pytest
from click.testing import CliRunner

from otel_eval import EvaluationSpanProcessor, environment_variables
from otel_eval.cli import main
from tests.cli.conftest import AGENTEVALS
from tests.environment import known_environment_variables


def test_the_worker_says_a_misspelt_variable(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("OTEL_EVAL_KAFKA_BOOTSTRAP_SERVER", "kafka:9092")  # the S left out
    monkeypatch.setenv("OTEL_EVAL_TENANT_HEADERS", "x-tenant")
    monkeypatch.setenv("OTEL_EVAL_TEST_PYTHON", "/usr/bin/python3")  # the test suite's own: not warned of
    with caplog.at_level("WARNING", logger="otel_eval.environment"):
        result = CliRunner().invoke(main, ["worker", "--telemetry", "none", "--concurrency", "0"])
    assert result.exit_code == 2  # the bad flag stops it after the warnings
    assert [r.getMessage() for r in caplog.records if r.name == "otel_eval.environment"] == [
        "OTEL_EVAL_KAFKA_BOOTSTRAP_SERVER is not an otel-eval setting "
        "(did you mean OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS?): ignored",
        "OTEL_EVAL_TENANT_HEADERS is not an otel-eval setting (did you mean OTEL_EVAL_TENANT_HEADER?): ignored",
    ]


def test_from_env_says_a_misspelt_variable_once(caplog: pytest.LogCaptureFixture) -> None:
    name = f"OTEL_EVAL_SAMPLERATE_{uuid.uuid4().hex[:6].upper()}"  # once per process: a name of this test's own
    environ = {name: "0.5", environment_variables.OTEL_EVAL_SAMPLE_RATE: "1"}
    with caplog.at_level("WARNING", logger="otel_eval.environment"):
        for _ in range(2):
            EvaluationSpanProcessor.from_env(environ, sinks=[lambda records: None]).shutdown()
    said = [r.getMessage() for r in caplog.records if r.name == "otel_eval.environment"]
    assert said == [f"{name} is not an otel-eval setting: ignored"]


def test_run_says_a_misspelt_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EVAL_JUDGE_BUDGETT", "0.50")  # meant: OTEL_EVAL_JUDGE_BUDGET, a spend cap left off
    result = CliRunner().invoke(main, ["run", str(AGENTEVALS / "helm.json"), "-m", "tool_trajectory_avg_score"])
    assert result.exit_code in (0, 1, 3), result.output
    assert (
        "warning: OTEL_EVAL_JUDGE_BUDGETT is not an otel-eval setting (did you mean OTEL_EVAL_JUDGE_BUDGET?): ignored"
        in result.stderr
    )


def test_every_variable_the_worker_reads_is_known() -> None:
    """The worker's settings read their field names as variables: each is one of the known constants."""
    from otel_eval._runtime.unknown_variables import known_variables

    assert known_environment_variables() <= known_variables()
