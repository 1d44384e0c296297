"""WorkerSettings from flags and OTEL_EVAL_* variables; the ``otel-eval worker`` command's exit codes."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from otel_eval import environment_variables as env
from otel_eval.cli import main
from otel_eval.worker.settings import WorkerSettings
from tests._kafka import free_port

SECRET = "w0rker-Sasl-Secret"


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS, "k1:9092,k2:9092")
    monkeypatch.setenv(env.OTEL_EVAL_WORKER_SOURCES, "otlp_spans, requests")
    monkeypatch.setenv(env.OTEL_EVAL_WORKER_CONCURRENCY, "3")
    monkeypatch.setenv(env.OTEL_EVAL_TRACE_IDLE_TIMEOUT, "2.5")
    monkeypatch.setenv(env.OTEL_EVAL_MAX_TRACE_AGE, "90")
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_SECURITY_PROTOCOL, "SASL_PLAINTEXT")
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_SASL_MECHANISM, "SCRAM-SHA-256")
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_SASL_USERNAME, "worker")
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_SASL_PASSWORD, SECRET)
    settings = WorkerSettings()
    assert settings.servers == ["k1:9092", "k2:9092"]
    assert settings.sources == ("otlp_spans", "requests")
    assert settings.topics == {"otlp_spans": "otlp_spans", "otel_eval.requests": "requests"}
    assert (settings.worker_concurrency, settings.trace_idle_timeout, settings.max_trace_age) == (3, 2.5, 90.0)
    assert WorkerSettings.model_fields["max_trace_age"].default == env.DEFAULT_MAX_TRACE_AGE
    assert settings.security().client_kwargs()["sasl_plain_password"] == SECRET
    assert SECRET not in repr(settings) and SECRET not in str(settings.model_dump())
    # A constructor argument (a command-line flag) wins over the environment.
    assert WorkerSettings(worker_concurrency=7).worker_concurrency == 7


PROCESSOR_ONLY_KAFKA = {env.OTEL_EVAL_KAFKA_LINGER_MS, env.OTEL_EVAL_KAFKA_DELIVERY_TIMEOUT_MS}
"""Settings of the agent's Kafka exporter, not of the worker."""


def test_every_worker_setting_has_its_environment_constant_and_back() -> None:
    constants = {value for name, value in vars(env).items() if name.startswith("OTEL_EVAL_")}
    variables = {env.ENV_PREFIX + field.upper(): field for field in WorkerSettings.model_fields}
    assert set(variables) - constants == set(), "a WorkerSettings field without its environment_variables constant"
    worker_side = {
        name for name in constants if name.startswith(("OTEL_EVAL_KAFKA_", "OTEL_EVAL_WORKER_"))
    } - PROCESSOR_ONLY_KAFKA
    assert worker_side - set(variables) == set(), "a worker variable that WorkerSettings does not read"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("worker_sources", "requests,kafka", "expected a comma-separated list"),
        ("worker_concurrency", 0, "greater than or equal to 1"),
        ("kafka_compression", "brotli", "compression 'brotli'"),
        ("kafka_bootstrap_servers", " , ", "bootstrap servers"),
        ("max_trace_age", 0, "greater than 0"),
    ],
)
def test_bad_settings_are_rejected(field: str, value: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        WorkerSettings(**{field: value})


def test_cli_reports_bad_settings_with_exit_code_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env.OTEL_EVAL_WORKER_CONCURRENCY, "zero")
    result = CliRunner().invoke(main, ["worker", "--telemetry", "none"])
    assert result.exit_code == 2
    assert "OTEL_EVAL_WORKER_CONCURRENCY='zero'" in result.output
    monkeypatch.delenv(env.OTEL_EVAL_WORKER_CONCURRENCY)
    result = CliRunner().invoke(main, ["worker", "--source", "kafka"])
    assert result.exit_code == 2
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_SECURITY_PROTOCOL, "SASL_SSL")
    result = CliRunner().invoke(main, ["worker", "--telemetry", "none"])
    assert result.exit_code == 2
    assert "needs sasl_username and sasl_password" in result.output


