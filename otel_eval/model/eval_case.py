"""Eval cases and invocations, wire-compatible with ``google.adk.evaluation.eval_case`` (ADK 2.13)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, TypeAlias

import pydantic
import pydantic_core
from pydantic import Field, field_validator, model_validator

from otel_eval.model import genai as genai_types
from otel_eval.model._base import EvalBaseModel

PREBUILT_PERSONA_IDS: frozenset[str] = frozenset({"EXPERT", "NOVICE", "EVALUATOR"})
"""Persona ids ADK's default persona registry resolves (``simulation/pre_built_personas.py``)."""


class RubricContent(EvalBaseModel):
    """The testable property of a rubric."""

    text_property: str | None = Field(default=None, description="The property being evaluated.")


class Rubric(EvalBaseModel):
    """One rubric: a yes/no property the judge assesses."""

    rubric_id: str = Field(description="Unique identifier for the rubric.")
    rubric_content: RubricContent = Field(description="The actual testable criterion for the rubric.")
    description: str | None = Field(default=None, description="How the rubric's result should be read.")
    type: str | None = Field(default=None, description="Rubric type, e.g. FINAL_RESPONSE_QUALITY or TOOL_USE_QUALITY.")


class RepeatedRubricId(NamedTuple):
    """A rubric whose ``rubric_id`` an earlier rubric has."""

    location: tuple[int | str, ...]
    """Where its ``rubric_id`` is (``("rubrics", 2, "rubric_id")``)."""
    rubric_id: str
    problem: str
    """``'r1' repeats rubrics[0]``."""


def repeated_rubric_ids(
    rubrics: Sequence[Rubric] | None, at: tuple[int | str, ...], seen: dict[str, str] | None = None
) -> list[RepeatedRubricId]:
    """Each rubric of ``rubrics`` (at ``at``, ending in the list's key) whose ``rubric_id`` an earlier one has, in
    this list or in ``seen`` (id -> where it is, to which this list's ids are added).

    The rule wherever rubrics are read (a rubric metric's criterion, an eval case, its invocations): ADK 2.13 reads
    such rubrics too and fails only when it evaluates them (``Rubric with rubric_id 'r1' already exists``)."""
    seen = {} if seen is None else seen
    found = []
    for index, rubric in enumerate(rubrics or ()):
        where = seen.get(rubric.rubric_id)
        if where is not None:
            problem = f"{rubric.rubric_id!r} repeats {where}"
            found.append(RepeatedRubricId((*at, index, "rubric_id"), rubric.rubric_id, problem))
        else:
            seen[rubric.rubric_id] = f"{at[-1]}[{index}]"
    return found


def repeated_rubric_ids_error(title: str, found: Sequence[RepeatedRubricId]) -> pydantic.ValidationError:
    """``found`` as the error a validator raises, each at its own location (under the validated field's)."""
    line_errors: list[Any] = [
        {
            "type": pydantic_core.PydanticCustomError("rubric_id_repeated", "{problem}", {"problem": repeated.problem}),
            "loc": repeated.location,
            "input": repeated.rubric_id,
        }
        for repeated in found
    ]
    return pydantic_core.ValidationError.from_exception_data(title, line_errors)


class RubricScore(EvalBaseModel):
    """The judge's verdict on one rubric."""

    rubric_id: str = Field(description="The id of the rubric that was assessed.")
    rationale: str | None = Field(default=None, description="Reasoning for the score.")
    score: float | None = Field(default=None, description="1.0 yes, 0.0 no, None when not assessed.")


class AgentDetails(EvalBaseModel):
    """One agent of the app: its instructions and tool declarations."""

    name: str = Field(description="The agent's unique name in the app.")
    instructions: str = Field(default="", description="The agent's system instructions.")
    tool_declarations: list[Any] = Field(
        default_factory=list, description="genai ``Tool`` objects (JSON) available to the agent."
    )


class AppDetails(EvalBaseModel):
    """The agentic system as far as evaluation needs it."""

    agent_details: dict[str, AgentDetails] = Field(default_factory=dict, description="Agent name -> details.")


class IntermediateData(EvalBaseModel):
    """Tool calls, tool responses and intermediate texts produced on the way to the final response."""

    tool_uses: list[genai_types.FunctionCall] = Field(default_factory=list, description="Tool calls in order.")
    tool_responses: list[genai_types.FunctionResponse] = Field(
        default_factory=list, description="Tool responses in order."
    )
    intermediate_responses: list[tuple[str, list[genai_types.Part]]] = Field(
        default_factory=list, description="(author, parts) of texts sent before the final response."
    )


class InvocationEvent(EvalBaseModel):
    """One event of an invocation (ADK's event-based intermediate data)."""

    model_config = pydantic.ConfigDict(extra="ignore")

    author: str
    content: genai_types.Content | None = None
    grounding_metadata: genai_types.GroundingMetadata | None = None
    usage_metadata: genai_types.GenerateContentResponseUsageMetadata | None = None
    model_version: str | None = None


