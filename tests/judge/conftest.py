"""The judge tests use the fixtures of :mod:`tests.judge.plugin`, with a clean google-genai environment."""

import pytest

from tests.judge.plugin import adk_env, fake_gemini

__all__ = ["adk_env", "fake_gemini"]


@pytest.fixture(autouse=True)
def _clean(clean_genai_env: None) -> None:
    """Every judge test runs without the machine's Google credentials."""