@pytest.mark.parametrize(
    ("flag", "variable", "value", "expected"),
    [
        ("--concurrency", env.OTEL_EVAL_WORKER_CONCURRENCY, "0", "expected an integer >= 1"),
        ("--metrics-port", env.OTEL_EVAL_WORKER_METRICS_PORT, "70000", "expected an integer >= 0 and <= 65535"),
        ("--shutdown-timeout", env.OTEL_EVAL_WORKER_SHUTDOWN_TIMEOUT, "-1.5", "expected a number >= 0"),
        ("--emit", env.OTEL_EVAL_EMIT, "foo", "unknown signal 'foo': expected any of events, spans, metrics"),
    ],
)
def test_a_bad_setting_names_the_flag_or_the_variable_the_user_wrote(
    monkeypatch: pytest.MonkeyPatch, flag: str, variable: str, value: str, expected: str
) -> None:
    # an unreachable broker: a setting error must be said (exit 2) before any connection is tried
    base = ["worker", "--bootstrap-servers", f"127.0.0.1:{free_port()}", "--telemetry", "none"]
    by_flag = CliRunner().invoke(main, [*base, flag, value])
    monkeypatch.setenv(variable, value)
    by_variable = CliRunner().invoke(main, base)
    for result, named in ((by_flag, f"{flag} {value}:"), (by_variable, f"{variable}={value!r}:")):
        assert result.exit_code == 2, result.output
        line = result.output.strip().splitlines()[-1]
        assert line.startswith(f"error: {named}") and expected in line, line
        assert "worker failed" not in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(
    ("variable", "value", "line"),
    [
        (
            env.OTEL_EVAL_WORKER_TELEMETRY,
            "stdout",
            "OTEL_EVAL_WORKER_TELEMETRY='stdout': expected one of otlp, prometheus",
        ),
        (env.OTEL_EVAL_REQUEST_CRITERIA, "maybe", "OTEL_EVAL_REQUEST_CRITERIA='maybe': expected true or false"),
        (env.OTEL_EVAL_WORKER_SOURCES, "kafka", "OTEL_EVAL_WORKER_SOURCES='kafka': expected a comma-separated list of"),
        (
            env.OTEL_EVAL_MAX_OPEN_TRACES_PER_TENANT,
            "x",
            "OTEL_EVAL_MAX_OPEN_TRACES_PER_TENANT='x': expected an integer",
        ),
        (
            env.OTEL_EVAL_KAFKA_MAX_POLL_INTERVAL_MS,
            "500",
            "OTEL_EVAL_KAFKA_MAX_POLL_INTERVAL_MS='500': expected an integer >= 1000",
        ),
    ],
)
def test_a_bad_variable_of_any_kind_is_named_with_its_value(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, line: str
) -> None:
    monkeypatch.setenv(variable, value)
    result = CliRunner().invoke(main, ["worker", "--bootstrap-servers", f"127.0.0.1:{free_port()}"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1].startswith(f"error: {line}"), result.output


def test_a_bad_criteria_or_eval_set_names_the_flag_or_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = tmp_path / "missing.json"
    base = ["worker", "--bootstrap-servers", f"127.0.0.1:{free_port()}", "--telemetry", "none"]
    for flag, variable, value in (
        ("--criteria", env.OTEL_EVAL_CRITERIA, "{bad"),
        ("--eval-set", env.OTEL_EVAL_EVAL_SET, str(missing)),
    ):
        by_flag = CliRunner().invoke(main, [*base, flag, value])
        with monkeypatch.context() as patched:
            patched.setenv(variable, value)
            by_variable = CliRunner().invoke(main, base)
        for result, named in ((by_flag, flag), (by_variable, variable)):
            assert result.exit_code == 2, result.output
            assert result.output.strip().splitlines()[-1].startswith(f"error: {named}: "), result.output


@pytest.mark.parametrize(
    ("criteria", "problem"),
    [
        (
            {"criteria": {"halucinations_v1": 0.8}},
            "criteria.halucinations_v1: unknown metric 'halucinations_v1'; did you mean hallucinations_v1?",
        ),
        ({"safety_v1": "high"}, "invalid criteria: criteria.safety_v1: Input should be a valid number"),
    ],
)
def test_criteria_the_worker_cannot_run_name_the_flag_or_variable_the_file_and_the_criterion(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, criteria: dict[str, object], problem: str
) -> None:
    path = tmp_path / "criteria.json"
    path.write_text(json.dumps(criteria))
    base = ["worker", "--bootstrap-servers", f"127.0.0.1:{free_port()}", "--telemetry", "none"]
    by_flag = CliRunner().invoke(main, [*base, "--criteria", str(path)])
    monkeypatch.setenv(env.OTEL_EVAL_CRITERIA, str(path))
    by_variable = CliRunner().invoke(main, base)
    for result, named in ((by_flag, "--criteria"), (by_variable, env.OTEL_EVAL_CRITERIA)):
        assert result.exit_code == 2, result.output
        assert result.output.strip().splitlines()[-1].startswith(f"error: {named} file {path}: {problem}")


def test_bootstrap_servers_with_a_password_are_refused_without_printing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(main, ["worker", "--bootstrap-servers", f"admin:{SECRET}@127.0.0.1:{free_port()}"])
    assert result.exit_code == 2 and "is written with credentials" in result.output
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS, f"k1:9092,admin:{SECRET}@k2:9092")
    result = CliRunner().invoke(main, ["worker"])
    assert result.exit_code == 2
    assert "error: OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS='k1:9092,k2:9092': " in result.output
    assert SECRET not in result.output and "admin" not in result.output


