"""tool_parameter_match: hand-worked cases, one or more per rule of the spec (ADK feature request #5643, PR #6726)."""

from __future__ import annotations

import pytest

from otel_eval.errors import ConfigurationError
from otel_eval.model import EvalStatus
from tests.metrics._factories import Json, call, evaluate, evaluator, invocation, scores, statuses, traced

METRIC = "tool_parameter_match"


def score_of(actual_calls: list[Json], expected_calls: list[Json], **criterion: object) -> float | None:
    metric = evaluator(METRIC, {"threshold": 0.5, **criterion})
    return scores(evaluate(metric, [invocation(actual_calls)], [invocation(expected_calls)]))[0]


HOTEL = "book_hotel"


@pytest.mark.parametrize(
    ("name", "actual_calls", "expected_calls", "criterion", "score"),
    [
        # ADK PR #6726's test: the city matches, the rooms do not -> half the arguments.
        (
            "pr_6726",
            [call(HOTEL, {"city": "Paris", "rooms": 3})],
            [call(HOTEL, {"city": "Paris", "rooms": 2})],
            {},
            0.5,
        ),
        (
            "all_args_match",
            [call(HOTEL, {"city": "Paris", "rooms": 2})],
            [call(HOTEL, {"rooms": 2, "city": "Paris"})],
            {},
            1.0,
        ),
        (
            "extra_actual_args_ignored",
            [call(HOTEL, {"city": "Paris", "vip": True})],
            [call(HOTEL, {"city": "Paris"})],
            {},
            1.0,
        ),
        ("missing_actual_arg", [call(HOTEL, {"city": "Paris"})], [call(HOTEL, {"city": "Paris", "rooms": 2})], {}, 0.5),
        ("empty_expected_args", [call(HOTEL, {"city": "Paris"})], [call(HOTEL, {})], {}, 1.0),
        ("no_expected_args_field", [call(HOTEL, {"city": "Paris"})], [call(HOTEL)], {}, 1.0),
        ("no_such_tool_called", [call("search", {"q": "x"})], [call(HOTEL, {"city": "Paris"})], {}, 0.0),
        ("no_calls_made", [], [call(HOTEL, {"city": "Paris"})], {}, 0.0),
        (
            "extra_actual_call_not_penalised",
            [call("search", {}), call(HOTEL, {"city": "Paris"})],
            [call(HOTEL, {"city": "Paris"})],
            {},
            1.0,
        ),
        (
            "one_of_two_expected_missing",
            [call(HOTEL, {"city": "Paris"})],
            [call(HOTEL, {"city": "Paris"}), call("pay", {"eur": 10})],
            {},
            0.5,
        ),
        # exact: Python equality (1 == 1.0), case-sensitive strings, nested values compared whole.
        ("exact_int_float", [call("f", {"n": 1.0})], [call("f", {"n": 1})], {}, 1.0),
        ("exact_case_sensitive", [call("f", {"c": "paris"})], [call("f", {"c": "Paris"})], {}, 0.0),
        ("exact_nested", [call("f", {"o": {"a": [1, 2]}})], [call("f", {"o": {"a": [1, 2]}})], {}, 1.0),
        # casefold_exact
        (
            "casefold",
            [call("f", {"c": "PARIS"})],
            [call("f", {"c": "paris"})],
            {"default_strategy": "casefold_exact"},
            1.0,
        ),
        (
            "casefold_sharp_s",
            [call("f", {"c": "STRASSE"})],
            [call("f", {"c": "straße"})],
            {"default_strategy": "casefold_exact"},
            1.0,
        ),
        (
            "casefold_nested",
            [call("f", {"l": ["A", {"k": "B"}]})],
            [call("f", {"l": ["a", {"k": "b"}]})],
            {"default_strategy": "casefold_exact"},
            1.0,
        ),
        (
            "casefold_still_exact",
            [call("f", {"c": "Pariss"})],
            [call("f", {"c": "paris"})],
            {"default_strategy": "casefold_exact"},
            0.0,
        ),
        # numeric: absolute tolerance, inclusive at the edge (decimal arithmetic), numeric strings, fallback to exact.
        (
            "numeric_within",
            [call("f", {"t": 20.3})],
            [call("f", {"t": 20})],
            {"default_strategy": "numeric", "numeric_tolerance": 0.5},
            1.0,
        ),
        (
            "numeric_at_edge",
            [call("f", {"t": 20.5})],
            [call("f", {"t": 20})],
            {"default_strategy": "numeric", "numeric_tolerance": 0.5},
            1.0,
        ),
        (
            "numeric_at_edge_float_noise",
            [call("f", {"t": 0.9})],
            [call("f", {"t": 0.7})],
            {"default_strategy": "numeric", "numeric_tolerance": 0.2},
            1.0,
        ),
        (
            "numeric_just_outside",
            [call("f", {"t": 20.51})],
            [call("f", {"t": 20})],
            {"default_strategy": "numeric", "numeric_tolerance": 0.5},
            0.0,
        ),
        (
            "numeric_zero_tolerance",
            [call("f", {"t": 2.0})],
            [call("f", {"t": 2})],
            {"default_strategy": "numeric"},
            1.0,
        ),
        (
            "numeric_string_value",
            [call("f", {"t": "20.4"})],
            [call("f", {"t": 20})],
            {"default_strategy": "numeric", "numeric_tolerance": 0.5},
            1.0,
        ),
        (
            "numeric_list_elementwise",
            [call("f", {"p": [1.1, 2.0]})],
            [call("f", {"p": [1, 2]})],
            {"default_strategy": "numeric", "numeric_tolerance": 0.1},
            1.0,
        ),
        (
            "numeric_text_falls_back_to_exact",
            [call("f", {"c": "Paris"})],
            [call("f", {"c": "Paris"})],
            {"default_strategy": "numeric"},
            1.0,
        ),
        (
            "numeric_bool_is_not_a_number",
            [call("f", {"b": 1})],
            [call("f", {"b": True})],
            {"default_strategy": "numeric", "numeric_tolerance": 5},
            1.0,
        ),
        (
            "numeric_text_vs_number",
            [call("f", {"t": "twenty"})],
            [call("f", {"t": 20})],
            {"default_strategy": "numeric", "numeric_tolerance": 5},
            0.0,
        ),
        # contains: substring for text, element / subset for lists, sub-dict for dicts.
        (
            "contains_substring",
            [call("f", {"q": "hotels in Paris, France"})],
            [call("f", {"q": "Paris"})],
            {"default_strategy": "contains"},
            1.0,
        ),
        (
            "contains_case_sensitive",
            [call("f", {"q": "hotels in paris"})],
            [call("f", {"q": "Paris"})],
            {"default_strategy": "contains"},
            0.0,
        ),
        (
            "contains_list_element",
            [call("f", {"tags": ["a", "b"]})],
            [call("f", {"tags": "b"})],
            {"default_strategy": "contains"},
            1.0,
        ),
        (
            "contains_list_subset",
            [call("f", {"tags": ["a", "b", "c"]})],
            [call("f", {"tags": ["c", "a"]})],
            {"default_strategy": "contains"},
            1.0,
        ),
        (
            "contains_list_not_subset",
            [call("f", {"tags": ["a"]})],
            [call("f", {"tags": ["a", "z"]})],
            {"default_strategy": "contains"},
            0.0,
        ),
        (
            "contains_dict",
            [call("f", {"o": {"a": "xyz", "b": 2}})],
            [call("f", {"o": {"a": "y"}})],
            {"default_strategy": "contains"},
            1.0,
        ),
        ("contains_number_exact", [call("f", {"n": 12})], [call("f", {"n": 1})], {"default_strategy": "contains"}, 0.0),
        # per_arg_strategies override the default per key.
        (
            "per_arg_override",
            [call("w", {"city": "PARIS", "temperature": 20.4, "unit": "C"})],
            [call("w", {"city": "paris", "temperature": 20, "unit": "c"})],
            {"per_arg_strategies": {"city": "casefold_exact", "temperature": "numeric"}, "numeric_tolerance": 0.5},
            2 / 3,
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_rules(name: str, actual_calls: list[Json], expected_calls: list[Json], criterion: Json, score: float) -> None:
    assert score_of(actual_calls, expected_calls, **criterion) == pytest.approx(score, abs=1e-12)


def search(q: str, **more: object) -> Json:
    return call("search", {"q": q, **more})


@pytest.mark.parametrize(
    ("actual_calls", "expected_calls", "criterion", "score", "pairs"),
    [
        # Ordered forward scan: repeated calls pair in order, one to one.
        ([search("a"), search("b")], [search("a"), search("b")], {}, 1.0, [0, 1]),
        ([search("b"), search("a")], [search("a"), search("b")], {}, 0.0, [0, 1]),
        # The scan moves forward only: the second expected call cannot reuse or go back.
        ([call("x", {}), search("a")], [search("a"), call("x", {})], {}, 0.5, [1, None]),
        # Unordered: the best one-to-one pairing by arguments, whatever the order.
        ([search("b"), search("a")], [search("a"), search("b")], {"ordered": False}, 1.0, [1, 0]),
        ([call("x", {}), search("a")], [search("a"), call("x", {})], {"ordered": False}, 1.0, [1, 0]),
        # Fewer actual than expected repeated calls: one pairs, the other scores 0.
        ([search("b")], [search("a"), search("b")], {"ordered": False}, 0.5, [None, 0]),
        ([search("b")], [search("a"), search("b")], {}, 0.0, [0, None]),
        # Equal candidates: ties go to the closest position.
        ([search("a"), search("a")], [search("a"), search("a")], {"ordered": False}, 1.0, [0, 1]),
        # name_and_args pairs only fully matching calls, so a paired call scores 1.0.
        ([search("b"), search("a")], [search("a"), search("b")], {"match_mode": "name_and_args"}, 0.5, [1, None]),
        (
            [search("b"), search("a")],
            [search("a"), search("b")],
            {"match_mode": "name_and_args", "ordered": False},
            1.0,
            [1, 0],
        ),
        # name_only pairs by name (the arguments are then scored).
        ([search("b"), search("a")], [search("a"), search("b")], {"match_mode": "name_only"}, 0.0, [0, 1]),
    ],
)
def test_alignment_of_repeated_calls(
    actual_calls: list[Json], expected_calls: list[Json], criterion: Json, score: float, pairs: list[int | None]
) -> None:
    metric = evaluator(METRIC, {"threshold": 1.0, **criterion})
    result = evaluate(metric, [invocation(actual_calls)], [invocation(expected_calls)])
    entry = result.per_invocation_results[0]
    assert entry.score == pytest.approx(score)
    assert entry.details is not None and entry.details["pairs"] == pairs


def _declaring(data: Json, required: list[str]) -> Json:
    tool = {
        "function_declarations": [
            {
                "name": "search",
                "parameters": {"type": "OBJECT", "properties": {"q": {"type": "STRING"}}, "required": required},
            }
        ]
    }
    return {**data, "app_details": {"agent_details": {"agent": {"name": "agent", "tool_declarations": [tool]}}}}


def test_required_args_from_the_tool_declaration_decide_the_pairing() -> None:
    actual = invocation([search("b", page=2), search("a", page=1)])
    expected = invocation([search("a", page=1), search("b", page=2)])
    # Without a declaration nothing is required: in order, calls pair by name and the arguments are scored.
    by_name = evaluate(evaluator(METRIC, 1.0), [actual], [expected]).per_invocation_results[0]
    assert (by_name.score, by_name.details and by_name.details["pairs"]) == (0.0, [0, 1])
    # With `q` required, an expected call pairs only with an actual call of the same query.
    declared = _declaring(expected, ["q"])
    ordered = evaluate(evaluator(METRIC, 1.0), [actual], [declared]).per_invocation_results[0]
    assert (ordered.score, ordered.details and ordered.details["pairs"]) == (0.5, [1, None])
    unordered_metric = evaluator(METRIC, {"threshold": 1.0, "ordered": False})
    unordered = evaluate(unordered_metric, [actual], [declared]).per_invocation_results[0]
    assert (unordered.score, unordered.details and unordered.details["pairs"]) == (1.0, [1, 0])
    # A declaration that requires nothing pairs by name again.
    nothing_required = evaluate(evaluator(METRIC, 1.0), [actual], [_declaring(expected, [])]).per_invocation_results[0]
    assert nothing_required.score == 0.0


def test_camel_case_criterion_keys() -> None:
    metric = evaluator(
        METRIC,
        {
            "threshold": 0.8,
            "matchMode": "name_only",
            "defaultStrategy": "casefold_exact",
            "perArgStrategies": {"temperature": "numeric"},
            "numericTolerance": 0.5,
            "ordered": False,
        },
    )
    criterion = metric.criterion
    assert criterion is not None
    assert criterion.model_dump(
        include={"match_mode", "default_strategy", "per_arg_strategies", "numeric_tolerance"}
    ) == {
        "match_mode": "name_only",
        "default_strategy": "casefold_exact",
        "per_arg_strategies": {"temperature": "numeric"},
        "numeric_tolerance": 0.5,
    }
    result = evaluate(
        metric,
        [invocation([call("w", {"city": "PARIS", "temperature": 20.5})])],
        [invocation([call("w", {"city": "paris", "temperature": 20})])],
    )
    assert result.overall_score == 1.0


def test_invocations_without_expected_calls_are_excluded() -> None:
    actual = [invocation([call("f", {"a": 1})]), invocation([call("g", {})]), invocation([call("f", {"a": 2})])]
    expected = [invocation([call("f", {"a": 1})]), invocation([]), invocation([call("f", {"a": 1})])]
    result = evaluate(evaluator(METRIC, 0.5), actual, expected)
    assert scores(result) == [1.0, None, 0.0]
    assert statuses(result) == ["PASSED", "NOT_EVALUATED", "FAILED"]
    assert result.per_invocation_results[1].explanation == "the expected invocation has no tool calls"
    assert result.overall_score == 0.5
    assert result.overall_eval_status is EvalStatus.PASSED


def test_all_invocations_without_expected_calls_is_not_evaluated() -> None:
    result = evaluate(evaluator(METRIC, 0.5), [invocation([call("f", {})])], [invocation([])])
    assert result.overall_score is None
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED
    assert result.explanation == "the expected invocation has no tool calls"


def test_no_reference_is_not_evaluated() -> None:
    result = evaluate(evaluator(METRIC, 0.5), [invocation([call("f", {})])], None)
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED
    assert result.error_type == "no_reference"
    assert statuses(result) == ["NOT_EVALUATED"]


def test_uncaptured_arguments_are_not_evaluated() -> None:
    actual = [traced(invocation([call("f", {})]), content_captured=False)]
    result = evaluate(evaluator(METRIC, 0.5), actual, [invocation([call("f", {"a": 1})])])
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED
    assert result.per_invocation_results[0].error_type == "content_not_captured"


def test_failed_invocation_explains_and_carries_calls() -> None:
    metric = evaluator(METRIC, 1.0)
    result = evaluate(
        metric,
        [invocation([call(HOTEL, {"city": "Paris", "rooms": 3})])],
        [invocation([call(HOTEL, {"city": "Paris", "rooms": 2}), call("pay", {"eur": 10})])],
    )
    entry = result.per_invocation_results[0]
    assert entry.score == 0.25
    assert entry.eval_status is EvalStatus.FAILED
    assert entry.explanation == (
        "call 1 book_hotel: rooms do not match (actual call 1); expected call 2 pay has no matching actual call"
    )
    assert entry.details is not None
    assert entry.details["call_scores"] == [0.5, 0.0]
    assert [(c.name, c.args) for c in entry.details["expected"]] == [
        (HOTEL, {"city": "Paris", "rooms": 2}),
        ("pay", {"eur": 10}),
    ]
    assert [(c.name, c.args) for c in entry.details["actual"]] == [(HOTEL, {"city": "Paris", "rooms": 3})]


INVALID = "invalid criterion for metric 'tool_parameter_match': "


@pytest.mark.parametrize(
    ("criterion", "message"),
    [
        (
            {"threshold": 0.5, "matchMode": "fuzzy"},
            f"{INVALID}match_mode: Input should be 'name_only', 'name_and_args' or",
        ),
        (
            {"threshold": 0.5, "default_strategy": "regex"},
            f"{INVALID}default_strategy: Input should be 'exact', 'casefold_exact'",
        ),
        (
            {"threshold": 0.5, "perArgStrategies": {"a": "near"}},
            f"{INVALID}per_arg_strategies.a: Input should be 'exact'",
        ),
        (
            {"threshold": 0.5, "numeric_tolerance": -1},
            f"{INVALID}numeric_tolerance: Input should be greater than or equal to 0",
        ),
    ],
)
def test_bad_criteria_are_clear_configuration_errors(criterion: Json, message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        evaluator(METRIC, criterion)
    assert str(caught.value).startswith(message)
