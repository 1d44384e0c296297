"""Judge replies are parsed exactly as ADK 2.13 parses them, in linear time.

Property tests compare every reply parser with ADK's own function (and the scanners with the regexes they stand for)
on generated near-miss replies: verdict keys, runs of spaces and newlines, quotes, brackets, colons, markers in other
cases, Unicode whitespace and case-folding characters. Whitespace runs stay short there so that ADK's regexes, which
backtrack in O(n^4) on them, finish. The pathological replies of issue 39 then run at a megabyte under the test's
timeout (linear time, not a speed target): ADK's regexes would need years for them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_eval.metrics._judge_labels import (
    _IS_INVALID_FIELD,
    _IS_VALID_FIELD,
    _USER_SIM_FIELD,
    Label,
    parse_critique,
    parse_is_valid,
)
from otel_eval.metrics._judge_rubrics import parse_rubric_responses
from otel_eval.metrics._reply_scan import line_fields, marked_blocks, quoted_or_bracketed, tagged
from otel_eval.metrics._star_chain import StarChain
from otel_eval.metrics.final_response_match_v2 import _reasoning
from otel_eval.metrics.hallucinations_v1 import parse_sentences, parse_validation_results

ADK_IS_VALID = r'"is_the_agent_response_valid":\s*\[*[\n\s]*"*([^"^\]^\s]*)"*[\n\s]*\]*\s*[,\n\}]'
ADK_IS_INVALID = r'"is_the_agent_response_invalid":\s*\[*[\n\s]*"*([^"^\]^\s]*)"*[\n\s]*\]*\s*[,\n\}]'
ADK_USER_SIM = r'"is_valid":\s*\[*[\n\s]*"*([^"\]]*)"*[\n\s]*\]*\s*[,\n\}]'
ADK_VALIDATION = re.compile(
    r"sentence:(.*?)\nlabel:(.*?)\nrationale:(.*?)\nsupporting_excerpt:(.*?)\ncontradicting_excerpt:(.*?)(?=\nsentence:|\Z)",
    re.DOTALL | re.IGNORECASE,
)
REASONING = re.compile(r'"reasoning"\s*:\s*(\[.*?\]|".*?(?<!\\)")', re.DOTALL)

# Characters where Python's re differs from the naive reading: Unicode whitespace (\s), line separators that are not
# "\n" (for ^ and $ and .), characters that match ASCII letters case-insensitively (ſ, the Kelvin sign, İ, ı).
ODD = ["\u00a0", "\u2028", "\u2029", "\x85", "\x1c", "\x0b", "\x0c", "\r", "\u3000", "\u017f", "\u212a", "\u0130", "ı"]
WHITESPACE = [" ", "  ", "\t", "\n", "\n\n", " \n", "\r\n", "\u00a0", "\u2028"]


def replies(*fragments: str, max_size: int = 24) -> st.SearchStrategy[str]:
    """Replies glued from ``fragments``, whitespace runs, odd characters and short random text."""
    pieces = st.one_of(
        st.sampled_from(list(fragments)),
        st.sampled_from(WHITESPACE),
        st.sampled_from(ODD),
        st.text(max_size=3),
    )
    return st.lists(pieces, max_size=max_size).map("".join)


def fields(
    keys: tuple[str, ...], tail: tuple[str, ...], noise: st.SearchStrategy[str], *, tail_size: int = 8
) -> st.SearchStrategy[str]:
    """Near-miss field replies: a few (key + tokens of what may follow it) between bits of ``noise``."""
    field = st.tuples(st.sampled_from(keys), st.lists(st.sampled_from(tail), max_size=tail_size))
    keyed = field.map(lambda pair: pair[0] + "".join(pair[1]))
    return st.lists(st.one_of(keyed, noise), min_size=1, max_size=4).map("".join)


VERDICT_KEYS = ('"is_the_agent_response_valid":', '"is_the_agent_response_invalid":', '"is_valid":')
VERDICT_TAIL = (
    " ",
    "  ",
    "\n",
    "\t",
    "\r",
    "\u00a0",
    "\u2028",
    "[",
    "]",
    '"',
    ",",
    "}",
    ":",
    "^",
    "x",
    "valid",
    "invalid",
    "true",
    "false",
    "True",
    "almost",
    "partially valid",
    "partially_valid",
)
VERDICT_NOISE = replies(*VERDICT_KEYS, *VERDICT_TAIL, max_size=4)
WELL_FORMED_VERDICTS = st.tuples(
    VERDICT_NOISE,
    st.sampled_from(VERDICT_KEYS),
    st.sampled_from(["", " ", "\n  ", "  "]),
    st.sampled_from(["", "[", "[ "]),
    st.sampled_from(["", '"']),
    st.sampled_from(
        ["valid", "invalid", "true", "false", "Valid", "almost", "partially valid", "unknown", "valid,", ""]
    ),
    st.sampled_from(["", '"']),
    st.sampled_from(["", " ", "\n"]),
    st.sampled_from(["", "]"]),
    st.sampled_from([",", "}", "\n", "", " }", "x"]),
    VERDICT_NOISE,
).map("".join)
VERDICT_REPLIES = st.one_of(fields(VERDICT_KEYS, VERDICT_TAIL, VERDICT_NOISE), WELL_FORMED_VERDICTS)

RUBRIC_LINE = st.tuples(
    st.sampled_from(["", "", " ", "  ", "\t", "\u00a0", "\n", "* ", "\u2028"]),
    st.sampled_from(["ID: ", "Property: ", "Rationale: ", "Verdict: ", "ID:", "id: ", "Verdict:", ""]),
    st.sampled_from(["1", "r2", "", "yes", "no", "Yes.", "NO", "unsure", "The reply is polite.", " x ", "\u2028y"]),
    st.sampled_from(["\n", "\n", "\n\n", "\r\n", " \n", "\u2028", "\x85", ""]),
).map("".join)
RUBRIC_BLOCK = st.lists(st.booleans(), min_size=4, max_size=4).map(
    lambda keep: "".join(
        line
        for line, kept in zip(
            ("ID: r1\n", "Property: p\n", "Rationale: because\n", "Verdict: yes\n\n"), keep, strict=True
        )
        if kept
    )
)
RUBRIC_REPLIES = st.lists(st.one_of(RUBRIC_LINE, RUBRIC_BLOCK), max_size=14).map("".join)

VALIDATION_FIELD = st.tuples(
    st.sampled_from(
        [
            *("sentence:", "label:", "rationale:", "supporting_excerpt:", "contradicting_excerpt:"),
            *("Sentence:", "LABEL:", "\u017fentence:", "rat\u0130onale:", "Contradicting_Excerpt:"),
        ]
    ),
    st.sampled_from([" s", " supported", " null", " NULL", "", " x\ny", " unsupported "]),
).map("".join)
VALIDATION_BLOCK = st.lists(st.booleans(), min_size=5, max_size=5).map(
    lambda keep: "\n".join(
        name + value
        for name, value, kept in zip(
            ("sentence:", "label:", "rationale:", "supporting_excerpt:", "contradicting_excerpt:"),
            (" It rains.", " supported", " r", " null", " none"),
            keep,
            strict=True,
        )
        if kept
    )
)
VALIDATION_REPLIES = st.lists(
    st.tuples(st.one_of(VALIDATION_BLOCK, VALIDATION_FIELD), st.sampled_from(["\n", "\n\n", "", " ", "\r\n"])).map(
        "".join
    ),
    max_size=10,
).map("".join)
SEGMENTER_REPLIES = st.lists(
    st.sampled_from(["<sentence>", "</sentence>", "It rains.", "\n", "<sentence", "sentence>", "<", " "]), max_size=12
).map("".join)
SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(VERDICT_REPLIES)
def test_verdict_labels_equal_adks(reply: str) -> None:
    from google.adk.evaluation.final_response_match_v2 import _parse_critique
    from google.adk.evaluation.simulation.per_turn_user_simulator_quality_v1 import _parse_llm_response

    assert parse_critique(reply).name == _parse_critique(reply).name
    assert parse_is_valid(reply).name == _parse_llm_response(reply).name


@SETTINGS
@given(VERDICT_REPLIES)
def test_verdict_fields_capture_what_adks_regexes_capture(reply: str) -> None:
    for chain, pattern in (
        (_IS_VALID_FIELD, ADK_IS_VALID),
        (_IS_INVALID_FIELD, ADK_IS_INVALID),
        (_USER_SIM_FIELD, ADK_USER_SIM),
    ):
        assert chain.pattern == pattern
        match = re.search(pattern, reply)
        assert chain.search(reply) == (match.group(1) if match else None)


@SETTINGS
@given(
    key=st.sampled_from(["k", "ab"]),
    stars=st.lists(
        st.sampled_from([r"\s", r"\n", "a", r"[ab]", r"[^b]", r"[^\s]", r"\S", ","]), min_size=1, max_size=5
    ),
    end=st.sampled_from([r"[,\n]", "b", r"\s", "a"]),
    data=st.data(),
)
def test_star_chains_of_any_classes_answer_as_re(key: str, stars: list[str], end: str, data: Any) -> None:
    """The engine itself, on chains other than ADK's: any classes, overlapping or not."""
    chain = StarChain(key=key, stars=tuple(stars), end=end, group=data.draw(st.integers(0, len(stars) - 1)))
    text = data.draw(st.lists(st.sampled_from(["k", "ab", "a", "b", " ", "\n", ",", "x"]), max_size=16).map("".join))
    match = re.search(chain.pattern, text)
    assert chain.search(text) == (match.group(1) if match else None)


