"""Fixtures of the processor tests: an in-memory OpenTelemetry pipeline, and no judge credentials."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from otel_eval.judge import set_default_judge
from tests.processor.telemetry import Telemetry

_GENAI_ENV = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GEMINI_BASE_URL")


@pytest.fixture(autouse=True)
def _no_judge_credentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Judged metrics are off unless a test configures the loopback judge."""
    for name in _GENAI_ENV:
        monkeypatch.delenv(name, raising=False)
    set_default_judge(None)
    yield
    set_default_judge(None)


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    pipeline = Telemetry()
    yield pipeline
    pipeline.shutdown()
