"""OpenAI Chat Completions through the ``openai`` SDK, as ADK's ``OpenAILlm`` (``gpt-*``, ``o<N>-*``) calls it.

The request is the one ``OpenAILlm.generate_content_async`` builds for a judge ``LlmRequest`` (a system message, the
user message, ``max_tokens`` 4096 unless the config sets ``max_output_tokens``, ``max_completion_tokens`` and no
non-default sampling for reasoning models, ``response_format`` from the schema). The client is ``AsyncOpenAI`` with
the SDK's own configuration (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``: any OpenAI-compatible server, e.g. vLLM,
Ollama's ``/v1``, LM Studio, a LiteLLM proxy, Azure OpenAI's ``/openai/v1/`` endpoint), under the judge's own
``OTEL_EVAL_JUDGE_API_KEY`` / ``OTEL_EVAL_JUDGE_BASE_URL``. The SDK's retries are off: the judge client retries.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from otel_eval.judge._loops import PerLoopClient
from otel_eval.judge._request_reply import JudgeReply, JudgeRequest
from otel_eval.judge.providers import check_api_answer, missing_extra
from otel_eval.judge.providers.request_parts import chat_messages, judge_config, schema_name_and_json
from otel_eval.judge.resolve import OPENAI
from otel_eval.judge.settings import JudgeSettings

if TYPE_CHECKING:
    from openai import AsyncOpenAI

OPENAI_API_KEY = "OPENAI_API_KEY"
OPENAI_BASE_URL = "OPENAI_BASE_URL"
DEFAULT_MAX_TOKENS = 4096
"""``OpenAILlm.max_tokens``."""
_REASONING_MODEL = re.compile(r"(?:^|/)(?:o\d+|gpt-[56](?!.*-chat))(?:\..*|-.*|$)", re.IGNORECASE)
"""ADK's ``_openai_common._REASONING_MODEL_RE``."""


class OpenAIProvider:
    """``AsyncOpenAI``, one per event loop."""

    family = OPENAI

    def __init__(self, settings: JudgeSettings) -> None:
        self.settings = settings
        self._clients: PerLoopClient[AsyncOpenAI] = PerLoopClient(self._new_client, _close)

    def provider_name(self, model: str) -> str:
        """``azure.ai.openai`` for an Azure OpenAI endpoint, else ``openai``."""
        return "azure.ai.openai" if ".openai.azure.com" in (self._base_url() or "") else "openai"

    def configuration_problem(self, model: str) -> str | None:
        """The missing ``openai`` extra, or no API key."""
        try:
            import openai  # noqa: F401
        except ImportError:
            return missing_extra("openai", "openai", model)
        if self._api_key():
            return None
        return (
            f"judge not configured: judge model {model!r} is served by OpenAI Chat Completions (ADK's OpenAILlm): "
            f"set {OPENAI_API_KEY} (and {OPENAI_BASE_URL} for an OpenAI-compatible server)"
        )

    async def send(self, request: JudgeRequest, model: str, timeout_seconds: float) -> JudgeReply:
        """One ``POST /chat/completions``."""
        client = await self._clients.client()
        response = await client.chat.completions.create(
            **chat_completion_kwargs(request, model), timeout=timeout_seconds
        )
        check_api_answer(response)
        text = response.choices[0].message.content if response.choices else None
        usage = response.usage
        return JudgeReply(
            text=text or None,
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            model=response.model or None,
        )

    def secrets(self) -> tuple[str, ...]:
        """The API key."""
        key = self._api_key()
        return (key,) if key else ()

    async def aclose(self) -> None:
        """Closes the running loop's client."""
        await self._clients.aclose()

    def _api_key(self) -> str | None:
        return self.settings.api_key or os.environ.get(OPENAI_API_KEY) or None

    def _base_url(self) -> str | None:
        return self.settings.base_url or os.environ.get(OPENAI_BASE_URL) or None

    def _new_client(self) -> AsyncOpenAI:
        from openai import AsyncOpenAI

        return AsyncOpenAI(api_key=self._api_key(), base_url=self._base_url(), max_retries=0)


def chat_completion_kwargs(request: JudgeRequest, model: str) -> dict[str, Any]:
    """The ``chat.completions.create`` arguments ADK's ``OpenAILlm`` passes for the same judge request."""
    config = judge_config(request)
    messages = chat_messages(request, config)
    response_format: dict[str, Any] | None = None
    if request.response_schema is not None and not isinstance(request.response_schema, dict):
        name, schema = schema_name_and_json(request.response_schema)
        enforce_strict_schema(schema)
        response_format = {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}
    elif request.response_schema is not None:
        # a dict schema is google-genai's response_json_schema, which OpenAILlm does not read: JSON mode only
        response_format = {"type": "json_object"}
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "tools": None,
        "tool_choice": None,
        "max_tokens": DEFAULT_MAX_TOKENS,
        "response_format": response_format,
    }
    if config.temperature is not None:
        kwargs["temperature"] = config.temperature
    if config.top_p is not None:
        kwargs["top_p"] = config.top_p
    if config.stop_sequences:
        kwargs["stop"] = config.stop_sequences
    if config.max_output_tokens is not None:
        kwargs["max_tokens"] = config.max_output_tokens
    if _REASONING_MODEL.search(model):
        kwargs["max_completion_tokens"] = kwargs.pop("max_tokens")
        for name in ("temperature", "top_p"):
            if kwargs.get(name) not in (None, 1):
                kwargs.pop(name)
    return kwargs


def enforce_strict_schema(schema: dict[str, Any]) -> None:
    """ADK's ``enforce_strict_openai_schema``: every object closed, every property required."""
    if "$ref" in schema:
        for key in [key for key in schema if key != "$ref"]:
            del schema[key]
        return
    if schema.get("type") == "object" and "properties" in schema:
        schema["additionalProperties"] = False
        schema["required"] = sorted(schema["properties"].keys())
    for child in [*schema.get("$defs", {}).values(), *schema.get("properties", {}).values()]:
        if isinstance(child, dict):
            enforce_strict_schema(child)
    for key in ("anyOf", "oneOf", "allOf"):
        for item in schema.get(key, []):
            if isinstance(item, dict):
                enforce_strict_schema(item)
    if isinstance(schema.get("items"), dict):
        enforce_strict_schema(schema["items"])


async def _close(client: AsyncOpenAI) -> None:
    await client.close()
