"""``otel-eval run --from phoenix|mlflow`` against a loopback server speaking each backend's REST paths with hostile
replies (a backend's answers are untrusted): a page cursor handed out again, a reply that is not JSON or not an
object, an experiment lookup without its id. Each run ends at once with exit 4 and one error line naming what the
backend did, never a traceback, never a run that reads forever, never the backend's key."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.cli.conftest import CliResult
from tests.loopback import LoopbackServer

pytestmark = [pytest.mark.timeout(60)]

KEY = "phx-key-do-not-print-0123456789"
TRACE_ID = "8fc1b6b09ac9463a8c4e5aaf0d1d2e3f"
ROOT = {"trace_id": TRACE_ID, "span_id": "65884e2484426cfe", "parent_span_id": None, "name": "invoke_agent a",
        "start_time_unix_nano": 1_000, "end_time_unix_nano": 2_000, "attributes": []}  # fmt: skip
Reply = Callable[[str, str], Any]
"""(path, query) -> the JSON to answer, or bytes sent as they are."""


class _Backend:
    """A loopback HTTP server answering every request with ``reply`` (HTTP 200)."""

    def __init__(self) -> None:
        self.reply: Reply = lambda path, query: {}
        self.requests = 0
        backend = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                backend.requests += 1
                answer = backend.reply(urlsplit(self.path).path, urlsplit(self.path).query)
                body = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

        self._server = LoopbackServer(Handler)
        self.url = self._server.url

    def close(self) -> None:
        self._server.close()


@pytest.fixture
def backend(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Backend]:
    server = _Backend()
    monkeypatch.setenv("PHOENIX_COLLECTOR_ENDPOINT", server.url)
    monkeypatch.setenv("PHOENIX_API_KEY", KEY)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server.url)
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", KEY)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "agent")
    monkeypatch.setenv("OTEL_EVAL_SINKS", "")
    yield server
    server.close()


def _phoenix(roots: Any, spans: Any) -> Reply:
    """Phoenix's spans path: ``roots`` for the root-span query (``parent_id=null``), ``spans`` for the trace's."""

    def reply(path: str, query: str) -> Any:
        assert path.endswith("/spans/otlpv1")
        return roots if "parent_id=null" in query else spans

    return reply


def _mlflow(search: Any, trace: Any = None, experiment: Any = None) -> Reply:
    def reply(path: str, query: str) -> Any:
        if path.endswith("/experiments/get-by-name"):
            return {"experiment": {"experiment_id": "7"}} if experiment is None else experiment
        if path.endswith("/traces/search"):
            return search
        return {"trace": {"spans": [ROOT]}} if trace is None else trace

    return reply


HOSTILE: dict[str, tuple[str, Reply, str]] = {
    "phoenix spans cursor repeated": (
        "phoenix",
        _phoenix({"data": [ROOT], "next_cursor": None}, {"data": [ROOT], "next_cursor": "again"}),
        "phoenix: reading the spans of project 'default': the backend gave the same next_cursor twice",
    ),
    "phoenix root cursor repeated": (
        "phoenix",
        _phoenix({"data": [ROOT], "next_cursor": "again"}, {"data": [ROOT]}),
        "phoenix: reading the root spans of project 'default': the backend gave the same next_cursor twice",
    ),
    "phoenix reply not JSON": (
        "phoenix",
        lambda path, query: b"<html>maintenance</html>",
        "phoenix: reading the root spans of project 'default': the reply is not a JSON object: '<html>maintenance",
    ),
    "phoenix reply a list": (
        "phoenix",
        lambda path, query: [1, 2],
        "phoenix: reading the root spans of project 'default': the reply is not a JSON object: '[1, 2]'",
    ),
    "phoenix cursor not text": (
        "phoenix",
        lambda path, query: {"data": [ROOT], "next_cursor": {"a": 1}},
        "phoenix: reading the spans of project 'default': the reply's next_cursor is not text",
    ),
    "mlflow page token repeated": (
        "mlflow",
        _mlflow({"traces": [{"trace_id": TRACE_ID}], "next_page_token": "again"}),
        "mlflow: searching experiment 'agent': the backend gave the same next_page_token twice",
    ),
    "mlflow experiment without id": (
        "mlflow",
        _mlflow({}, experiment={"experiment": ["7"]}),
        "mlflow: looking up experiment 'agent': the reply names no experiment_id",
    ),
    "mlflow trace reply not an object": (
        "mlflow",
        _mlflow({"traces": [{"trace_id": TRACE_ID}]}, trace=b"null"),
        f"mlflow: reading trace {TRACE_ID}: the reply is not a JSON object: 'null'",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_backend_reply_ends_the_run_with_4_and_says_what_the_backend_did(
    cli: Callable[..., CliResult], backend: _Backend, case: str
) -> None:
    source, reply, message = HOSTILE[case]
    backend.reply = reply
    result = cli("run", "--from", source, "-m", "tool_trajectory_avg_score")
    assert result.exit_code == 4, result.stderr
    assert "Traceback" not in result.stderr
    assert f"error: {message}" in result.stderr
    assert "nothing was scored or written" in result.stderr
    assert KEY not in result.stderr + result.stdout
    assert backend.requests <= 5  # stopped at the repeat, not read until the test's timeout


@pytest.mark.parametrize(
    "info",
    [
        {"state": "IN_PROGRESS", "request_time": "yesterday", "execution_duration": "1s"},
        {"state": "IN_PROGRESS", "request_time": "2025-01-01T00:00:00Z", "execution_duration": "infs"},
        {"state": "IN_PROGRESS", "request_time": ["2025"], "execution_duration": None},
    ],
)
def test_a_running_trace_whose_times_the_backend_garbles_is_read(
    cli: Callable[..., CliResult], backend: _Backend, info: dict[str, Any]
) -> None:
    backend.reply = _mlflow({"traces": [{"trace_id": TRACE_ID, **info}]})
    result = cli("run", "--from", "mlflow", "-m", "tool_call_count_v1", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "read 1 trace(s) from mlflow" in result.stderr and "still running" not in result.stderr


def test_a_bad_idle_timeout_stops_a_backfill_naming_the_variable(
    cli: Callable[..., CliResult], backend: _Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EVAL_TRACE_IDLE_TIMEOUT", "soon")
    result = cli("run", "--from", "mlflow", "-m", "tool_call_count_v1")
    assert result.exit_code == 2, result.stderr
    assert "error: OTEL_EVAL_TRACE_IDLE_TIMEOUT='soon': expected seconds" in result.stderr
    assert backend.requests == 0
