"""response_match_score: parity with ADK 2.13's RougeEvaluator (and its Unicode-aware tokenizer) on generated text."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator, _UnicodeAwareTokenizer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from otel_eval.metrics._text import UnicodeAwareTokenizer, rouge1_fmeasure
from otel_eval.model import EvalStatus
from tests.metrics._factories import Json, adk, evaluate, evaluator, invocation, scores, statuses, traced

METRIC = "response_match_score"

WORDS = [
    "It",
    "is",
    "sunny",
    "in",
    "Paris",
    "today",
    "running",
    "runs",
    "dogs",
    "dog",
    "Weather",
    "the",
    "café",
    "naïve",
    "東京",
    "は",
    "晴れ",
    "です",
    "서울",
    "날씨",
    "สวัสดีครับ",
    "ภาษาไทย",
    "ພາສາລາວ",
    "ភាសាខ្មែរ",
    "မြန်မာ",
    "नमस्ते",
    "Ｆｕｌｌｗｉｄｔｈ",
    "ﬁne",
    "İstanbul",
    "ß",
    "42",
    "3.5",
    "x_y",
    "e-mail",
    "Ω",
    "٣",
    "🙂",
]
SEPARATORS = [" ", "  ", ", ", ". ", "\n", "!", "—", "", "\u200b"]


@st.composite
def texts(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 9)) == 0:  # now and then arbitrary unicode, including empty
        return draw(st.text(max_size=30))
    words = draw(st.lists(st.sampled_from(WORDS), max_size=12))
    return "".join(word + draw(st.sampled_from(SEPARATORS)) for word in words)


@st.composite
def responses(draw: st.DrawFn) -> Json | None:
    """A final_response: None, no parts, or text parts (some thoughts, some non-text)."""
    kind = draw(st.sampled_from(["none", "empty", "parts", "parts", "parts"]))
    if kind == "none":
        return None
    if kind == "empty":
        return {"role": "model", "parts": []}
    parts: list[Json] = []
    for _ in range(draw(st.integers(1, 3))):
        part: Json = {"text": draw(texts())}
        if draw(st.integers(0, 4)) == 0:
            part["thought"] = True
        parts.append(part)
    if draw(st.booleans()):
        parts.append({"function_call": {"name": "f", "args": {}}})
    return {"role": "model", "parts": parts}


def _invocation(response: Json | None) -> Json:
    data = invocation(text=None)
    if response is not None:
        data["final_response"] = response
    return data


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[Json], list[Json], float]:
    count = draw(st.integers(1, 3))
    actual = [_invocation(draw(responses())) for _ in range(count)]
    expected = [_invocation(draw(responses())) for _ in range(count)]
    return actual, expected, draw(st.sampled_from([0.0, 0.5, 0.8, 0.9090909090909091, 1.0]))


def adk_result(actual: list[Json], expected: list[Json], threshold: float) -> Any:
    evaluator_ = RougeEvaluator(AdkEvalMetric(metric_name=METRIC, threshold=threshold))
    return evaluator_.evaluate_invocations([adk(a) for a in actual], [adk(e) for e in expected])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_scores_and_statuses_equal_adk(case: tuple[list[Json], list[Json], float]) -> None:
    actual, expected, threshold = case
    theirs = adk_result(actual, expected, threshold)
    result = evaluate(evaluator(METRIC, threshold), actual, expected)
    assert result.overall_score == theirs.overall_score
    assert result.overall_eval_status.name == theirs.overall_eval_status.name
    assert scores(result) == [r.score for r in theirs.per_invocation_results]
    assert statuses(result) == [r.eval_status.name for r in theirs.per_invocation_results]


@settings(max_examples=200, deadline=None)
@given(st.one_of(texts(), st.text()))
def test_tokens_equal_adk_tokenizer(text: str) -> None:
    assert UnicodeAwareTokenizer().tokenize(text) == _UnicodeAwareTokenizer(use_stemmer=True).tokenize(text)


@settings(max_examples=200, deadline=None)
@given(texts(), texts())
def test_unigram_arithmetic_equals_rouge_scorer(candidate: str, reference: str) -> None:
    scorer = rouge_scorer.RougeScorer(["rouge1"], tokenizer=UnicodeAwareTokenizer())
    assert rouge1_fmeasure(candidate, reference) == scorer.score(reference, candidate)["rouge1"].fmeasure


@pytest.mark.parametrize(
    ("candidate", "reference", "score"),
    [
        ("It is sunny in Paris.", "It is sunny in Paris today.", 10 / 11),  # observed on ADK 1.39 and 2.13
        ("run dog", "Running dogs", 1.0),  # Porter stemming of ASCII words
        ("東京は晴れ", "東京は晴れです", 2 * 5 / 12),  # CJK scores per character
        ("", "anything", 0.0),
        ("anything", "", 0.0),
        ("café", "cafe", 0.0),  # non-ASCII words are kept whole, unstemmed
    ],
)
def test_hand_worked_scores(candidate: str, reference: str, score: float) -> None:
    assert rouge1_fmeasure(candidate, reference) == pytest.approx(score, abs=1e-12)


def test_default_threshold_when_requested_by_name() -> None:
    metric = evaluator(METRIC)
    assert metric.threshold == 0.8
    result = evaluate(
        metric, [invocation(text="It is sunny in Paris.")], [invocation(text="It is sunny in Paris today.")]
    )
    assert result.overall_eval_status is EvalStatus.PASSED


def test_no_reference_and_length_mismatch_are_not_evaluated() -> None:
    no_reference = evaluate(evaluator(METRIC), [invocation()], None)
    assert no_reference.overall_eval_status is EvalStatus.NOT_EVALUATED
    assert no_reference.error_type == "no_reference"
    mismatch = evaluate(evaluator(METRIC), [invocation()], [invocation(), invocation()])
    assert mismatch.overall_eval_status is EvalStatus.NOT_EVALUATED
    assert mismatch.error_type == "invocation_count_mismatch"


def test_uncaptured_response_is_not_evaluated_not_zero() -> None:
    actual = [traced(invocation(text=None), content_captured=False), invocation(text="same words")]
    expected = [invocation(text="hello"), invocation(text="same words")]
    result = evaluate(evaluator(METRIC), actual, expected)
    assert scores(result) == [None, 1.0]
    assert statuses(result) == ["NOT_EVALUATED", "PASSED"]
    assert result.overall_score == 1.0  # the mean of the evaluated invocations


def test_a_threshold_outside_the_range_is_accepted_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        beyond = evaluator(METRIC, 1.2)  # ADK's threshold is an unbounded float
    assert beyond.threshold == 1.2
    assert "threshold 1.2 of metric 'response_match_score' is above its range [0, 1]: it can never pass" in caplog.text