@SETTINGS
@given(st.one_of(RUBRIC_REPLIES, replies("ID: ", "Property: ", "Rationale: ", "Verdict: ", "yes", "no")))
def test_rubric_blocks_equal_adks(reply: str) -> None:
    from google.adk.evaluation.rubric_based_evaluator import DefaultAutoRaterResponseParser

    ours = [(r.rubric_id, r.property_text, r.rationale, r.score) for r in parse_rubric_responses(reply)]
    theirs = [
        (r.rubric_id, r.property_text, r.rationale, r.score) for r in DefaultAutoRaterResponseParser().parse(reply)
    ]
    assert ours == theirs
    for key in ("ID: ", "Property: "):
        expected = [(m.start(), m.group(1)) for m in re.finditer(rf"(?m)^\s*{key}(.*)$", reply)]
        assert line_fields(reply, key) == expected


@SETTINGS
@given(st.one_of(VALIDATION_REPLIES, SEGMENTER_REPLIES, replies("<sentence>", "</sentence>", "sentence:", "\nlabel:")))
def test_segmenter_and_validator_parses_equal_adks(reply: str) -> None:
    from google.adk.evaluation.hallucinations_v1 import _parse_sentences, _parse_validation_results

    assert parse_sentences(reply) == _parse_sentences(reply)
    assert parse_validation_results(reply) == _parse_validation_results(reply)
    markers = ("sentence:", "\nlabel:", "\nrationale:", "\nsupporting_excerpt:", "\ncontradicting_excerpt:")
    assert marked_blocks(reply, markers, "\nsentence:") == [m.groups() for m in ADK_VALIDATION.finditer(reply)]
    assert tagged(reply, "<sentence>", "</sentence>") == re.findall(r"<sentence>(.*?)</sentence>", reply, re.DOTALL)


