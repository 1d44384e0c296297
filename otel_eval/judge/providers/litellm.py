"""The LiteLLM routes (``openai/…``, ``azure/…``, ``anthropic/…``, ``bedrock/…``, ``ollama/…``, ``ollama_chat/…``,
``groq/…``, …) through ``litellm.acompletion``, as ADK's ``LiteLlm`` calls it.

The arguments are the ones ``LiteLlm.generate_content_async`` builds for a judge ``LlmRequest``: the system message
first, the user message as text, the config's generation settings under LiteLLM's names (``max_output_tokens`` as
``max_completion_tokens``, ``stop_sequences`` as ``stop``), and a response schema as a strict ``json_schema`` format.
Credentials are each provider's own variables as LiteLLM reads them (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``,
``AZURE_API_KEY`` / ``AZURE_API_BASE`` / ``AZURE_API_VERSION``, AWS credentials for Bedrock, ``OLLAMA_API_BASE``, …);
the judge's ``OTEL_EVAL_JUDGE_API_KEY`` / ``OTEL_EVAL_JUDGE_BASE_URL`` are passed as ``api_key`` / ``api_base``.
LiteLLM's own retries are off: the judge client retries.
"""

from __future__ import annotations

import asyncio
from typing import Any

from otel_eval.judge._loops import PerLoopClient
from otel_eval.judge._request_reply import JudgeReply, JudgeRequest
from otel_eval.judge.providers import missing_extra
from otel_eval.judge.providers.openai import enforce_strict_schema
from otel_eval.judge.providers.request_parts import (
    chat_messages,
    judge_config,
    lowercase_types,
    schema_name_and_json,
)
from otel_eval.judge.resolve import LITELLM
from otel_eval.judge.settings import JudgeSettings

PROVIDER_NAMES = {
    "openai": "openai",
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "anthropic": "anthropic",
    "bedrock": "aws.bedrock",
    "vertex_ai": "gcp.vertex_ai",
    "gemini": "gcp.gemini",
    "groq": "groq",
    "mistral": "mistral_ai",
    "deepseek": "deepseek",
    "cohere": "cohere",
    "ollama": "ollama",
    "ollama_chat": "ollama",
    "xai": "x_ai",
    "perplexity": "perplexity",
    "watsonx": "ibm.watsonx.ai",
}
"""LiteLLM route prefix -> ``gen_ai.provider.name`` as the GenAI semantic conventions name the provider (a route
the conventions do not name reports its LiteLLM prefix)."""

_GENERATION_PARAMS = {
    "temperature": "temperature",
    "max_output_tokens": "max_completion_tokens",
    "top_p": "top_p",
    "top_k": "top_k",
    "seed": "seed",
    "stop_sequences": "stop",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
}
"""``LiteLlm``'s ``_get_completion_inputs`` mapping of config fields to LiteLLM arguments."""


_LOCAL_ROUTES = ("ollama/", "ollama_chat/")
"""Routes to a local server, which needs no key (LiteLLM defaults ``OLLAMA_API_BASE`` to ``localhost:11434``)."""


class LiteLlmProvider:
    """``litellm.acompletion`` (LiteLLM manages its own HTTP clients; its background logging task is stopped when
    the event loop that started it shuts down)."""

    family = LITELLM

    def __init__(self, settings: JudgeSettings) -> None:
        self.settings = settings
        self._loop_hook: PerLoopClient[object] = PerLoopClient(object, _stop_logging_worker)

    def provider_name(self, model: str) -> str:
        """The route's GenAI provider name (``anthropic``, ``aws.bedrock``, ``ollama``, …)."""
        route = model.partition("/")[0]
        return PROVIDER_NAMES.get(route, route)

    def configuration_problem(self, model: str) -> str | None:
        """The missing ``litellm`` extra, or the provider's variables LiteLLM finds missing."""
        try:
            import litellm
        except ImportError:
            return missing_extra("litellm", "litellm", model)
        if self.settings.api_key or model.startswith(_LOCAL_ROUTES):
            return None
        try:
            found = litellm.validate_environment(model=model)
        except Exception:  # noqa: BLE001 - a route LiteLLM cannot check is tried as configured
            return None
        missing = [str(key) for key in found.get("missing_keys") or []]
        if found.get("keys_in_environment") or not missing:
            return None
        return (
            f"judge not configured: judge model {model!r} is served through LiteLLM (ADK's LiteLlm): "
            f"set {', '.join(missing)}"
        )

    async def send(self, request: JudgeRequest, model: str, timeout_seconds: float) -> JudgeReply:
        """One ``litellm.acompletion`` call."""
        import litellm

        # A failed call otherwise prints a "Give Feedback / Get Help" banner on the process's stdout (the agent's, in
        # thread isolation), once per failure; the failure is reported as the judge's error. LiteLLM's own Router sets
        # the same process-wide flag.
        litellm.suppress_debug_info = True
        await self._loop_hook.client()
        kwargs = completion_kwargs(request, model)
        kwargs.update(timeout=timeout_seconds, num_retries=0, max_retries=0)
        if self.settings.api_key:
            kwargs["api_key"] = self.settings.api_key
        if self.settings.base_url:
            kwargs["api_base"] = self.settings.base_url
        response = await litellm.acompletion(**kwargs)
        # LiteLLM hands its success callbacks to its logging worker from a task it has just created: let it run, so
        # the worker holds them when this loop's shutdown drains it
        await asyncio.sleep(0)
        choices = getattr(response, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        text = getattr(message, "content", None)
        usage = getattr(response, "usage", None)
        return JudgeReply(
            text=text if isinstance(text, str) and text else None,
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            model=getattr(response, "model", None) or None,
        )

    def secrets(self) -> tuple[str, ...]:
        """The judge's key override (provider keys stay in LiteLLM)."""
        return (self.settings.api_key,) if self.settings.api_key else ()

    async def aclose(self) -> None:
        """Stops LiteLLM's logging task on the running loop (LiteLLM caches its HTTP clients process-wide)."""
        await self._loop_hook.aclose()


async def _stop_logging_worker(_: object) -> None:
    """Drains and stops LiteLLM's process-wide logging worker when it runs on this loop (else the loop would close on
    its pending task and callbacks never awaited)."""
    from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

    if getattr(GLOBAL_LOGGING_WORKER, "_bound_loop", None) is asyncio.get_running_loop():
        await GLOBAL_LOGGING_WORKER.clear_queue()  # run its queued callbacks
        await GLOBAL_LOGGING_WORKER.stop()


def completion_kwargs(request: JudgeRequest, model: str) -> dict[str, Any]:
    """The ``litellm.acompletion`` arguments ADK's ``LiteLlm`` passes for the same judge request."""
    config = judge_config(request)
    messages = chat_messages(request, config)
    response_format: dict[str, Any] | None = None
    if request.response_schema is not None:
        name, schema = schema_name_and_json(request.response_schema)
        if model.startswith(("gemini/", "vertex_ai/gemini")):
            response_format = {"type": "json_object", "response_schema": schema}
        else:
            lowercase_types(schema)
            enforce_strict_schema(schema)
            response_format = {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}
    kwargs: dict[str, Any] = {"model": model, "messages": messages, "tools": None, "response_format": response_format}
    dumped = config.model_dump(exclude_none=True)
    for field, argument in _GENERATION_PARAMS.items():
        if field in dumped:
            kwargs[argument] = dumped[field]
    return kwargs
