"""``otel-eval run``'s outputs besides its own: ``--export-otlp`` (result events over real OTLP/HTTP to a loopback
receiver), ``--sinks console``, ``--dry-run``, and the backfill options' parsing; no backend needed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import click
import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval.cli._backfill import parse_duration, parse_instant
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.demo.golden import golden_eval_set
from tests._kafka import free_port
from tests.cli.conftest import CliResult
from tests.worker._harness import OtlpSink

CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The demo's scenarios as an OTLP JSON file, the eval set and config beside it; the root span of each trace."""
    folder = Path(tmp_path_factory.mktemp("outputs"))
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: "travel-agent"}), shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    agent = TravelAgent(provider)
    for index, scenario in enumerate(SCENARIOS):
        agent.run(scenario, conversation_id=f"outputs-{index}")
    spans = memory.get_finished_spans()
    (folder / "agent.json").write_text(json.dumps(MessageToDict(encode_spans(spans))))
    (folder / "golden.evalset.json").write_text(golden_eval_set().model_dump_json())
    (folder / "config.json").write_text(json.dumps({"criteria": CRITERIA}))
    roots = {format(s.context.trace_id, "032x"): format(s.context.span_id, "016x") for s in spans if s.parent is None}
    return folder, roots


def _run(cli: Callable[..., CliResult], folder: Path, *args: str) -> CliResult:
    common = ["--eval-set", folder / "golden.evalset.json", "--config", folder / "config.json"]
    return cli("run", folder / "agent.json", *common, *args)


def test_export_otlp_sends_one_result_event_per_invocation_and_metric_on_its_root_span(
    recorded: tuple[Path, dict[str, str]], cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, roots = recorded
    sink = OtlpSink().start()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint)
        monkeypatch.setenv("OTEL_EVAL_SINKS", "")
        result = _run(cli, folder, "--export-otlp", "--output", "json")
        assert result.exit_code in (0, 1), result.stderr
        events = sink.events()
    finally:
        sink.stop()
    metrics = {m["metric_name"] for c in result.json()["results"] for m in c["metrics"]}
    assert len(events) == len(roots) * len(metrics)  # informational ones too, as online
    assert {(e.trace_id, e.span_id) for e in events} == set(roots.items())
    assert {e.metric for e in events} == metrics
    assert len({e.result_id for e in events}) == len(events)
    assert f"exported {len(events)} result(s) over OTLP" in result.stderr
    scores = {
        (trace_id, m["metric_name"]): m["per_invocation_scores"][0]
        for c in result.json()["results"]
        for trace_id in c["trace_ids"]
        for m in c["metrics"]
    }
    assert {(e.trace_id, e.metric): e.score for e in events} == scores