@SETTINGS
@given(replies('"reasoning"', ":", "[", "]", '"', "\\", '\\"', '["a", "b"]', '"why"', max_size=20))
def test_reasoning_field_is_the_regexes(reply: str) -> None:
    match = REASONING.search(reply)
    assert quoted_or_bracketed(reply, '"reasoning"') == (match.group(1) if match else None)
    assert (_reasoning(reply) is None) == (match is None)


# --- the pathological replies, at a megabyte ----------------------------------------------------------------------

MEGABYTE = 1 << 20

PATHOLOGICAL: dict[str, tuple[Callable[[int], str], int]] = {
    # shape: (reply for a run length n, characters per unit of n)
    "key, spaces, a non-closing character": (lambda n: '"is_the_agent_response_valid":' + " " * n + "x", 1),
    "invalid key, spaces, a non-closing character": (lambda n: '"is_the_agent_response_invalid":' + " " * n + "x", 1),
    "user-simulator key, spaces, a quote": (lambda n: '"is_valid":' + " " * n + '"', 1),
    "key, spaces, a newline far away": (lambda n: '"is_valid": [' + " " * n + "\n" + " " * n + "]", 2),
    "keys repeated with spaces": (lambda n: ('"is_valid":' + " " * 20) * n, 31),
    "line starts in one whitespace run": (lambda n: "\n" * n + "Rationale: none", 1),
    "spaces and newlines interleaved": (lambda n: " \n" * n + "ID:", 2),
    "ids and properties interleaved": (lambda n: "ID: a\nProperty: b\n" * n, 18),
    "sentence tags never closed": (lambda n: "<sentence>" * n, 10),
    "validator blocks never completed": (lambda n: "sentence: s\nlabel: supported\n" * n, 29),
    "reasoning lists never closed": (lambda n: '"reasoning": [' * n, 14),
    "reasoning strings never closed": (lambda n: '"reasoning": "\\"' * n, 16),
}


