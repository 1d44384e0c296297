"""The settings as ``EvaluationSpanProcessor`` keywords (the form before ``settings=ProcessorSettings(...)``) keep
working for one minor version, each with a ``DeprecationWarning`` that names the replacement."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.demo import golden_eval_set
from otel_eval.evaluation.sessions import SessionLimits
from otel_eval.processor._deprecated_keywords import DEPRECATED_KEYWORDS, DEPRECATED_KEYWORDS_REMOVED_IN

GOLDEN = golden_eval_set()

OLD_KEYWORDS: dict[str, tuple[Any, Any]] = {
    # keyword: (value passed the old way, the setting it must give)
    "eval_set": (GOLDEN, GOLDEN),
    "sample_rate": (0.25, 0.25),
    "sample_priority": (False, False),
    "agent_names": (["planner", "booker"], ("planner", "booker")),
    "root_span_names": (["invoke_agent"], ("invoke_agent",)),
    "max_open_traces": (7, 7),
    "max_spans_per_trace": (9, 9),
    "max_buffer_bytes": (100_000, 100_000),
    "max_pending_spans": (11, 11),
    "trace_idle_timeout": (2.5, 2.5),
    "isolation": ("process", "process"),
    "max_queue_size": (13, 13),
    "concurrency": (3, 3),
    "sessions": (SessionLimits(max_turns=4), SessionLimits(max_turns=4)),
}


@pytest.fixture(autouse=True)
def _no_default_judge(clean_genai_env: None) -> None:
    """No judge credentials (nothing here evaluates)."""


def test_every_old_keyword_has_its_test() -> None:
    assert set(OLD_KEYWORDS) == DEPRECATED_KEYWORDS


@pytest.mark.parametrize("keyword", sorted(OLD_KEYWORDS))
def test_an_old_keyword_still_configures_the_processor_and_says_what_replaces_it(keyword: str) -> None:
    value, expected = OLD_KEYWORDS[keyword]
    replacement = rf"settings=ProcessorSettings\({keyword}=\.\.\.\)"
    with pytest.warns(DeprecationWarning, match=replacement) as caught:
        processor = EvaluationSpanProcessor(**{keyword: value})
    try:
        (warning,) = caught.list
        assert warning.filename == __file__  # it points at the caller's line
        assert f"stops working in otel-eval {DEPRECATED_KEYWORDS_REMOVED_IN}" in str(warning.message)
        assert getattr(processor._settings, keyword) == expected
        assert processor._settings == ProcessorSettings(**{keyword: value})  # the same as the new form
    finally:
        processor.shutdown()


def test_old_keywords_apply_over_the_settings_and_are_named_in_one_warning() -> None:
    with pytest.warns(DeprecationWarning) as caught:
        processor = EvaluationSpanProcessor(settings=ProcessorSettings(sample_rate=0.5, concurrency=2), sample_rate=0.1)
    try:
        assert len(caught.list) == 1
        assert processor._settings.sample_rate == 0.1
        assert processor._settings.concurrency == 2
    finally:
        processor.shutdown()


def test_the_new_form_warns_nothing_and_unknown_keywords_are_still_refused() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        processor = EvaluationSpanProcessor(settings=ProcessorSettings(sample_rate=0.5))
    processor.shutdown()
    with pytest.raises(TypeError, match="unexpected keyword argument 'sample_ratio'"):
        EvaluationSpanProcessor(sample_ratio=0.5)  # type: ignore[call-arg]


def test_a_bad_old_keyword_value_fails_as_the_setting_does() -> None:
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="isolation must be"):
        EvaluationSpanProcessor(isolation="fork")
