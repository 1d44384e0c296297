"""ADK's older ``*.test.json`` eval data: converted as ADK 2.13 converts it, bad items named by their JSON path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from google.adk.evaluation.agent_evaluator import AgentEvaluator
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
from google.adk.evaluation.local_eval_sets_manager import convert_eval_set_to_pydantic_schema, load_eval_set_from_file

from otel_eval.cli import main
from otel_eval.errors import InputError
from otel_eval.model import EvalSet
from otel_eval.model.loading import load_eval_set

TURNS: list[dict[str, Any]] = [
    {"query": "What can you do?", "expected_tool_use": [], "reference": "I can roll dice.\n"},
    {
        "query": "Roll a 17 sided dice twice for me",
        "expected_tool_use": [
            {"tool_name": "roll_die", "tool_input": {"sides": 17}},
            {"tool_name": "roll_die", "tool_input": {"sides": 17}},
        ],
        "expected_intermediate_agent_responses": [{"author": "helper", "text": "rolling"}],
        "reference": "13 and 4.",
    },
    {"query": "no reference given"},
]
CASES: list[dict[str, Any]] = [
    {"name": "roll_twice", "data": TURNS, "initial_session": {"state": {"n": 1}, "app_name": "dice", "user_id": "u"}},
    {"name": "no_session", "data": TURNS[:1]},
]


def comparable(eval_set: Any) -> list[dict[str, Any]]:
    """Cases as plain JSON without ADK's random ids and timestamps."""
    data = json.loads(eval_set.model_dump_json(exclude_none=True))
    for case in data["eval_cases"]:
        case.pop("creation_timestamp", None)
        for invocation in case["conversation"]:
            for key in ("invocation_id", "creation_timestamp"):
                invocation.pop(key, None)
    return data["eval_cases"]


def write(tmp_path: Path, name: str, payload: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(payload))
    return path


def test_list_of_cases_converts_as_adk_converts_it(tmp_path: Path) -> None:
    ours = load_eval_set(write(tmp_path, "dice.test.json", CASES))
    adks = convert_eval_set_to_pydantic_schema("dice", CASES)
    assert comparable(ours) == comparable(adks)
    assert ours.eval_set_id == "dice"
    assert [i.invocation_id for i in ours.eval_cases[0].conversation] == [
        "roll_twice/0",
        "roll_twice/1",
        "roll_twice/2",
    ]


def test_list_of_turns_is_one_case_named_after_the_file(tmp_path: Path) -> None:
    ours = load_eval_set(write(tmp_path, "dice.test.json", TURNS))
    adks = convert_eval_set_to_pydantic_schema("dice", [{"name": "dice", "data": TURNS}])
    assert comparable(ours) == comparable(adks)
    assert [case.eval_id for case in ours.eval_cases] == ["dice"]


def test_names_are_the_file_name_where_adk_takes_the_path_it_was_called_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What docs/offline.md says of the older files' names: ADK 2.13 names a list of turns (which only
    ``AgentEvaluator`` reads) after the path it was given, as given, in an eval set of a random id, and a list of cases
    (which only ``adk eval`` reads) keeps its cases' names in an eval set named after the path given; otel-eval names
    both eval sets, and the list of turns' case, after the file name without ``.test.json``, however the path is
    spelt."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "legacy").mkdir()
    turns, cases = write(tmp_path, "legacy/dice.test.json", TURNS), write(tmp_path, "legacy/cases.test.json", CASES)
    config = AdkEvalConfig(criteria={"tool_trajectory_avg_score": 1.0})
    for given in ("legacy/dice.test.json", "./legacy/dice.test.json", str(turns)):
        adks = AgentEvaluator._load_eval_set_from_file(given, config, {})
        assert [case.eval_id for case in adks.eval_cases] == [given]
        ours = load_eval_set(given)
        assert (ours.eval_set_id, [case.eval_id for case in ours.eval_cases]) == ("dice", ["dice"])
    with pytest.raises(ValueError, match="must include 'query'"):
        AgentEvaluator._load_eval_set_from_file("legacy/cases.test.json", config, {})
    with pytest.raises(KeyError, match="data"):
        load_eval_set_from_file("legacy/dice.test.json", "legacy/dice.test.json")  # what adk eval reads a file with
    adks = load_eval_set_from_file("legacy/cases.test.json", "legacy/cases.test.json")
    ours = load_eval_set(cases)
    assert (adks.eval_set_id, ours.eval_set_id) == ("legacy/cases.test.json", "cases")
    assert [case.eval_id for case in ours.eval_cases] == [case.eval_id for case in adks.eval_cases]


def test_converted_set_validates_as_an_eval_set(tmp_path: Path) -> None:
    ours = load_eval_set(write(tmp_path, "dice.test.json", CASES))
    assert EvalSet.model_validate_json(ours.model_dump_json()) == ours


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ([{"name": "c", "data": [{"reference": "x"}]}], "[0].data[0].query: Field required"),
        (
            [{"query": "q", "expected_tool_use": [{"tool_input": {}}]}],
            "[0].expected_tool_use[0].tool_name: Field required",
        ),
        ([{"name": "c", "data": "not a list"}], "[0].data: Input should be a valid list"),
    ],
)
def test_bad_item_names_file_and_json_path(tmp_path: Path, payload: Any, problem: str) -> None:
    path = write(tmp_path, "bad.test.json", payload)
    with pytest.raises(InputError) as caught:
        load_eval_set(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: invalid eval data (ADK's older list format): ")
    assert problem in message
    assert "\n" not in message


def test_validate_checks_the_older_format_as_run_reads_it(tmp_path: Path) -> None:
    """``otel-eval validate`` takes what ``run --eval-set`` takes: a valid older-format file is valid, a bad one's
    problems are named by their JSON path."""
    good = write(tmp_path, "dice.test.json", CASES)
    bad = write(tmp_path, "bad.test.json", [{"name": "c", "data": [{"reference": "x"}]}])
    result = CliRunner().invoke(main, ["validate", str(good), str(bad)])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        # Both cases start with the same user message: the pairing rule never reaches the second (said, still valid).
        f"{good}: warning: case 'no_session' is never paired: a conversation whose first user message is "
        "'What can you do?' pairs with the earlier case 'roll_twice' (--eval-id chooses a case)",
        f"{good}: valid eval set",
        f"{bad}: [0].data[0].query: Field required",
    ]
