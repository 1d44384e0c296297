"""The judge's environment in tests: no test sees the machine's Google credentials or a stale default judge, and a
test that wants the judge points google-genai's own variables at the loopback Gemini server."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import pytest

from otel_eval.judge import set_default_judge
from tests.judge.helpers import TEST_KEY

GENAI_ENVIRONMENT = (
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
"""Every variable google-genai reads to find credentials and an endpoint."""


@contextmanager
def clean_judge_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No Google credentials or endpoint, and no default judge, for the duration."""
    for name in GENAI_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    set_default_judge(None)
    try:
        yield
    finally:
        set_default_judge(None)


def use_loopback_judge(monkeypatch: pytest.MonkeyPatch, base_url: str, extra: Mapping[str, str] = {}) -> None:
    """The default judge (and ADK's Gemini model) talk to the loopback server at ``base_url`` with a test key."""
    monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", base_url)
    for name, value in extra.items():
        monkeypatch.setenv(name, value)
    set_default_judge(None)
