"""What the judge client sends and reads back, in google-genai's terms: :class:`JudgeRequest` (the prompt, instruction,
output schema and config of one call, and its cache identity) and :class:`JudgeReply` (text, token usage and block
reason read from google-genai's response)."""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from google.genai import types as genai_types

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """One judge request: a single user prompt, an optional system instruction and output schema.

    Attributes:
        model: Judge model name.
        prompt: The user-turn prompt text (untrusted parts already rendered as data blocks).
        system_instruction: Instruction outside the user turn (e.g. that data blocks are data).
        response_schema: JSON schema (dict) or pydantic model for structured output; None for free text.
        config: The criterion's ``judge_model_config``, applied under the settings above.
    """

    model: str
    prompt: str
    system_instruction: str | None = None
    response_schema: dict[str, Any] | type[BaseModel] | None = None
    config: genai_types.GenerateContentConfig | None = None

    def generate_config(self, timeout_seconds: float) -> genai_types.GenerateContentConfig:
        """The google-genai config sent: user config, AFC off (as ADK), our instruction/schema, one HTTP attempt."""
        from google.genai import types as genai_types  # deferred: importing google-genai takes about a second

        # A shallow copy: only top-level fields are set below, and google-genai deep-copies the config it is given
        # before changing anything in it (a deep copy here was ~4% of a judged call's CPU).
        config = self.config.model_copy() if self.config else genai_types.GenerateContentConfig()
        config.automatic_function_calling = genai_types.AutomaticFunctionCallingConfig(disable=True)
        if self.system_instruction:
            config.system_instruction = self.system_instruction
        if self.response_schema is not None:
            config.response_mime_type = "application/json"
            if isinstance(self.response_schema, dict):
                config.response_json_schema = self.response_schema
            else:
                config.response_schema = _gemini_schema(self.response_schema)
        config.http_options = genai_types.HttpOptions(
            timeout=max(1, int(timeout_seconds * 1000)),
            retry_options=genai_types.HttpRetryOptions(attempts=1),  # retries are ours, see JudgeClient
        )
        return config

    def contents(self) -> list[genai_types.Content]:
        """The request contents: one user turn holding the prompt."""
        from google.genai import types as genai_types

        return [genai_types.Content(role="user", parts=[genai_types.Part(text=self.prompt)])]

    def cache_identity(self) -> dict[str, Any]:
        """Everything that makes the request what it is (prompt, instruction, schema, user config), for the cache key."""
        schema = self.response_schema
        return {
            "prompt": self.prompt,
            "system_instruction": self.system_instruction,
            "schema": schema if schema is None or isinstance(schema, dict) else _schema_json(schema),
            "config": self.config.model_dump(mode="json", exclude_none=True) if self.config else None,
        }


@functools.lru_cache(maxsize=64)
def _schema_json(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(), sort_keys=True)


@functools.lru_cache(maxsize=64)
def _gemini_schema(model: type[BaseModel]) -> genai_types.Schema | type[BaseModel]:
    """The pydantic model converted to google-genai's ``Schema`` once (google-genai would redo it per request)."""
    try:
        from google.genai import _transformers
        from google.genai import types as genai_types

        schema = _transformers.t_schema(None, model)
    except Exception:
        logger.debug("could not pre-convert response schema %s", model.__name__, exc_info=True)
        return model
    return schema if isinstance(schema, genai_types.Schema) else model


@dataclass(frozen=True, slots=True)
class JudgeReply:
    """What the judge answered.

    Attributes:
        text: Text parts joined by newlines as ADK reads them (None when the judge sent no text).
        input_tokens: Prompt tokens reported.
        output_tokens: Candidate plus thinking tokens reported.
        block_reason: Why the prompt was blocked, when it was.
        cached: True when served from the cache (or joined an identical in-flight request).
        model: The model version the server says answered (``modelVersion``), when it says one.
    """

    text: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    block_reason: str | None = None
    cached: bool = False
    model: str | None = None


def reply_from(response: genai_types.GenerateContentResponse) -> JudgeReply:
    """The reply read from google-genai's ``response``: its first candidate's text, token usage, block reason and
    the model version that answered."""
    text: str | None = None
    candidates = response.candidates or []
    if candidates and candidates[0].content and candidates[0].content.parts:
        texts = [part.text for part in candidates[0].content.parts if part.text]
        text = "\n".join(texts) if texts else None
    usage = response.usage_metadata
    input_tokens = (usage.prompt_token_count or 0) if usage else 0
    output_tokens = ((usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)) if usage else 0
    feedback = response.prompt_feedback
    block = str(feedback.block_reason.value) if feedback and feedback.block_reason else None
    return JudgeReply(
        text=text,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        block_reason=block,
        model=response.model_version or None,
    )
