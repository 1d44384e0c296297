"""Pytest fixtures of the judged tests: the loopback Gemini server, a clean google-genai environment, and ADK
pointed at the server. Load with ``pytest_plugins = ("tests.judge.plugin",)`` in a test module (plus
``pytestmark = pytest.mark.usefixtures("clean_genai_env")``)."""

from __future__ import annotations

import pytest

from tests.environment import use_loopback_judge
from tests.judge.fake_gemini import FakeGemini, fake_gemini

__all__ = ["fake_gemini"]


@pytest.fixture
def adk_env(monkeypatch: pytest.MonkeyPatch, fake_gemini: FakeGemini, clean_genai_env: None) -> FakeGemini:
    """google-genai's own environment pointing at the fake server, as ADK's Gemini model reads it."""
    use_loopback_judge(monkeypatch, fake_gemini.base_url)
    return fake_gemini
