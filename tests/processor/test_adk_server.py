"""ADK's own servers (``adk api_server``, ``adk web``, ``get_fast_api_app`` in a ``main.py``, what ``adk deploy
cloud_run`` runs) set the global OpenTelemetry providers themselves, before they import the agent. The recipe of
docs/recipe-adk.md, ``otel_eval.attach_to_global_providers()`` in the agent package (or after ``get_fast_api_app``),
is run here as written (its files read from the page): a real ADK server in a subprocess on a loopback port, its
Gemini model the loopback Gemini server, runs posted to ADK's ``/run`` API, the scores read from the server's console
lines."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otel_eval.demo.gemini_server import LoopbackGemini, Reply, text_reply
from tests.emit.sinks.servers import free_port
from tests.judge.helpers import TEST_KEY
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Is it raining in Paris?"
ANSWER = "Yes, it is raining in Paris: 18 degrees."

AGENT = """\
from google.adk.agents import LlmAgent


def get_weather(city: str) -> dict:
    \"\"\"The current weather in a city.\"\"\"
    return {"city": city, "weather": "rain", "temperature_c": 18}


root_agent = LlmAgent(name="weather_agent", model="gemini-2.5-flash", instruction="Answer weather questions.",
                      tools=[get_weather])
"""
PAGE = (ROOT / "docs" / "recipe-adk.md").read_text(encoding="utf-8")


def page_file(name: str) -> str:
    """The python block after ``<!-- file: {name} -->`` on docs/recipe-adk.md."""
    match = re.search(rf"<!-- file: {re.escape(name)} -->\n```python\n(.*?)```", PAGE, re.DOTALL)
    assert match, f"docs/recipe-adk.md shows no {name}"
    return match.group(1)


ATTACHING_INIT = page_file("my_agent/__init__.py")
MAIN = page_file("main.py")


def model(model_name: str, body: dict[str, Any]) -> Reply:
    """The agent's model: calls get_weather, then answers from its result."""
    last = (body.get("contents") or [{}])[-1].get("parts") or []
    if any("functionResponse" in part for part in last):
        return text_reply(ANSWER)
    call = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
    return Reply(json_body={"candidates": [{"content": {"role": "model", "parts": [call]}, "index": 0}]})


@pytest.fixture
def gemini() -> Iterator[LoopbackGemini]:
    server = LoopbackGemini(model).start()
    try:
        yield server
    finally:
        server.stop()


def agents_dir(tmp_path: Path, apps: tuple[str, ...], init: str) -> Path:
    root = tmp_path / "agents"
    for app in apps:
        (root / app).mkdir(parents=True)
        (root / app / "agent.py").write_text(AGENT)
        (root / app / "__init__.py").write_text(init)
    return root


