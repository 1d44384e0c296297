"""The pairing rule through :class:`GoldenIndex` gives what the rule's pass over every case gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_eval.demo.golden import golden_eval_set
from otel_eval.evaluation import GoldenIndex, find_golden_turn, pair_invocations, shadowed_cases
from otel_eval.model import (
    Content,
    ConversationScenario,
    EvalCase,
    EvalSet,
    Invocation,
    Part,
    TracedInvocation,
    content_text,
)
from otel_eval.model.loading import load_eval_set

EVAL_SETS = sorted((Path(__file__).parents[1] / "data" / "evalsets").glob("*.json"))


def _invocation(text: str, index: int = 0) -> Invocation:
    return Invocation(invocation_id=f"i{index}", user_content=Content(role="user", parts=[Part(text=text)]))


def _traced(*texts: str) -> list[TracedInvocation]:
    return [
        TracedInvocation(
            invocation=_invocation(text, index), trace_id=f"{index:032x}", span_id=f"{index:016x}", convention="genai"
        )
        for index, text in enumerate(texts)
    ]


def _case(eval_id: str, *texts: str) -> EvalCase:
    return EvalCase(eval_id=eval_id, conversation=[_invocation(text, i) for i, text in enumerate(texts)])


def _linear_pairing(invocations: list[TracedInvocation], eval_set: EvalSet) -> tuple[str | None, str]:
    """The rule as the module docs state it, a pass over every case (what pairing did before the index)."""
    first = content_text(invocations[0].invocation.user_content)
    found = find_golden_turn(eval_set.eval_cases, first)
    if found is not None:
        return found[0].eval_id, "turn"
    wanted = " ".join(first.split()).casefold()
    for case in eval_set.eval_cases:
        scenario = case.conversation_scenario
        if wanted and scenario is not None and " ".join(scenario.starting_prompt.split()).casefold() == wanted:
            return case.eval_id, "scenario"
    return None, "none"


def _variants(text: str) -> list[str]:
    return [text, f"  {text.upper()}  ", text.replace(" ", "\n\t "), f"{text} and more", ""]


@pytest.mark.parametrize("path", EVAL_SETS, ids=lambda p: p.name)
def test_every_user_text_of_a_real_eval_set_pairs_as_the_pass_over_every_case_does(path: Path) -> None:
    eval_set = load_eval_set(path)
    index = GoldenIndex(eval_set)
    texts = [content_text(turn.user_content) for case in eval_set.eval_cases for turn in case.conversation or []]
    assert texts
    for text in (variant for original in texts for variant in _variants(original)):
        assert index.golden_turn(text) == find_golden_turn(eval_set.eval_cases, text)
        invocations = _traced(text)
        pairing = pair_invocations(invocations, eval_set, index=index)
        expected_id, _ = _linear_pairing(invocations, eval_set)
        if expected_id is None:
            assert pairing.case is None
        elif pairing.case is not None:
            assert pairing.case.eval_id == expected_id
        assert pairing == pair_invocations(invocations, eval_set)


def test_the_first_case_turn_and_the_first_scenario_win_and_empty_text_pairs_with_nothing() -> None:
    scenario = EvalCase(
        eval_id="simulated",
        conversation_scenario=ConversationScenario(starting_prompt="Plan a trip", conversation_plan="ask twice"),
    )
    later_scenario = scenario.model_copy(update={"eval_id": "simulated_again"})
    eval_set = EvalSet(
        eval_set_id="s",
        eval_cases=[
            _case("empty", ""),
            _case("first", "Hello there", "Book it"),
            _case("second", "book   IT"),
            scenario,
            later_scenario,
            _case("third", "hello THERE", "Book it"),
        ],
    )
    index = GoldenIndex(eval_set)
    assert index.golden_turn("BOOK it") == (eval_set.eval_cases[1], 1)
    assert index.golden_turn("  ") is None and find_golden_turn(eval_set.eval_cases, "  ") is None

    pairing = pair_invocations(_traced("hello there", "book it"), eval_set, index=index)
    assert (
        pairing.case is not None and pairing.case.eval_id == "first" and pairing.note == "matched on the user message"
    )
    assert pair_invocations(_traced("book it"), eval_set, index=index).case.eval_id == "first"  # type: ignore[union-attr]
    by_scenario = pair_invocations(_traced("plan a  TRIP"), eval_set, index=index)
    assert by_scenario.case is not None and by_scenario.case.eval_id == "simulated"
    missed = pair_invocations(_traced("something else"), eval_set, index=index)
    assert missed.case is None and "no case of eval set 's'" in missed.note
    assert [(case.eval_id, earlier.eval_id) for case, earlier in shadowed_cases(eval_set.eval_cases)] == [
        ("second", "first"),
        ("third", "first"),
    ]


def test_an_index_of_another_eval_set_is_not_used() -> None:
    golden = golden_eval_set()
    other = EvalSet(eval_set_id="other", eval_cases=[_case("elsewhere", "Nothing in common")])
    text = content_text((golden.eval_cases[0].conversation or [])[0].user_content)
    pairing = pair_invocations(_traced(text), golden, index=GoldenIndex(other))
    assert pairing.case is not None and pairing.case.eval_id == golden.eval_cases[0].eval_id
