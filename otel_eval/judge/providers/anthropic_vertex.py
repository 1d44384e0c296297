"""Claude on Vertex AI through ``anthropic``'s ``AsyncAnthropicVertex``, as ADK's ``Claude`` (``claude-*``) calls it.

The request is the one ``AnthropicLlm.generate_content_async`` builds for a judge ``LlmRequest``: the system text,
the user turn as one text block, ``max_tokens`` 8192 unless the config sets ``max_output_tokens``, the config's
sampling settings, and a response schema as the one ``structured_output`` tool Claude is made to call. The client is
``AsyncAnthropicVertex`` on ``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION`` (or those of a
``projects/P/locations/L/...`` model name), Google's application default credentials, and
``ANTHROPIC_VERTEX_BASE_URL`` for a gateway, as ADK's ``Claude`` builds it; the judge's ``OTEL_EVAL_JUDGE_BASE_URL``
overrides the endpoint and ``OTEL_EVAL_JUDGE_API_KEY`` is sent as the access token. The SDK's retries are off.
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any

from otel_eval.judge._loops import PerLoopClient
from otel_eval.judge._request_reply import JudgeReply, JudgeRequest
from otel_eval.judge.providers import check_api_answer, missing_extra
from otel_eval.judge.providers.request_parts import judge_config, lowercase_types, schema_name_and_json, system_text
from otel_eval.judge.resolve import CLAUDE_VERTEX
from otel_eval.judge.settings import JudgeSettings

if TYPE_CHECKING:
    from anthropic import AsyncAnthropicVertex

GOOGLE_CLOUD_PROJECT = "GOOGLE_CLOUD_PROJECT"
GOOGLE_CLOUD_LOCATION = "GOOGLE_CLOUD_LOCATION"
DEFAULT_MAX_TOKENS = 8192
"""``AnthropicLlm.max_tokens``."""
OUTPUT_SCHEMA_TOOL = "structured_output"
_OUTPUT_SCHEMA_DESCRIPTION = (
    "Provide your final answer. Call this tool exactly once, with your whole answer in the structure its input "
    "describes."
)
_OUTPUT_SCHEMA_VALUE_KEY = "response"
_PROJECT_LOCATION = re.compile(r"projects/([^/]+)/locations/([^/]+)/")
_MODEL_ID = re.compile(r"projects/[^/]+/locations/[^/]+/(?:publishers/anthropic/models|endpoints)/([^/:]+)")


class AnthropicVertexProvider:
    """``AsyncAnthropicVertex``, one per event loop and Vertex project/location."""

    family = CLAUDE_VERTEX

    def __init__(self, settings: JudgeSettings) -> None:
        self.settings = settings
        self._clients: dict[tuple[str, str], PerLoopClient[AsyncAnthropicVertex]] = {}

    def provider_name(self, model: str) -> str:
        """``gcp.vertex_ai``: Claude served by Vertex AI."""
        return "gcp.vertex_ai"

    def configuration_problem(self, model: str) -> str | None:
        """The missing ``anthropic`` extra (with Google auth), or no Vertex project/location."""
        try:
            import anthropic  # noqa: F401
            import google.auth  # noqa: F401
        except ImportError:
            return missing_extra("anthropic", "anthropic[vertex]", model)
        if self._project_location(model) is None:
            return (
                f"judge not configured: judge model {model!r} is Claude on Vertex AI (ADK's Claude): set "
                f"{GOOGLE_CLOUD_PROJECT} and {GOOGLE_CLOUD_LOCATION} (and Google credentials); for the Anthropic "
                f"API itself name the model 'anthropic/{model}'"
            )
        return None

    async def send(self, request: JudgeRequest, model: str, timeout_seconds: float) -> JudgeReply:
        """One ``rawPredict`` call (Anthropic Messages on Vertex AI)."""
        where = self._project_location(model)
        if where is None:
            raise ValueError(self.configuration_problem(model) or "no Vertex project")
        clients = self._clients.get(where)
        if clients is None:
            clients = self._clients[where] = PerLoopClient(lambda: self._new_client(*where), _close)
        client = await clients.client()
        kwargs, tool = messages_kwargs(request, model_id(model))
        message = await client.messages.create(**kwargs, timeout=timeout_seconds)
        check_api_answer(message)
        texts: list[str] = []
        for block in message.content:
            if block.type == "text" and block.text:
                texts.append(block.text)
            elif block.type == "tool_use" and tool is not None and block.name == OUTPUT_SCHEMA_TOOL:
                args = block.input if isinstance(block.input, dict) else {}
                texts = [json.dumps(args.get(_OUTPUT_SCHEMA_VALUE_KEY) if tool else args, ensure_ascii=False)]
                break
        usage = message.usage
        input_tokens = sum(
            value
            for value in (usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens)
            if isinstance(value, int)
        )
        return JudgeReply(
            text="\n".join(texts) or None,
            input_tokens=input_tokens,
            output_tokens=usage.output_tokens,
            model=message.model or None,
        )

    def secrets(self) -> tuple[str, ...]:
        """The access token given as the judge's key."""
        return (self.settings.api_key,) if self.settings.api_key else ()

    async def aclose(self) -> None:
        """Closes the running loop's clients."""
        for clients in list(self._clients.values()):
            await clients.aclose()

    def _project_location(self, model: str) -> tuple[str, str] | None:
        project = self.settings.project or os.environ.get(GOOGLE_CLOUD_PROJECT)
        location = self.settings.location or os.environ.get(GOOGLE_CLOUD_LOCATION)
        if model.startswith("projects/") and (match := _PROJECT_LOCATION.search(model)):
            project, location = match.group(1), match.group(2)
        return (project, location) if project and location else None

    def _new_client(self, project: str, location: str) -> AsyncAnthropicVertex:
        from anthropic import AsyncAnthropicVertex

        kwargs: dict[str, Any] = {"project_id": project, "region": location, "max_retries": 0}
        if self.settings.base_url:
            kwargs["base_url"] = self.settings.base_url
        if self.settings.api_key:
            kwargs["access_token"] = self.settings.api_key
        return AsyncAnthropicVertex(**kwargs)


