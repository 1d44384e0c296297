"""The judge's environment in tests: no test sees the machine's Google credentials or a stale default judge, and a
test that wants the judge points google-genai's own variables at the loopback Gemini server."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import pytest

from otel_eval import environment_variables
from otel_eval.judge import set_default_judge
from otel_eval.worker.settings import WorkerSettings
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
PROVIDER_ENVIRONMENT = (
    "GOOGLE_APPLICATION_CREDENTIALS",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_BASE",
    "ANTHROPIC_VERTEX_BASE_URL",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "CLOUD_ML_REGION",
    "AZURE_API_KEY",
    "AZURE_API_BASE",
    "AZURE_API_VERSION",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    "OLLAMA_API_BASE",
    "GROQ_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
)
"""The other judge providers' credentials and endpoints (openai, anthropic, LiteLLM's routes)."""


def known_environment_variables() -> set[str]:
    """``OTEL_EVAL_*`` names otel-eval reads: environment_variables.py and the worker's pydantic settings."""
    names = {value for key, value in vars(environment_variables).items() if key.startswith("OTEL_EVAL_")}
    prefix = WorkerSettings.model_config.get("env_prefix", "")
    names |= {f"{prefix}{field}".upper() for field in WorkerSettings.model_fields}
    return names


@contextmanager
def clean_judge_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No Google credentials or endpoint, no ``OTEL_EVAL_*`` setting of the machine, and no default judge, for the
    duration."""
    for name in (
        *GENAI_ENVIRONMENT,
        *PROVIDER_ENVIRONMENT,
        *(n for n in os.environ if n.startswith(environment_variables.ENV_PREFIX)),
    ):
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