def test_cli_exits_1_when_the_broker_is_unreachable_and_never_prints_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_SECURITY_PROTOCOL, "SASL_PLAINTEXT")
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_SASL_USERNAME, "worker")
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_SASL_PASSWORD, SECRET)
    port = free_port()  # nothing listens there
    result = CliRunner().invoke(main, ["worker", "--bootstrap-servers", f"127.0.0.1:{port}", "--telemetry", "none"])
    assert result.exit_code == 1
    assert "worker failed" in result.output
    assert SECRET not in result.output


def test_cli_exits_1_with_a_clear_line_when_the_health_port_is_taken() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = ["worker", "--bootstrap-servers", f"127.0.0.1:{free_port()}", "--telemetry", "none"]
        args += ["--metrics-host", "127.0.0.1", "--metrics-port", str(port)]
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert f"error: worker failed: cannot serve /healthz, /readyz, /metrics on 127.0.0.1:{port}" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("source", "flag", "variable"),
    [
        ("requests", "--requests-topic", env.OTEL_EVAL_KAFKA_REQUESTS_TOPIC),
        ("otlp_spans", "--spans-topic", env.OTEL_EVAL_KAFKA_SPANS_TOPIC),
        ("otlp_spans,otlp_logs", "--logs-topic", env.OTEL_EVAL_KAFKA_LOGS_TOPIC),
        ("requests,sessions", "--sessions-topic", env.OTEL_EVAL_KAFKA_SESSIONS_TOPIC),
    ],
)
def test_a_consumed_source_with_an_empty_topic_is_refused_at_start_up(
    monkeypatch: pytest.MonkeyPatch, source: str, flag: str, variable: str
) -> None:
    consumed = source.split(",")[-1]
    each = [arg for name in source.split(",") for arg in ("--source", name)]
    by_flag = CliRunner().invoke(main, ["worker", "--telemetry", "none", *each, f"{flag}="])
    assert by_flag.exit_code == 2, by_flag.output
    assert f"--source {source} consumes {consumed}, but {flag} '' is empty" in by_flag.stderr
    assert "Traceback" not in by_flag.output
    monkeypatch.setenv(env.OTEL_EVAL_WORKER_SOURCES, source)
    monkeypatch.setenv(variable, " ")
    by_variable = CliRunner().invoke(main, ["worker", "--telemetry", "none"])
    assert by_variable.exit_code == 2, by_variable.output
    assert f"{env.OTEL_EVAL_WORKER_SOURCES}='{source}' consumes {consumed}, but {variable}=' ' is empty" in (
        by_variable.stderr
    )


