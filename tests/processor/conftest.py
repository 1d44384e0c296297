"""Fixtures of the processor tests: an in-memory OpenTelemetry pipeline, no judge credentials unless a test asks
for the loopback judge (``gemini_credentials``)."""

from __future__ import annotations

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
