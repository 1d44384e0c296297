"""``OTEL_EVAL_SINKS``: which sinks the processor, the evaluation process and the worker build, and the bounds every
backend sink keeps (a full queue, a backend that never answers)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from otel_eval.emit.console import ConsoleRecordSink
from otel_eval.emit.sinks import BatchingSink, sink_names, sinks_from_env
from otel_eval.emit.sinks.langfuse import LangfuseBackend
from otel_eval.emit.sinks.mlflow import MlflowBackend
from otel_eval.emit.sinks.phoenix import PhoenixBackend
from otel_eval.errors import ConfigurationError
from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord

KEYS = {"LANGFUSE_PUBLIC_KEY": "pk-lf-1", "LANGFUSE_SECRET_KEY": "sk-lf-secret"}


def _record(index: int = 0, **fields: object) -> EvaluationRecord:
    values: dict[str, object] = {
        "result_id": f"r{index}",
        "trace_id": f"{index:032x}",
        "span_id": f"{index:016x}",
        "metric_name": "response_match_score",
        "score": 0.25,
        "eval_status": EvalStatus.FAILED,
        "label": "fail",
    }
    values.update(fields)
    return EvaluationRecord.model_validate(values)


def test_the_names_build_their_sinks_in_order_each_configured_by_its_backend() -> None:
    sinks = sinks_from_env(
        {
            "OTEL_EVAL_SINKS": " phoenix, mlflow ,langfuse,console,phoenix",
            "PHOENIX_COLLECTOR_ENDPOINT": "http://phoenix.internal:6006/v1/traces",
            "MLFLOW_TRACKING_URI": "https://user:pw@mlflow.internal/",
            **KEYS,
            "LANGFUSE_HOST": "https://langfuse.internal",
        }
    )
    assert [type(s) for s in sinks] == [BatchingSink, BatchingSink, BatchingSink, ConsoleRecordSink]
    backends = [s.backend for s in sinks if isinstance(s, BatchingSink)]
    assert [type(b) for b in backends] == [PhoenixBackend, MlflowBackend, LangfuseBackend]
    assert [b.endpoint for b in backends] == [
        "http://phoenix.internal:6006",
        "https://mlflow.internal",  # the user info became a header, out of every log line
        "https://langfuse.internal",
    ]
    assert all("pw" not in repr(s) and "secret" not in repr(s) for s in sinks)
    for sink in sinks:
        if isinstance(sink, BatchingSink):
            sink.shutdown(0)


def test_console_also_comes_from_otel_eval_console_and_nothing_is_built_without_names() -> None:
    assert sink_names({"OTEL_EVAL_CONSOLE": "true"}) == ["console"]
    assert sink_names({"OTEL_EVAL_CONSOLE": "true", "OTEL_EVAL_SINKS": "console"}) == ["console"]
    assert sinks_from_env({}) == [] and sinks_from_env({"OTEL_EVAL_SINKS": " , "}) == []


@pytest.mark.parametrize(("value", "console"), [("on", True), ("YES", True), ("1", True), ("off", False), ("0", False)])
def test_otel_eval_console_reads_every_boolean_spelling(value: str, console: bool) -> None:
    assert sink_names({"OTEL_EVAL_CONSOLE": value}) == (["console"] if console else [])


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"OTEL_EVAL_SINKS": "phoenix,datadog"}, "^OTEL_EVAL_SINKS='phoenix,datadog': unknown sink 'datadog'; "),
        ({"OTEL_EVAL_SINKS": "langfuse"}, "LANGFUSE_PUBLIC_KEY"),
        (  # shown as written: the empty authority was lost ('sqlite:/mlflow.db')
            {"OTEL_EVAL_SINKS": "mlflow", "MLFLOW_TRACKING_URI": "sqlite:///mlflow.db"},
            r"^MLFLOW_TRACKING_URI='sqlite:///mlflow\.db': the mlflow sink needs an MLflow tracking server ",
        ),
        (
            {"OTEL_EVAL_SINKS": "phoenix", "PHOENIX_COLLECTOR_ENDPOINT": "localhost:6006"},
            r"^PHOENIX_COLLECTOR_ENDPOINT='localhost:6006': the phoenix sink needs a Phoenix server \(an http:// or ",
        ),
        (
            {
                "OTEL_EVAL_SINKS": "langfuse",
                "LANGFUSE_BASE_URL": "ftp://x",
                "LANGFUSE_PUBLIC_KEY": "p",
                "LANGFUSE_SECRET_KEY": "s",
            },
            r"^LANGFUSE_BASE_URL='ftp://x': the langfuse sink needs a Langfuse server \(an http:// or ",
        ),
        ({"OTEL_EVAL_SINKS": "phoenix", "OTEL_EVAL_SINKS_RETRY_SECONDS": "soon"}, "OTEL_EVAL_SINKS_RETRY_SECONDS"),
        ({"OTEL_EVAL_CONSOLE": "maybe"}, "^OTEL_EVAL_CONSOLE='maybe': expected true or false$"),
    ],
)
def test_a_bad_setting_fails_at_start_up_naming_it(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        sinks_from_env(environ)


def test_informational_results_are_sent_only_when_asked() -> None:
    quiet = BatchingSink(PhoenixBackend("http://127.0.0.1:9"), max_queue_size=10)
    asked = BatchingSink(PhoenixBackend("http://127.0.0.1:9"), max_queue_size=10, informational=True)
    info = _record(score=3.0, eval_status=EvalStatus.INFORMATIONAL, label="informational")
    for sink in (quiet, asked):
        sink([info, _record(1)])
        sink.shutdown(0)
    assert quiet.stats()["dropped.shutdown"] == 1
    assert asked.stats()["dropped.shutdown"] == 2


def test_a_backend_that_never_answers_costs_the_caller_nothing_and_the_exit_a_bounded_wait() -> None:
    with socket.socket() as black_hole:  # accepts connections into its backlog, never answers
        black_hole.bind(("127.0.0.1", 0))
        black_hole.listen(64)
        port = black_hole.getsockname()[1]
        sink = BatchingSink(PhoenixBackend(f"http://127.0.0.1:{port}"), max_queue_size=5)
        started = time.monotonic()
        for index in range(8):
            sink([_record(index)])
        assert time.monotonic() - started < 0.2
        assert sink.stats()["dropped.queue_full"] == 3
        started = time.monotonic()
        sink.shutdown(30_000)
        assert time.monotonic() - started < 7.0  # EXIT_FLUSH_S (5 s), not the 30 s asked
    assert sink.stats()["dropped.shutdown"] == 5


BLOCKED_IMPORT = """
import sys
sys.modules[sys.argv[1]] = None
from otel_eval.emit.sinks import sinks_from_env
from otel_eval.errors import ConfigurationError
from otel_eval.traces.backends import reader_from_env
for build in (
    lambda: sinks_from_env({"OTEL_EVAL_CONSOLE": "true"}),
    lambda: sinks_from_env({"OTEL_EVAL_SINKS": "console,mlflow", "MLFLOW_TRACKING_URI": "http://127.0.0.1:5000"}),
    lambda: [reader_from_env("phoenix", {})],
):
    try:
        print(*(type(built).__name__ for built in build()))
    except ConfigurationError as exc:
        print(exc)
"""


def _without(module: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", BLOCKED_IMPORT, module], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_without_httpx_every_sink_and_reader_is_built() -> None:
    """A default install with google-genai 3 has httpx2 and no httpx: the console sink, the backend sinks and the
    backfill readers all build there, with no extra. In a fresh interpreter, httpx blocked."""
    assert _without("httpx") == ["ConsoleRecordSink", "ConsoleRecordSink BatchingSink", "PhoenixReader"]


def test_without_httpx2_the_console_sink_is_built_and_a_backend_names_its_extra() -> None:
    """Without httpx2 (google-genai 2, no extra) the console sink needs nothing; a backend sink or a backfill reader
    fails at start-up with a message naming the setting and the extra, not a traceback from inside an import."""
    assert _without("httpx2") == [
        "ConsoleRecordSink",
        "OTEL_EVAL_SINKS=mlflow needs the 'httpx2' package, which is not installed: pip install 'otel-eval[mlflow]'",
        "--from phoenix needs the 'httpx2' package, which is not installed: pip install 'otel-eval[phoenix]'",
    ]