def model_id(model: str) -> str:
    """ADK's ``AnthropicLlm._resolve_model_name``: the model id of a ``projects/...`` resource name."""
    if model.startswith("projects/") and (match := _MODEL_ID.search(model)):
        return match.group(1)
    return model


def messages_kwargs(request: JudgeRequest, model: str) -> tuple[dict[str, Any], bool | None]:
    """The ``messages.create`` arguments ADK's ``AnthropicLlm`` passes for the same judge request, and whether a
    response schema rides as the output tool (None: no tool; True: its value is nested under ``response``)."""
    config = judge_config(request)
    kwargs: dict[str, Any] = {"model": model}
    system = system_text(config)
    if system:
        kwargs["system"] = system
    kwargs["messages"] = (
        [{"role": "user", "content": [{"text": request.prompt, "type": "text"}]}] if request.prompt else []
    )
    nests: bool | None = None
    if request.response_schema is not None:
        _name, schema = schema_name_and_json(request.response_schema)
        lowercase_types(schema)
        nests = schema.get("type") != "object"
        if nests:
            defs = schema.pop("$defs", None)
            schema = {
                "type": "object",
                "properties": {_OUTPUT_SCHEMA_VALUE_KEY: schema},
                "required": [_OUTPUT_SCHEMA_VALUE_KEY],
            }
            if defs:
                schema["$defs"] = defs
        kwargs["tools"] = [
            {"name": OUTPUT_SCHEMA_TOOL, "description": _OUTPUT_SCHEMA_DESCRIPTION, "input_schema": schema}
        ]
        kwargs["tool_choice"] = {"type": "tool", "name": OUTPUT_SCHEMA_TOOL, "disable_parallel_tool_use": True}
    # the sampling settings go in the body as ADK sends them; anthropic 2.14's create() no longer takes them as
    # arguments, so they ride in extra_body (the same JSON body)
    sampling: dict[str, Any] = {}
    if config.temperature is not None:
        sampling["temperature"] = config.temperature
    if config.top_p is not None:
        sampling["top_p"] = config.top_p
    if config.top_k is not None:
        sampling["top_k"] = int(config.top_k)
    if sampling:
        kwargs["extra_body"] = sampling
    if config.stop_sequences:
        kwargs["stop_sequences"] = config.stop_sequences
    kwargs["max_tokens"] = config.max_output_tokens if config.max_output_tokens is not None else DEFAULT_MAX_TOKENS
    return kwargs, nests


async def _close(client: AsyncAnthropicVertex) -> None:
    await client.close()