def _parsed(reply: str) -> tuple[Any, ...]:
    """What every parser of a judged metric reads from ``reply``."""
    rubrics = [(r.rubric_id, r.property_text, r.rationale, r.score) for r in parse_rubric_responses(reply)]
    return (
        parse_critique(reply),
        parse_is_valid(reply),
        rubrics,
        parse_sentences(reply),
        parse_validation_results(reply),
        quoted_or_bracketed(reply, '"reasoning"'),
    )


def _parsed_by_adk(reply: str) -> tuple[Any, ...]:
    from google.adk.evaluation.final_response_match_v2 import _parse_critique
    from google.adk.evaluation.hallucinations_v1 import _parse_sentences, _parse_validation_results
    from google.adk.evaluation.rubric_based_evaluator import DefaultAutoRaterResponseParser
    from google.adk.evaluation.simulation.per_turn_user_simulator_quality_v1 import _parse_llm_response

    rubrics = [
        (r.rubric_id, r.property_text, r.rationale, r.score) for r in DefaultAutoRaterResponseParser().parse(reply)
    ]
    match = REASONING.search(reply)
    return (
        Label[_parse_critique(reply).name],
        Label[_parse_llm_response(reply).name],
        rubrics,
        _parse_sentences(reply),
        _parse_validation_results(reply),
        match.group(1) if match else None,  # final_response_match_v2's explanation: our regex, not ADK's
    )


@pytest.mark.parametrize("shape", list(PATHOLOGICAL))
def test_small_pathological_replies_equal_adk(shape: str) -> None:
    """The shapes with runs of 40, where ADK's regexes still finish: every parser answers as ADK."""
    build, _ = PATHOLOGICAL[shape]
    assert _parsed(build(40)) == _parsed_by_adk(build(40))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape", list(PATHOLOGICAL))
def test_pathological_replies_of_a_megabyte_are_parsed_in_linear_time(shape: str) -> None:
    """A megabyte of each shape (ADK's regexes would take years) parses under the test's timeout, to the answer it
    has at 40 (the shapes answer alike at every length; rubric blocks, which do not, count alike too: none)."""
    build, unit = PATHOLOGICAL[shape]
    reply = build(MEGABYTE // unit)
    assert len(reply) >= MEGABYTE - 64
    assert _parsed(reply) == _parsed(build(40))
