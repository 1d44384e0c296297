"""Judge models resolve as google-adk 2.13's ``LLMRegistry`` resolves them: the same pattern table in the same order
(a pattern ADK adds fails here, instead of becoming a silent Gemini call), and the same class for every name."""

from __future__ import annotations

import pytest

from otel_eval.judge.resolve import ADK_CLASSES, CLAUDE_VERTEX, GEMINI, LITELLM, OPENAI, resolve


def test_the_table_is_adks_own_in_adks_order() -> None:
    from google.adk.models import _LAZY_PROVIDERS

    adk = [(name, tuple(patterns)) for name, (patterns, _module) in _LAZY_PROVIDERS.items()]
    ours = [(name, patterns) for name, patterns, _family in ADK_CLASSES]
    assert ours == adk


NAMES = [
    "gemini-2.5-flash",
    "gemini-2.0-flash-lite",
    "gemma-4-27b-it",
    "gemma-3-27b-it",
    "projects/p/locations/us-central1/endpoints/123",
    "projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro",
    "claude-sonnet-4-5",
    "claude-3-5-sonnet-v2@20241022",
    "gpt-4o-mini",
    "gpt-5",
    "o3-mini",
    "o1-preview",
    "openai/gpt-4o-mini",
    "azure/my-deployment",
    "anthropic/claude-sonnet-4-5",
    "bedrock/anthropic.claude-3-haiku",
    "ollama/llama3.1",
    "ollama/gemma3:4b",
    "ollama_chat/llama3.1",
    "groq/llama-3.1-8b-instant",
    "together_ai/meta-llama/Llama-3-8b",
    "vertex_ai/gemini-2.5-flash",
    "mistral/mistral-large-latest",
    "deepseek/deepseek-chat",
    "fireworks_ai/llama-v3",
    "cohere/command-r",
    "databricks/dbrx",
    "ai21/jamba",
    "perplexity/sonar",
    "xai/grok-2",
    "openai:gpt-4o",
    "gemini:gemini-2.5-flash",
]


@pytest.mark.parametrize("name", NAMES)
def test_every_name_gets_the_class_adk_resolves_it_to(name: str) -> None:
    from google.adk.models.registry import LLMRegistry

    assert resolve(name).adk_class == LLMRegistry.resolve(name).__name__


@pytest.mark.parametrize(
    ("name", "family", "sent"),
    [
        ("gemini-2.5-flash", GEMINI, "gemini-2.5-flash"),
        ("claude-sonnet-4-5", CLAUDE_VERTEX, "claude-sonnet-4-5"),
        ("gpt-4o-mini", OPENAI, "gpt-4o-mini"),
        ("o3-mini", OPENAI, "o3-mini"),
        ("openai/gpt-4o-mini", LITELLM, "openai/gpt-4o-mini"),
        ("ollama/gemma3:4b", LITELLM, "ollama/gemma3:4b"),
        ("perplexity/sonar", LITELLM, "perplexity/sonar"),
        ("openai:gpt-4o", OPENAI, "gpt-4o"),
        ("scripted-local-judge", GEMINI, "scripted-local-judge"),  # ADK resolves none: google-genai, as before
    ],
)
def test_each_family_and_the_model_sent(name: str, family: str, sent: str) -> None:
    route = resolve(name)
    assert (route.family, route.model, route.problem) == (family, sent, None)


@pytest.mark.parametrize("name", ["apigee/gemini-2.5-flash", "meta.llama-3-70b", "nvidia.nemotron"])
def test_adks_classes_not_served_here_say_so(name: str) -> None:
    route = resolve(name)
    assert route.family is None and route.problem is not None and route.adk_class in route.problem


def test_a_name_adk_resolves_to_no_class_carries_why_it_goes_to_google_genai() -> None:
    note = resolve("gpt4o-mini").note
    assert note.startswith("judge model 'gpt4o-mini' matches none of ADK's model names"), note
    assert "GOOGLE_GEMINI_BASE_URL" in note
    assert [resolve(name).note for name in ("gemini-2.5-flash", "gpt-4o-mini", "openai:gpt-4o")] == ["", "", ""]
