"""The shared one-to-one alignment: the unordered one is the lexicographic optimum (checked by brute force)."""

from __future__ import annotations

import itertools
from fractions import Fraction

from google.genai import types as genai_types
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_eval.metrics._tool_alignment import align_ordered, align_unordered, declared_required_params
from otel_eval.model import AgentDetails, AppDetails
from tests.metrics._factories import invocation, ours


def _objective(pairs: list[tuple[int, int]], score: dict[tuple[int, int], Fraction]) -> tuple[int, Fraction, int]:
    return len(pairs), sum((score[p] for p in pairs), Fraction(0)), -sum(abs(i - j) for i, j in pairs)


def _brute_force_best(
    expected: list[str], actual: list[str], score: dict[tuple[int, int], Fraction], eligible: set[tuple[int, int]]
) -> tuple[int, Fraction, int]:
    best = (0, Fraction(0), 0)
    indices = range(len(actual))
    for size in range(min(len(expected), len(actual)) + 1):
        for rows in itertools.combinations(range(len(expected)), size):
            for cols in itertools.permutations(indices, size):
                pairs = list(zip(rows, cols, strict=True))
                if all(p in eligible and expected[p[0]] == actual[p[1]] for p in pairs):
                    best = max(best, _objective(pairs, score))
    return best


@st.composite
def problems(draw: st.DrawFn) -> tuple[list[str], list[str], dict[tuple[int, int], Fraction], set[tuple[int, int]]]:
    expected = draw(st.lists(st.sampled_from("ab"), max_size=5))
    actual = draw(st.lists(st.sampled_from("ab"), max_size=5))
    score = {
        (i, j): Fraction(draw(st.integers(0, 3)), draw(st.integers(1, 3)))
        for i in range(len(expected))
        for j in range(len(actual))
    }
    score = {k: min(v, Fraction(1)) for k, v in score.items()}
    eligible = {k for k in score if draw(st.integers(0, 3)) > 0}
    return expected, actual, score, eligible


@settings(max_examples=200, deadline=None)
@given(problems())
def test_unordered_alignment_is_the_lexicographic_optimum(
    problem: tuple[list[str], list[str], dict[tuple[int, int], Fraction], set[tuple[int, int]]],
) -> None:
    expected, actual, score, eligible = problem
    result = align_unordered(expected, actual, lambda i, j: (i, j) in eligible, lambda i, j: score[(i, j)])
    pairs = [(i, j) for i, j in enumerate(result) if j is not None]
    assert len({j for _, j in pairs}) == len(pairs)  # one to one
    assert all(p in eligible and expected[p[0]] == actual[p[1]] for p in pairs)
    assert _objective(pairs, score) == _brute_force_best(expected, actual, score, eligible)
    # Deterministic: the same input gives the same alignment.
    assert result == align_unordered(expected, actual, lambda i, j: (i, j) in eligible, lambda i, j: score[(i, j)])


def test_ordered_alignment_is_a_forward_scan() -> None:
    expected, actual = ["c", "a", "b"], ["a", "b", "c"]
    assert align_ordered(3, 3, lambda i, j: expected[i] == actual[j]) == [2, None, None]
    expected, actual = ["a", "x", "b"], ["a", "b"]
    assert align_ordered(3, 2, lambda i, j: expected[i] == actual[j]) == [0, None, 1]


def test_declared_required_params_from_objects_and_json() -> None:
    tool = genai_types.Tool(
        function_declarations=[
            genai_types.FunctionDeclaration(
                name="search",
                parameters=genai_types.Schema(type=genai_types.Type.OBJECT, required=["q"]),
            ),
            genai_types.FunctionDeclaration(name="ping"),
        ]
    )
    json_tool = {"functionDeclarations": [{"name": "book", "parametersJsonSchema": {"required": ["city", "n"]}}]}
    app = AppDetails(
        agent_details={"root": AgentDetails(name="root", tool_declarations=[tool]), "sub": AgentDetails(name="sub")}
    )
    with_objects = ours(invocation()).model_copy(update={"app_details": app})
    with_json = ours(invocation(app_details={"agent_details": {"r": {"name": "r", "tool_declarations": [json_tool]}}}))
    assert declared_required_params([None, ours(invocation()), with_objects]) == {
        "search": frozenset({"q"}),
        "ping": frozenset(),
    }
    assert declared_required_params([with_json, with_objects]) == {"book": frozenset({"city", "n"})}
    assert declared_required_params([ours(invocation())]) == {}