def test_an_empty_topic_of_a_source_not_consumed_is_no_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_SESSIONS_TOPIC, "")
    settings = WorkerSettings.from_flags({"worker_sources": ("--source", "requests")})
    assert settings.topics == {"otel_eval.requests": "requests"}


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_a_tls_file_that_cannot_be_loaded_is_a_bad_setting_named_by_its_variable(
    protocol: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Exit 2 at start-up, one line naming the variable and the file; before, the worker started, failed inside and
    exited 1 ("worker failed") with the path alone."""
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_SECURITY_PROTOCOL, protocol)
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_SASL_USERNAME, "worker")
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_SASL_PASSWORD, SECRET)
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_SSL_CAFILE, str(tmp_path / "ca.pem"))
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_SSL_KEY_PASSWORD, SECRET)
    result = CliRunner().invoke(
        main, ["worker", "--bootstrap-servers", f"127.0.0.1:{free_port()}", "--telemetry", "none"]
    )
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        f"error: Kafka TLS files (OTEL_EVAL_KAFKA_SSL_CAFILE='{tmp_path / 'ca.pem'}') cannot be loaded: "
        "[Errno 2] No such file or directory"
    ]


def test_every_worker_option_names_its_variable_in_the_help() -> None:
    """Each flag also reads an ``OTEL_EVAL_*`` variable (collector_config/README.md says so): ``--help`` names it."""
    from otel_eval.cli.worker import worker

    unnamed = [
        option.opts[0]
        for option in worker.params
        if option.opts[0] not in ("--log-level", "--help")
        and "[env OTEL_EVAL_" not in (getattr(option, "help", None) or "")
    ]
    assert unnamed == []


def test_a_misspelt_request_metric_is_refused_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the worker started and refused every request naming the metric meant (counted, logged once)."""
    base = ["worker", "--telemetry", "none", "--bootstrap-servers", f"127.0.0.1:{free_port()}", "--metrics-port", "0"]
    by_flag = CliRunner().invoke(main, [*base, "--request-criteria", "--request-metrics", "halucinations_v1,safety_v1"])
    assert by_flag.exit_code == 2, by_flag.output
    assert by_flag.output.strip().splitlines() == [
        "error: --request-metrics: unknown metric 'halucinations_v1'; did you mean hallucinations_v1?"
    ]
    monkeypatch.setenv(env.OTEL_EVAL_REQUEST_CRITERIA, "true")
    monkeypatch.setenv(env.OTEL_EVAL_REQUEST_METRICS, "*,safty_v1")
    by_variable = CliRunner().invoke(main, base)
    assert by_variable.exit_code == 2, by_variable.output
    assert "error: OTEL_EVAL_REQUEST_METRICS: unknown metric 'safty_v1'; did you mean safety_v1?" in by_variable.output


def test_an_empty_consumer_group_is_refused_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the worker started in group '' (a ConfigMap's empty value): a group Kafka refuses commits of, shared by
    every worker configured alike."""
    base = ["worker", "--telemetry", "none", "--bootstrap-servers", f"127.0.0.1:{free_port()}", "--metrics-port", "0"]
    by_flag = CliRunner().invoke(main, [*base, "--group-id="])
    assert (by_flag.exit_code, by_flag.output) == (2, "error: --group-id '': empty (expected a name)\n")
    monkeypatch.setenv(env.OTEL_EVAL_KAFKA_GROUP_ID, "")
    by_variable = CliRunner().invoke(main, base)
    assert (by_variable.exit_code, by_variable.output) == (
        2,
        "error: OTEL_EVAL_KAFKA_GROUP_ID='': empty (expected a name)\n",
    )


def test_reference_metrics_without_an_eval_set_on_the_collector_path_are_said_at_start_up(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """Before, a Collector-path worker given tool_trajectory_avg_score and no eval set started quietly and never scored
    it: every trace paired with no case, and online an unpaired invocation gets no reference metric at all."""
    base = ["worker", "--telemetry", "none", "--bootstrap-servers", f"127.0.0.1:{free_port()}", "--metrics-port", "0"]
    criteria = '{"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8, "safety_v1": 0.8}'
    collector = [*base, "--source", "otlp_spans", "--criteria", criteria]
    with caplog.at_level("WARNING", logger="otel_eval.worker"):
        assert CliRunner().invoke(main, collector).exit_code == 1  # nothing listens at the broker's address
    warned = [r.getMessage() for r in caplog.records if "eval set" in r.getMessage()]
    assert warned == [
        "response_match_score, tool_trajectory_avg_score need an eval set (OTEL_EVAL_EVAL_SET): the traces read from "
        "otlp_spans pair with no case, so these metrics are never scored"
    ]
    eval_set = tmp_path / "golden.test.json"
    eval_set.write_text('{"eval_set_id": "s", "eval_cases": []}', encoding="utf-8")
    quiet = (
        [*collector, "--eval-set", str(eval_set)],
        [*base, "--source", "requests", "--criteria", criteria],
        [*base, "--source", "otlp_spans"],
    )
    for args in quiet:
        # With an eval set, on requests (the agent's processor may send each one's case), or on ADK's default
        # criteria (which add the reference metrics only with an eval set): quiet.
        caplog.clear()
        with caplog.at_level("WARNING", logger="otel_eval.worker"):
            assert CliRunner().invoke(main, args).exit_code == 1
        assert not [r for r in caplog.records if "eval set" in r.getMessage()]
