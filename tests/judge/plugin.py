"""Pytest fixtures of the judged tests: the loopback Gemini server, a clean google-genai environment, and ADK
pointed at the server. Load with ``pytest_plugins = ("tests.judge.plugin",)`` in a test module (plus
``pytestmark = pytest.mark.usefixtures("clean_genai_env")``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from otel_eval.judge import set_default_judge
from tests.judge.fake_gemini import FakeGemini, fake_gemini
from tests.judge.helpers import TEST_KEY

__all__ = ["fake_gemini"]

_GENAI_ENV = (
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "GOOGLE_GENAI_API_VERSION",
)


@pytest.fixture
def clean_genai_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test sees the machine's Google credentials or a stale default judge."""
    for name in _GENAI_ENV:
        monkeypatch.delenv(name, raising=False)
    set_default_judge(None)
    yield
    set_default_judge(None)


@pytest.fixture
def adk_env(monkeypatch: pytest.MonkeyPatch, fake_gemini: FakeGemini, clean_genai_env: None) -> FakeGemini:
    """google-genai's own environment pointing at the fake server, as ADK's Gemini model reads it."""
    monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    return fake_gemini
