"""Which provider serves a judge model: the model name resolved as google-adk 2.13's ``LLMRegistry`` resolves it.

ADK registers its model classes by name pattern (``google/adk/models/__init__.py``, ``_LAZY_PROVIDERS``), tried in
that order with ``re.fullmatch``; a ``class:model`` prefix (``openai:gpt-4o``) picks the class by name; a
``provider/model`` name that matches no pattern goes to LiteLLM when LiteLLM knows the provider. :data:`ADK_CLASSES`
copies that table (a test compares it with ADK's own, so a pattern ADK adds shows up as a failing test) and says which
of otel-eval's provider families serves each class:

- ``gemini``: google-genai (ADK's ``Gemini``, and ``Gemma``, a ``Gemini`` subclass);
- ``claude_vertex``: Claude on Vertex AI through ``anthropic``'s ``AsyncAnthropicVertex`` (ADK's ``Claude``);
- ``openai``: OpenAI Chat Completions through the ``openai`` SDK (ADK's ``OpenAILlm``);
- ``litellm``: ``litellm.acompletion`` (ADK's ``LiteLlm`` and ``Gemma3Ollama``).

ADK's ``ApigeeLlm`` and ``OCIGenAILlm`` are not served (a judge naming them is not configured, said why). A bare name
no pattern matches (a gateway's own model name, the scripted ``otel-eval judge-server``'s) stays with google-genai, as
before this resolver: ADK would refuse it, otel-eval keeps judging it where the Gemini endpoint points.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Final, Literal

Family = Literal["gemini", "claude_vertex", "openai", "litellm"]
GEMINI: Final = "gemini"
CLAUDE_VERTEX: Final = "claude_vertex"
OPENAI: Final = "openai"
LITELLM: Final = "litellm"

ADK_CLASSES: Final[tuple[tuple[str, tuple[str, ...], Family | None], ...]] = (
    (
        "Gemini",
        (
            r"gemini-.*",
            r"gemma-4.*",
            r"model-optimizer-.*",
            r"projects\/.+\/locations\/.+\/endpoints\/.+",
            r"projects\/.+\/locations\/.+\/publishers\/google\/models\/gemini.+",
        ),
        GEMINI,
    ),
    ("Gemma", (r"gemma-.*",), GEMINI),
    ("ApigeeLlm", (r"apigee\/.*",), None),
    ("Claude", (r"claude-.*",), CLAUDE_VERTEX),
    ("Gemma3Ollama", (r"ollama/gemma3.*",), LITELLM),
    ("OpenAILlm", (r"gpt-.*", r"o\d+-.*"), OPENAI),
    (
        "LiteLlm",
        (
            r"openai/.*",
            r"azure/.*",
            r"azure_ai/.*",
            r"groq/.*",
            r"anthropic/.*",
            r"bedrock/.*",
            r"ollama/(?!gemma3).*",
            r"ollama_chat/.*",
            r"together_ai/.*",
            r"vertex_ai/.*",
            r"mistral/.*",
            r"deepseek/.*",
            r"fireworks_ai/.*",
            r"cohere/.*",
            r"databricks/.*",
            r"ai21/.*",
        ),
        LITELLM,
    ),
    (
        "OCIGenAILlm",
        (
            r"meta\.llama-.*",
            r"google\.gemini-.*",
            r"google\.gemma-.*",
            r"xai\.grok-.*",
            r"mistralai\.mistral-.*",
            r"mistralai\.mixtral-.*",
            r"nvidia\..*",
        ),
        None,
    ),
)
"""ADK 2.13's ``_LAZY_PROVIDERS``, in its order: (ADK class, name patterns, otel-eval family or None: not served)."""

_COMPILED: Final = tuple(
    (name, tuple(re.compile(pattern) for pattern in patterns), family) for name, patterns, family in ADK_CLASSES
)


@dataclass(frozen=True, slots=True)
class Route:
    """Where a judge model goes.

    Attributes:
        family: The provider family serving it, or None when otel-eval serves none (see ``problem``).
        model: The model name sent to the provider (a ``class:`` prefix removed).
        adk_class: The ADK model class ADK resolves the name to ("" when ADK resolves it to none).
        problem: Why the model cannot be judged here, when it cannot.
        note: What a "not configured" problem of this route says first ("" when ADK resolves the name): a name ADK
            resolves to no class goes to google-genai, so a typo (``gpt4o-mini``) is not told only to set a Google key.
    """

    family: Family | None
    model: str
    adk_class: str
    problem: str | None = None
    note: str = ""


@functools.lru_cache(maxsize=256)
def resolve(model: str) -> Route:
    """The route of judge ``model``, as ADK 2.13's ``LLMRegistry.resolve`` picks its class."""
    prefix, _, rest = model.partition(":") if ":" in model else ("", "", model)
    if prefix:
        for name, _patterns, family in _COMPILED:
            if _prefix_names(prefix, name):
                return _route(family, rest, name)
    for name, patterns, family in _COMPILED:
        if any(pattern.fullmatch(model) for pattern in patterns):
            return _route(family, model, name)
    if "/" in model and not model.startswith("models/") and _litellm_knows(model.partition("/")[0]):
        return Route(LITELLM, model, "LiteLlm")
    return Route(GEMINI, model, "", note=_UNRESOLVED.format(model))


_UNRESOLVED: Final = (
    "judge model {!r} matches none of ADK's model names (gemini-*, claude-*, gpt-*, o<N>-*, a LiteLLM provider/model "
    "route), so it goes to google-genai as a gateway's own model name (GOOGLE_GEMINI_BASE_URL or "
    "OTEL_EVAL_JUDGE_BASE_URL names the gateway); "
)


def _route(family: Family | None, model: str, adk_class: str) -> Route:
    if family is None:
        return Route(None, model, adk_class, f"judge model {model!r} resolves to ADK's {adk_class}, not served here")
    return Route(family, model, adk_class)


def _prefix_names(prefix: str, class_name: str) -> bool:
    """ADK's ``LLMRegistry._match_prefix``: ``openai`` names ``OpenAILlm``, ``claude`` names ``Claude``."""
    wanted, name = prefix.lower(), class_name.lower()
    return wanted in (name.removesuffix("llm"), name)


def _litellm_knows(provider: str) -> bool:
    """Whether LiteLLM lists ``provider`` (ADK's fallback for ``provider/model`` names); without LiteLLM installed, a
    name with a slash is still LiteLLM's (its judge then says the extra is missing)."""
    try:
        import litellm
    except ImportError:
        return True
    return provider in litellm.provider_list
