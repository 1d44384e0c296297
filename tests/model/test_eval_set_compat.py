"""EvalSet loading agrees with google-adk 2.13's ``EvalSet.model_validate``, both ways."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic
import pytest
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_eval.model import EvalConfig, EvalSet, EvalStatus, ToolTrajectoryCriterion

DATA = Path(__file__).resolve().parents[1] / "data" / "evalsets"


def _accepts(model: type[pydantic.BaseModel], payload: Any) -> bool:
    # ADK rejects an unknown persona id with NotFoundError rather than a ValidationError: any exception rejects.
    try:
        model.model_validate(payload)
    except Exception:
        return False
    return True


@pytest.mark.parametrize("path", sorted(DATA.glob("*.json")), ids=lambda p: p.name)
def test_shipped_eval_sets_load_and_dump_like_adk(path: Path) -> None:
    payload = json.loads(path.read_text())
    ours = EvalSet.model_validate(payload)
    adk = AdkEvalSet.model_validate(payload)
    assert json.loads(ours.model_dump_json()) == json.loads(adk.model_dump_json())


_text = st.text(max_size=8)
_part = st.fixed_dictionaries({}, optional={"text": _text})
_content = st.fixed_dictionaries(
    {"parts": st.lists(_part, max_size=2)}, optional={"role": st.sampled_from(["user", "model", 3])}
)
_call = st.fixed_dictionaries(
    {"name": _text}, optional={"args": st.dictionaries(_text, st.integers() | _text, max_size=2), "id": _text}
)
_invocation = st.fixed_dictionaries(
    {"user_content": _content},
    optional={
        "invocation_id": _text,
        "final_response": _content | st.none(),
        "intermediate_data": st.one_of(
            st.fixed_dictionaries({}, optional={"tool_uses": st.lists(_call, max_size=2)}),
            st.fixed_dictionaries(
                {"invocation_events": st.lists(st.fixed_dictionaries({"author": _text}), max_size=2)}
            ),
        ),
        "creationTimestamp": st.floats(allow_nan=False) | _text,
        "unexpected": st.just(1),
    },
)
_case = st.fixed_dictionaries(
    {"eval_id": _text},
    optional={
        "conversation": st.lists(_invocation, max_size=2),
        "conversation_scenario": st.fixed_dictionaries(
            {"starting_prompt": _text, "conversation_plan": _text},
            optional={"user_persona": st.sampled_from(["EXPERT", "NOVICE", "NOBODY"])},
        ),
        "rubrics": st.lists(
            st.fixed_dictionaries(
                {"rubric_id": _text, "rubric_content": st.fixed_dictionaries({"text_property": _text})}
            ),
            max_size=1,
        ),
        "session_input": st.fixed_dictionaries({"app_name": _text, "user_id": _text}),
        "extra_key_allowed_on_cases": st.just(True),
    },
)
_eval_set = st.fixed_dictionaries(
    {"eval_cases": st.lists(_case, max_size=2)},
    optional={"eval_set_id": _text, "evalSetId": _text, "name": _text | st.none(), "junk": st.just(1)},
)


@settings(max_examples=300, deadline=None)
@given(_eval_set)
def test_generated_eval_sets_accepted_exactly_when_adk_accepts(payload: dict[str, Any]) -> None:
    assert _accepts(EvalSet, payload) == _accepts(AdkEvalSet, payload)


def test_eval_config_accepts_numbers_and_camel_case_criteria() -> None:
    config = EvalConfig.model_validate(
        {
            "criteria": {
                "tool_trajectory_avg_score": {"threshold": 1, "matchType": "in-order"},
                "response_match_score": 0.8,
            }
        }
    )
    criterion = config.criterion_for("tool_trajectory_avg_score").as_type(ToolTrajectoryCriterion)
    assert criterion.match_type is ToolTrajectoryCriterion.MatchType.IN_ORDER
    assert config.criterion_for("response_match_score").threshold == 0.8


def test_eval_status_serialises_as_adk_integers() -> None:
    assert [s.value for s in EvalStatus] == [1, 2, 3, 4]