class InvocationEvents(EvalBaseModel):
    """Event-based intermediate data."""

    invocation_events: list[InvocationEvent] = Field(default_factory=list)


IntermediateDataType: TypeAlias = IntermediateData | InvocationEvents


class Invocation(EvalBaseModel):
    """One user turn and the agent's answer to it."""

    invocation_id: str = ""
    user_content: genai_types.Content
    final_response: genai_types.Content | None = None
    intermediate_data: IntermediateDataType | None = Field(
        default=None,
        # The two forms have no field in common and forbid unknown ones, so at most one accepts a non-empty mapping
        # (an empty one is IntermediateData's in either mode): the first that validates is the one pydantic's
        # default ("smart") mode picks, without validating the other form as well.
        union_mode="left_to_right",
    )
    creation_timestamp: float = 0.0
    duration: float | None = None
    model_duration: float | None = None
    tool_duration: float | None = None
    rubrics: list[Rubric] | None = None
    app_details: AppDetails | None = None


class SessionInput(EvalBaseModel):
    """Values that initialise the agent's session for an eval case."""

    model_config = pydantic.ConfigDict(extra="allow")

    app_name: str
    user_id: str
    session_id: str | None = None
    state: dict[str, Any] = Field(default_factory=dict)


class UserBehavior(pydantic.BaseModel):
    """A behaviour of a simulated-user persona."""

    name: str
    description: str
    behavior_instructions: list[str]
    violation_rubrics: list[str]


class UserPersona(pydantic.BaseModel):
    """A simulated-user persona."""

    id: str
    description: str
    behaviors: list[UserBehavior]


class ConversationScenario(EvalBaseModel):
    """A scenario for a simulated user instead of a fixed conversation."""

    starting_prompt: str
    conversation_plan: str
    user_persona: UserPersona | str | None = Field(
        default=None, description="A persona, or the id of one of ADK's prebuilt personas."
    )

    @field_validator("user_persona", mode="before")
    @classmethod
    def _known_persona_id(cls, value: object) -> object:
        if isinstance(value, str) and value not in PREBUILT_PERSONA_IDS:
            raise ValueError(f"unknown persona id {value!r}; expected one of {sorted(PREBUILT_PERSONA_IDS)}")
        return value


class EvalCase(EvalBaseModel):
    """One eval case: a fixed conversation or a simulated-user scenario."""

    model_config = pydantic.ConfigDict(extra="allow")

    eval_id: str
    conversation: list[Invocation] | None = None
    conversation_scenario: ConversationScenario | None = None
    session_input: SessionInput | None = None
    creation_timestamp: float = 0.0
    rubrics: list[Rubric] | None = None
    final_session_state: dict[str, Any] | None = Field(default_factory=dict)

    @model_validator(mode="after")
    def _conversation_xor_scenario(self) -> EvalCase:
        if (self.conversation is None) == (self.conversation_scenario is None):
            raise ValueError("Exactly one of conversation and conversation_scenario must be provided in an EvalCase.")
        return self

    def repeated_rubric_ids(self) -> list[RepeatedRubricId]:
        """The rubrics of this case whose ``rubric_id`` is taken already: in the case's ``rubrics``, or in an
        invocation's, by its other rubrics or the case's (ADK copies the case's and the invocation's rubrics onto the
        actual invocation together, and fails on a repeated id)."""
        case_ids: dict[str, str] = {}
        found = repeated_rubric_ids(self.rubrics, ("rubrics",), case_ids)
        for turn, invocation in enumerate(self.conversation or ()):
            seen = {rubric_id: f"the case's {where}" for rubric_id, where in case_ids.items()}
            found += repeated_rubric_ids(invocation.rubrics, ("conversation", turn, "rubrics"), seen)
        return found


def get_all_tool_calls(intermediate_data: IntermediateDataType | None) -> list[genai_types.FunctionCall]:
    """Tool calls of an invocation, in order, from either intermediate-data form."""
    if intermediate_data is None:
        return []
    if isinstance(intermediate_data, IntermediateData):
        return list(intermediate_data.tool_uses)
    return [
        part.function_call
        for event in intermediate_data.invocation_events
        if event.content and event.content.parts
        for part in event.content.parts
        if part.function_call
    ]


def get_all_tool_responses(intermediate_data: IntermediateDataType | None) -> list[genai_types.FunctionResponse]:
    """Tool responses of an invocation, in order, from either intermediate-data form."""
    if intermediate_data is None:
        return []
    if isinstance(intermediate_data, IntermediateData):
        return list(intermediate_data.tool_responses)
    return [
        part.function_response
        for event in intermediate_data.invocation_events
        if event.content and event.content.parts
        for part in event.content.parts
        if part.function_response
    ]


def content_text(content: genai_types.Content | None) -> str:
    """The text of a content as ADK's evaluators read it: text parts joined by newlines."""
    if content is None or not content.parts:
        return ""
    return "\n".join(part.text for part in content.parts if part.text)
