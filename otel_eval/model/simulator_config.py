"""The eval config's ``user_simulator_config`` and ``live_model_config``, checked as ADK 2.13 checks them.

otel-eval simulates no user and drives no live model: these sections are read only so that a config ADK refuses
(an unknown simulator ``type``, ``max_allowed_invocations`` that is not an integer, custom instructions without the
simulator's placeholders) is refused here too, and one ADK runs is accepted. ADK selects the simulator class by
``type`` (``llm_backed`` or ``llm_audio``) and treats a config without ``type`` as ``llm_backed``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, alias_generators, field_validator

from otel_eval.model import genai as genai_types

DEFAULT_USER_SIMULATOR_TYPE = "llm_backed"
"""ADK's type for a ``user_simulator_config`` written before the ``type`` discriminator existed."""

_REQUIRED_PLACEHOLDERS = ("stop_signal", "conversation_plan", "conversation_history")


def _has_placeholders(template: str, names: tuple[str, ...]) -> bool:
    """Whether the Jinja template ``template`` parses and uses every name in ``names``, as ADK's
    ``is_valid_user_simulator_template`` decides; without jinja2 installed, whether each appears as ``{{ name }}``."""
    try:
        from jinja2 import exceptions, meta  # deferred: optional, and only for configs that set instructions
        from jinja2.sandbox import SandboxedEnvironment
    except ImportError:  # pragma: no cover - jinja2 comes with google-adk and most installs
        return all(re.search(r"\{\{\s*" + name + r"\s*\}\}", template) for name in names)
    try:
        used = meta.find_undeclared_variables(SandboxedEnvironment().parse(template))
    except exceptions.TemplateSyntaxError:
        return False
    return all(name in used for name in names)


class _SimulatorConfig(BaseModel):
    """What ADK's ``LlmBackedUserSimulatorConfig`` and ``LlmAudioUserSimulatorConfig`` share."""

    model_config = ConfigDict(alias_generator=alias_generators.to_camel, populate_by_name=True, extra="allow")

    model: str = Field(default="gemini-2.5-flash", description="The model that simulates the user.")
    model_configuration: genai_types.GenerateContentConfig | None = Field(
        default=None, description="Generation config of the simulating model (ADK's default when unset)."
    )
    max_allowed_invocations: int = Field(default=20, description="Turns before a run-off conversation stops.")
    custom_instructions: str | None = Field(default=None, description="Jinja instructions for the simulator.")
    include_function_calls: bool = Field(default=False, description="Show tool calls to the simulator.")

    @field_validator("custom_instructions")
    @classmethod
    def _check_instructions(cls, value: str | None) -> str | None:
        if value is not None and not _has_placeholders(value, _REQUIRED_PLACEHOLDERS):
            raise ValueError(
                "custom_instructions must contain each of the following formatting placeholders using Jinja syntax: "
                "{{ stop_signal }}, {{ conversation_plan }}, {{ conversation_history }}"
            )
        return value


class LlmBackedUserSimulatorConfig(_SimulatorConfig):
    """ADK's ``LlmBackedUserSimulatorConfig`` (``type: "llm_backed"``)."""

    type: Literal["llm_backed"] = Field(default="llm_backed", description="The simulator class.")


class LlmAudioUserSimulatorConfig(_SimulatorConfig):
    """ADK's ``LlmAudioUserSimulatorConfig`` (``type: "llm_audio"``)."""

    type: Literal["llm_audio"] = Field(default="llm_audio", description="The simulator class.")
    audio_model: str = Field(default="cloud_tts", description="The model that speaks the simulated user's turns.")
    audio_model_configuration: genai_types.GenerateContentConfig | None = Field(
        default=None, description="Generation config of the audio model (ADK's default when unset)."
    )
    include_text_with_audio: bool = Field(default=True, description="Send the text beside the audio.")


UserSimulatorConfig = Annotated[LlmBackedUserSimulatorConfig | LlmAudioUserSimulatorConfig, Field(discriminator="type")]
"""A ``user_simulator_config``, its class chosen by ``type`` as ADK chooses it."""


class LiveModelConfig(BaseModel):
    """ADK's ``LiveModelConfig``: settings for evaluating a live (bidirectional streaming) model."""

    model_config = ConfigDict(alias_generator=alias_generators.to_camel, populate_by_name=True)

    timeout_seconds: int = Field(default=300, description="Wait for a model turn to complete, in seconds.")


def with_default_simulator_type(values: Any) -> Any:
    """An eval config's JSON with ADK's legacy ``type`` (``llm_backed``) given to a ``user_simulator_config`` that has
    none (either spelling), as ADK's ``EvalConfig`` does before validating."""
    if not isinstance(values, dict):
        return values
    for key in ("user_simulator_config", "userSimulatorConfig"):
        inner = values.get(key)
        if isinstance(inner, dict) and inner.get("type") is None:
            values = {**values, key: {**inner, "type": DEFAULT_USER_SIMULATOR_TYPE}}
    return values