def test_export_otlp_to_an_endpoint_that_is_down_says_what_failed_and_exits_4_without_its_token(
    recorded: tuple[Path, dict[str, str]],
    cli: Callable[..., CliResult],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    folder, _ = recorded
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{free_port()}/?token=0tlp-T0ken")
    # Long enough for one retry (the SDK's first backoff is 0.8-1.2 s, and a retry is logged only if it fits the
    # timeout): its warning names the endpoint, which is what the redaction is checked on.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "3")
    monkeypatch.setenv("OTEL_EVAL_SINKS", "")
    result = _run(cli, folder, "--export-otlp")
    assert result.exit_code == 4, result.stderr
    assert "error: the OTLP export of the result events (logs) to http://127.0.0.1:" in result.stderr
    assert "error: the OTLP export of the score metrics to http://127.0.0.1:" in result.stderr
    assert "over OTLP" not in result.stderr  # no "exported N result(s)" for what was not
    logged = " ".join(record.getMessage() for record in caplog.records)
    assert "0tlp-T0ken" not in result.stderr + logged
    assert "?***" in logged  # the SDK retry warnings name the endpoint, its query redacted


def test_sinks_console_prints_one_line_per_score_and_a_dry_run_writes_nothing(
    recorded: tuple[Path, dict[str, str]], cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, roots = recorded
    monkeypatch.delenv("OTEL_EVAL_SINKS", raising=False)
    written = _run(cli, folder, "--sinks", "console")
    assert written.exit_code in (0, 1), written.stderr
    lines = [line for line in written.stdout.splitlines() if "response_match_score" in line and "trace" in line]
    assert lines, written.stdout
    dry = _run(cli, folder, "--sinks", "console", "--dry-run")
    assert dry.exit_code == 0, dry.stderr
    expected = f"{len(roots)} invocation(s)"
    assert expected in dry.stdout and f"{len(roots) * len(CRITERIA)} score(s) would be written" in dry.stdout
    assert not [line for line in dry.stdout.splitlines() if "trace" in line]  # no score line: nothing scored


def test_an_unknown_sink_is_refused_before_anything_is_read(
    recorded: tuple[Path, dict[str, str]], cli: Callable[..., CliResult]
) -> None:
    folder, _ = recorded
    result = _run(cli, folder, "--sinks", "nowhere")
    assert result.exit_code == 2
    assert "error: --sinks nowhere: unknown sink 'nowhere'; expected" in result.stderr  # the flag, not the variable


def test_trace_files_and_from_exclude_each_other(
    recorded: tuple[Path, dict[str, str]], cli: Callable[..., CliResult]
) -> None:
    folder, _ = recorded
    both = _run(cli, folder, "--from", "phoenix")
    neither = cli("run")
    assert both.exit_code == neither.exit_code == 2
    assert (
        "give TRACE_FILES or --from BACKEND" in both.stderr and "give TRACE_FILES or --from BACKEND" in neither.stderr
    )


@pytest.mark.parametrize(
    ("text", "seconds"), [("30m", 1800), ("24h", 86400), ("7d", 604800), ("2w", 1209600), ("45s", 45)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds
    assert parse_instant(text, 1_000_000_000.0) == int((1_000_000_000.0 - seconds) * 1e9)


def test_instants_and_bad_input() -> None:
    assert parse_instant("2026-01-02T03:04:05+00:00", 0) == 1767323045 * 10**9
    assert parse_instant("2026-01-02T03:04:05", 0) == 1767323045 * 10**9  # UTC when no zone is named
    for bad in ("yesterday", "5y", "-3h", ""):
        with pytest.raises(click.BadParameter):
            parse_instant(bad, 0)


def test_backend_options_without_from_and_a_bad_since_are_refused_at_once(
    recorded: tuple[Path, dict[str, str]], cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = recorded
    without = _run(cli, folder, "--since", "1h")
    assert without.exit_code == 2 and "use --from" in without.stderr
    bad = cli("run", "--from", "phoenix", "--since", "yesterday")
    assert bad.exit_code == 2 and "expected a duration" in bad.stderr
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///mlflow.db")
    local = cli("run", "--from", "mlflow", "--eval-set", folder / "golden.evalset.json")
    assert local.exit_code == 2 and "needs an MLflow tracking server" in local.stderr


@pytest.mark.parametrize(
    ("args", "flag", "problem"),
    [
        (("--since", "99999999d"), "--since", "'99999999d': out of range"),
        (("--since", "9999999999999999999999w"), "--since", "out of range"),
        (("--since", "1h", "--until", "99999999d"), "--until", "'99999999d': out of range"),
        (("--since", "1h", "--until", "2h"), "--until", "--until '2h' is before --since '1h'"),
        (("--since", "2026-01-02", "--until", "2026-01-01T23:00"), "--until", "is before --since '2026-01-02'"),
    ],
)
def test_a_window_out_of_range_or_reversed_is_a_usage_error_naming_the_flag(
    cli: Callable[..., CliResult], args: tuple[str, ...], flag: str, problem: str
) -> None:
    result = cli("run", "--from", "phoenix", *args, "-m", "tool_call_count_v1")
    assert result.exit_code == 2, result.stderr
    assert f"Invalid value for '{flag}'" in result.stderr and problem in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("variables", "args", "named"),
    [
        ({"PHOENIX_COLLECTOR_ENDPOINT": "not-a-url"}, ("--sinks", "phoenix"), "PHOENIX_COLLECTOR_ENDPOINT='not-a-url'"),
        (
            {
                "LANGFUSE_BASE_URL": "ftp://user:pa55word@x?token=t0ken",
                "LANGFUSE_PUBLIC_KEY": "pk",
                "LANGFUSE_SECRET_KEY": "sk",
            },
            ("--sinks", "langfuse"),
            "LANGFUSE_BASE_URL='ftp://x'",
        ),
        (
            {"LANGFUSE_HOST": "http://", "LANGFUSE_PUBLIC_KEY": "pk", "LANGFUSE_SECRET_KEY": "sk"},
            ("--sinks", "langfuse"),
            "LANGFUSE_HOST='http://'",
        ),
        (
            {"MLFLOW_TRACKING_URI": "http://host:99999"},
            ("--sinks", "mlflow"),
            "MLFLOW_TRACKING_URI='http://host:99999'",
        ),
        (
            {"PHOENIX_COLLECTOR_ENDPOINT": "localhost:6006?api_key=t0ken"},
            ("--from", "phoenix", "--since", "1h"),
            "PHOENIX_COLLECTOR_ENDPOINT='localhost:6006'",
        ),
        ({"MLFLOW_TRACKING_URI": "mlflow.internal"}, ("--from", "mlflow"), "MLFLOW_TRACKING_URI='mlflow.internal'"),
    ],
)
def test_a_malformed_backend_url_is_bad_input_at_start_up_not_a_backend_down(
    recorded: tuple[Path, dict[str, str]],
    cli: Callable[..., CliResult],
    monkeypatch: pytest.MonkeyPatch,
    variables: dict[str, str],
    args: tuple[str, ...],
    named: str,
) -> None:
    folder, _ = recorded
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    result = cli("run", *args, "-m", "tool_call_count_v1") if "--from" in args else _run(cli, folder, *args)
    assert result.exit_code == 2, result.stderr
    assert f"error: {named}: " in result.stderr and "(an http:// or https:// URL with a host)" in result.stderr
    assert "t0ken" not in result.stderr and "pa55word" not in result.stderr
