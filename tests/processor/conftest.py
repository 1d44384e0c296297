"""Fixtures of the processor tests: an in-memory OpenTelemetry pipeline, no judge credentials unless a test asks
for the loopback judge (``gemini_credentials``) or a judge that never answers (``silent_judge``)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider

from otel_eval.demo.local_judge import scripted_verdicts
from otel_eval.judge import set_default_judge
from otel_eval.transport import InMemoryInvocationExporter
from tests.judge.fake_gemini import FakeGemini
from tests.judge.helpers import TEST_KEY
from tests.processor.telemetry import Telemetry


@pytest.fixture(autouse=True)
def _no_judge_credentials(clean_genai_env: None) -> None:
    """Judged metrics are off unless a test configures the loopback judge."""


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    pipeline = Telemetry()
    yield pipeline
    pipeline.shutdown()


@pytest.fixture
def exporter() -> InMemoryInvocationExporter:
    """Where the processor under test hands its requests (nothing is evaluated)."""
    return InMemoryInvocationExporter()


@pytest.fixture
def provider() -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider()
    yield tracer_provider
    tracer_provider.shutdown()


@pytest.fixture
def gemini_credentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGemini]:
    """The loopback Gemini server with the demo's scripted verdicts, set as the judge through google-genai's own
    variables."""
    with FakeGemini(scripted_verdicts) as server:
        monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        set_default_judge(None)
        yield server
        set_default_judge(None)


@pytest.fixture
def silent_judge() -> Iterator[tuple[str, list[socket.socket]]]:
    """A judge endpoint that accepts connections and never answers, and the connections it holds."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}", held
    stop.set()
    thread.join(5)
    for connection in held:
        connection.close()
    server.close()
