"""Every judge provider's own environment pointed at one loopback judge server (:mod:`otel_eval.demo.gemini_server`,
which speaks Gemini, OpenAI Chat Completions, Anthropic Messages, Claude on Vertex AI's rawPredict and Ollama), the
way a user configures each SDK: ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY`` /
``ANTHROPIC_BASE_URL``, ``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION`` / ``ANTHROPIC_VERTEX_BASE_URL`` with a
Google service-account file whose token endpoint is the loopback server's, ``OLLAMA_API_BASE``."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

OPENAI_TEST_KEY = "sk-test-openai-000000000000000000"
ANTHROPIC_TEST_KEY = "sk-ant-test-anthropic-0000000000000"
PROJECT = "judge-project"
LOCATION = "us-east5"

MODELS = (
    "gpt-4o-mini",
    "claude-sonnet-4-5",
    "openai/gpt-4o-mini",
    "anthropic/claude-sonnet-4-5",
    "ollama/llama3.1",
    "ollama_chat/llama3.1",
)
"""The issue's judge models: one per route ADK resolves (OpenAILlm, Claude on Vertex, LiteLlm's OpenAI, Anthropic
and both Ollama routes)."""

PROVIDER_NAMES = {
    "gpt-4o-mini": "openai",
    "claude-sonnet-4-5": "gcp.vertex_ai",
    "openai/gpt-4o-mini": "openai",
    "anthropic/claude-sonnet-4-5": "anthropic",
    "ollama/llama3.1": "ollama",
    "ollama_chat/llama3.1": "ollama",
}

PROTOCOLS = {
    "gpt-4o-mini": "openai.chat_completions",
    "claude-sonnet-4-5": "anthropic.messages",
    "openai/gpt-4o-mini": "openai.chat_completions",
    "anthropic/claude-sonnet-4-5": "anthropic.messages",
    "ollama/llama3.1": "ollama.generate",
    "ollama_chat/llama3.1": "ollama.chat",
}


@functools.lru_cache(maxsize=1)
def _private_key_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def service_account_file(directory: Path, base_url: str) -> Path:
    """A Google service-account key file whose token endpoint is the loopback server's ``/token``."""
    path = directory / "loopback-service-account.json"
    path.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": PROJECT,
                "private_key_id": "loopback",
                "private_key": _private_key_pem(),
                "client_email": f"judge@{PROJECT}.iam.gserviceaccount.com",
                "client_id": "1",
                "token_uri": f"{base_url}/token",
            }
        )
    )
    return path


def use_provider_env(monkeypatch: pytest.MonkeyPatch, base_url: str, directory: Path) -> None:
    """Every non-Gemini provider's own variables pointing at the loopback server at ``base_url`` (no Google key:
    the Gemini judge stays not configured)."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{base_url}/v1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_TEST_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", LOCATION)
    monkeypatch.setenv("ANTHROPIC_VERTEX_BASE_URL", f"{base_url}/v1")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(service_account_file(directory, base_url)))
    monkeypatch.setenv("OLLAMA_API_BASE", base_url)
