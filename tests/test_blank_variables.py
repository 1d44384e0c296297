"""An empty (or blank) boolean ``OTEL_EVAL_*`` variable means its default everywhere, as OpenTelemetry's SDK reads an
empty variable: the processor, the worker and ``otel-eval run`` alike. The worker's numbers too, as the processor's.
Before, ``OTEL_EVAL_EXPLANATIONS=`` was the default for the processor and stopped the worker at start-up."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from otel_eval import ProcessorSettings
from otel_eval import environment_variables as env
from otel_eval.cli import main
from otel_eval.judge.settings import JudgeSettings
from otel_eval.worker.settings import WorkerSettings
from tests._kafka import free_port
from tests.cli.conftest import AGENTEVALS

BOOLEAN_VARIABLES = (
    env.OTEL_EVAL_CONSOLE,
    env.OTEL_EVAL_EXPLANATIONS,
    env.OTEL_EVAL_JUDGE_OWN_TRACE,
    env.OTEL_EVAL_REQUEST_CRITERIA,
    env.OTEL_EVAL_SAMPLE_PRIORITY,
    env.OTEL_EVAL_SINKS_INFORMATIONAL,
)
SCALAR_FIELDS = sorted(
    name
    for name, info in WorkerSettings.model_fields.items()
    if {bool, int, float} & {info.annotation, *getattr(info.annotation, "__args__", ())}
)


@pytest.fixture(params=["", "  "], ids=["empty", "blank"])
def blank_booleans(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in BOOLEAN_VARIABLES:
        monkeypatch.setenv(name, request.param)


def test_the_worker_starts_with_blank_boolean_variables(blank_booleans: None) -> None:
    settings = WorkerSettings()
    assert (settings.explanations, settings.request_criteria) == (
        env.DEFAULT_EXPLANATIONS,
        env.DEFAULT_REQUEST_CRITERIA,
    )
    port = free_port()  # nothing listens there: past the settings, the broker is what fails (exit 1, not 2)
    result = CliRunner().invoke(main, ["worker", "--bootstrap-servers", f"127.0.0.1:{port}", "--telemetry", "none"])
    assert result.exit_code == 1, result.output
    assert "worker failed" in result.output


def test_the_processor_and_the_judge_read_blank_boolean_variables_as_their_defaults(blank_booleans: None) -> None:
    settings = ProcessorSettings.from_env()
    assert (settings.explanations, settings.sample_priority) == (env.DEFAULT_EXPLANATIONS, env.DEFAULT_SAMPLE_PRIORITY)
    assert JudgeSettings.from_env().own_trace is env.DEFAULT_JUDGE_OWN_TRACE


def test_otel_eval_run_reads_blank_boolean_variables_as_their_defaults(blank_booleans: None) -> None:
    trace_file = AGENTEVALS / "helm.json"
    args = ["run", str(trace_file), "-m", "tool_call_count_v1", "--output", "json", "--sinks", "console"]
    result = CliRunner().invoke(main, args)  # the sinks read OTEL_EVAL_EXPLANATIONS and OTEL_EVAL_SINKS_INFORMATIONAL
    assert result.exit_code == 0, result.output
    assert "wrote 0 score(s) to console" in result.stderr  # informational scores left out: the default
    assert "OTEL_EVAL" not in result.stderr


@pytest.mark.parametrize("field", SCALAR_FIELDS)
def test_a_blank_worker_flag_or_number_variable_means_its_default(monkeypatch: pytest.MonkeyPatch, field: str) -> None:
    monkeypatch.setenv(env.ENV_PREFIX + field.upper(), "")
    assert getattr(WorkerSettings(), field) == WorkerSettings.model_fields[field].get_default(call_default_factory=True)