def server_environment(tmp_path: Path, gemini: LoopbackGemini, port: int) -> dict[str, str]:
    eval_set = tmp_path / "golden.test.json"
    expected = [{"tool_name": "get_weather", "tool_input": {"city": "Paris"}}]
    eval_set.write_text(json.dumps([{"query": QUESTION, "expected_tool_use": expected, "reference": ANSWER}]))
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOOGLE_", "GEMINI_", "ADK_"))}
    return inherited | {
        "PYTHONPATH": str(ROOT),
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "GOOGLE_API_KEY": TEST_KEY,
        "GOOGLE_GEMINI_BASE_URL": gemini.base_url,
        "OTEL_EVAL_CONSOLE": "true",
        "OTEL_EVAL_EVAL_SET": str(eval_set),
        "OTEL_EVAL_CRITERIA": json.dumps({"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}),
        # ADK 2.13's default schema with content on log records, not spans: only the companion sees it
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY",
    }


class Server:
    """An ADK server subprocess whose output lines are collected as they come."""

    def __init__(self, command: list[str], environment: dict[str, str], cwd: Path, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            command, env=environment, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def up(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base}/list-apps", timeout=1):
                return True
        except OSError:
            return self.process.poll() is not None

    def post(self, path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            self.base + path, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(request, timeout=20) as response:
            return json.load(response)

    def run(self, app: str) -> list[dict[str, Any]]:
        session = self.post(f"/apps/{app}/users/u1/sessions", {})
        message = {"role": "user", "parts": [{"text": QUESTION}]}
        return list(self.post("/run", {"app_name": app, "user_id": "u1", "session_id": session["id"],
                                       "new_message": message}))  # fmt: skip

    def scores(self) -> list[tuple[str, str, str]]:
        """(metric, label, trace id) of each ``otel-eval:`` console line."""
        pattern = re.compile(r"^otel-eval: (\S+) \S+ (\S+) agent=\S+ trace_id=(\w+)")
        return [match.groups() for line in list(self.lines) if (match := pattern.match(line))]

    def stop(self) -> str:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return "\n".join(self.lines)


@pytest.fixture
def start_server() -> Iterator[Any]:
    servers: list[Server] = []

    def start(command: list[str], environment: dict[str, str], cwd: Path, port: int) -> Server:
        server = Server(command, environment, cwd, port)
        servers.append(server)
        assert wait_until(server.up, timeout=30), "the ADK server did not start"
        assert server.process.poll() is None, server.stop()
        return server

    yield start
    for server in servers:
        server.stop()


def assert_each_run_scored_once(server: Server, runs: int) -> None:
    def scored() -> bool:
        return len({trace for metric, _, trace in server.scores() if metric == "tool_call_count_v1"}) >= runs

    assert wait_until(scored, timeout=20), server.stop()
    server.stop()  # the processors' shutdown (at exit) ends their work: every line any of them prints is in
    scores = server.scores()
    traces = {trace for _, _, trace in scores}
    assert len(traces) == runs
    for trace in traces:
        labels = sorted((metric, label) for metric, label, t in scores if t == trace)
        # the content came on log records to the companion: the tool call's arguments and the answer were rebuilt
        assert ("tool_trajectory_avg_score", "pass") in labels, labels
        assert ("response_match_score", "pass") in labels, labels
        assert labels.count(("tool_call_count_v1", "informational")) == 1, labels  # one processor, not one per app


def test_adk_api_server_with_the_processor_attached_in_the_agent_package(
    tmp_path: Path, gemini: LoopbackGemini, start_server: Any
) -> None:
    port = free_port()
    root = agents_dir(tmp_path, ("weather", "weather_copy"), ATTACHING_INIT)  # each agent attaches: one processor
    command = [sys.executable, "-m", "google.adk.cli", "api_server", "--no-reload", f"--port={port}", str(root)]
    server = start_server(command, server_environment(tmp_path, gemini, port), tmp_path, port)

    events = server.run("weather")
    server.run("weather_copy")

    assert events[-1]["content"]["parts"][0]["text"] == ANSWER
    assert_each_run_scored_once(server, runs=2)


def test_get_fast_api_app_in_main_py_with_the_processor_attached_after_it(
    tmp_path: Path, gemini: LoopbackGemini, start_server: Any
) -> None:
    port = free_port()
    root = agents_dir(tmp_path, ("weather",), "from . import agent\n")
    (root / "main.py").write_text(MAIN)
    server = start_server([sys.executable, str(root / "main.py")], server_environment(tmp_path, gemini, port),
                          root, port)  # fmt: skip

    server.run("weather")

    assert_each_run_scored_once(server, runs=1)


SCRIPT = """\
import sys
from opentelemetry import _logs, trace
import otel_eval

if sys.argv[1] == "noop":
    trace.set_tracer_provider(trace.NoOpTracerProvider())
first = otel_eval.attach_to_global_providers()
print(type(trace.get_tracer_provider()).__name__, type(_logs.get_logger_provider()).__name__,
      otel_eval.attach_to_global_providers() is first)
"""


def test_without_providers_it_sets_sdk_ones_and_with_one_that_takes_no_processors_it_says_which(
    tmp_path: Path,
) -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {
        "PYTHONPATH": str(ROOT), "OTEL_EVAL_CONSOLE": "true"}  # fmt: skip
    unset = subprocess.run([sys.executable, "-c", SCRIPT, "unset"], env=environment, capture_output=True, text=True)
    noop = subprocess.run([sys.executable, "-c", SCRIPT, "noop"], env=environment, capture_output=True, text=True)

    assert unset.returncode == 0, unset.stderr
    assert unset.stdout.split() == ["TracerProvider", "LoggerProvider", "True"]
    assert noop.returncode == 1
    assert "TypeError: attach_to_global_providers: the global tracer provider is a NoOpTracerProvider" in noop.stderr
