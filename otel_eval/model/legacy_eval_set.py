"""ADK's older eval-data format (``*.test.json``), converted to an :class:`EvalSet` exactly as ADK 2.13 converts it.

Two shapes are in use, both JSON arrays:

- a list of eval cases, ``[{"name": ..., "data": [...], "initial_session": {...}}]``
  (``local_eval_sets_manager.convert_eval_set_to_pydantic_schema``);
- a list of turns of one case, ``[{"query": ..., "expected_tool_use": [...], "reference": ...}]`` (what
  ``AgentEvaluator`` reads from a ``.test.json`` file; the case is named after the file, where ADK names it after
  the path it was given, as spelt: docs/offline.md).

Each turn becomes an invocation whose user content is ``query``, whose final response is ``reference`` (``""`` when
absent, as in ADK) and whose tool uses are ``expected_tool_use`` (``tool_name`` / ``tool_input``). ADK gives each
invocation a random id and the current time; here ids are ``<case>/<turn index>`` so results are reproducible.
"""

from __future__ import annotations

from typing import Any

import pydantic

from otel_eval.model import genai as genai_types
from otel_eval.model.eval_case import EvalCase, IntermediateData, Invocation, SessionInput
from otel_eval.model.eval_set import EvalSet


class _LegacyToolUse(pydantic.BaseModel):
    tool_name: str
    tool_input: dict[str, Any] = pydantic.Field(default_factory=dict)


class _LegacyIntermediateResponse(pydantic.BaseModel):
    author: str
    text: str


class _LegacyTurn(pydantic.BaseModel):
    query: str
    reference: str = ""
    expected_tool_use: list[_LegacyToolUse] = pydantic.Field(default_factory=list)
    expected_intermediate_agent_responses: list[_LegacyIntermediateResponse] = pydantic.Field(default_factory=list)


class _LegacyCase(pydantic.BaseModel):
    name: str
    data: list[_LegacyTurn]
    initial_session: dict[str, Any] = pydantic.Field(default_factory=dict)


_CASES = pydantic.TypeAdapter(list[_LegacyCase])
_TURNS = pydantic.TypeAdapter(list[_LegacyTurn])


def convert_legacy_eval_data(payload: list[Any], *, eval_set_id: str) -> EvalSet:
    """The :class:`EvalSet` ADK builds from older-format ``payload``.

    Raises:
        pydantic.ValidationError: ``payload`` is in neither shape; locations are paths into ``payload``.
    """
    if payload and isinstance(payload[0], dict) and "data" in payload[0]:
        cases = _CASES.validate_python(payload)
    else:
        cases = [_LegacyCase(name=eval_set_id, data=_TURNS.validate_python(payload))]
    return EvalSet(
        eval_set_id=eval_set_id,
        name=eval_set_id,
        eval_cases=[_eval_case(case) for case in cases],
    )


def _eval_case(case: _LegacyCase) -> EvalCase:
    session = case.initial_session
    return EvalCase(
        eval_id=case.name,
        conversation=[_invocation(turn, f"{case.name}/{index}") for index, turn in enumerate(case.data)],
        session_input=SessionInput(
            app_name=session.get("app_name", ""), user_id=session.get("user_id", ""), state=session.get("state", {})
        )
        if session
        else None,
    )


def _invocation(turn: _LegacyTurn, invocation_id: str) -> Invocation:
    return Invocation(
        invocation_id=invocation_id,
        user_content=genai_types.Content(role="user", parts=[genai_types.Part(text=turn.query)]),
        final_response=genai_types.Content(role="model", parts=[genai_types.Part(text=turn.reference)]),
        intermediate_data=IntermediateData(
            tool_uses=[
                genai_types.FunctionCall(name=use.tool_name, args=use.tool_input) for use in turn.expected_tool_use
            ],
            intermediate_responses=[
                (response.author, [genai_types.Part(text=response.text)])
                for response in turn.expected_intermediate_agent_responses
            ],
        ),
    )
