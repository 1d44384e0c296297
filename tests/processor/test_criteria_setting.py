"""``OTEL_EVAL_CRITERIA`` that the processor cannot run stops ``from_env()`` with an error naming the variable, as a
value that does not parse does. Before, the error named only the metric (``unknown metric 'halucinations_v1'``,
``invalid criteria: ...``), leaving the user to guess where the criteria came from."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.errors import ConfigurationError


@pytest.mark.parametrize(
    ("criteria", "problem"),
    [
        (
            '{"criteria": {"halucinations_v1": 0.8}}',
            "criteria.halucinations_v1: unknown metric 'halucinations_v1'; did you mean hallucinations_v1?",
        ),
        ('{"safety_v1": "high"}', "invalid criteria: criteria.safety_v1: Input should be a valid number"),
        (
            '{"tool_call_count_v1": 0.5}',
            "criteria.tool_call_count_v1: metric 'tool_call_count_v1' is informational and takes no threshold",
        ),
        (
            '{"criteria": {"m": 0.5}, "custom_metrics": {"m": {"code_config": {"name": "no_such_module.m"}}}}',
            "custom metric 'm' (no_such_module.m): cannot import no_such_module",
        ),
    ],
)
def test_criteria_the_processor_cannot_run_name_the_variable(criteria: str, problem: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        EvaluationSpanProcessor.from_env({"OTEL_EVAL_CRITERIA": criteria}, sinks=[lambda records: None])
    assert str(raised.value).startswith(f"OTEL_EVAL_CRITERIA: {problem}")


def test_criteria_in_a_file_the_variable_names_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "criteria.json"
    path.write_text('{"criteria": {"halucinations_v1": 0.8}}')
    with pytest.raises(ConfigurationError) as raised:
        EvaluationSpanProcessor.from_env({"OTEL_EVAL_CRITERIA": str(path)}, sinks=[lambda records: None])
    assert str(raised.value) == (
        f"OTEL_EVAL_CRITERIA file {path}: criteria.halucinations_v1: unknown metric 'halucinations_v1'; "
        "did you mean hallucinations_v1?"
    )


@pytest.mark.parametrize(
    ("criteria", "problem"),
    [
        (
            {"halucinations_v1": 0.8},
            "criteria.halucinations_v1: unknown metric 'halucinations_v1'; did you mean hallucinations_v1?",
        ),
        (
            {"criteria": {"rubric_based_final_response_quality_v1": {"threshold": 0.5, "rubrics": [{"rubric_id": 3}]}}},
            "criteria.rubric_based_final_response_quality_v1: invalid criterion for metric "
            "'rubric_based_final_response_quality_v1': rubrics[0].rubric_id: Input should be a valid string",
        ),
        ({"safety_v1": "high"}, "invalid criteria: criteria.safety_v1: Input should be a valid number"),
    ],
)
def test_criteria_given_in_code_that_cannot_run_name_the_criterion(criteria: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        EvaluationSpanProcessor(criteria=criteria, sinks=[lambda records: None])
    assert str(raised.value).startswith(problem)


def test_criteria_given_in_code_replace_the_variable_and_are_checked_by_the_processor() -> None:
    environ = {"OTEL_EVAL_CRITERIA": '{"halucinations_v1": 0.8}'}
    processor = EvaluationSpanProcessor.from_env(environ, criteria={"safety_v1": 0.9}, sinks=[lambda records: None])
    processor.shutdown()


def test_settings_given_to_from_env_say_that_they_replace_the_environments(caplog: pytest.LogCaptureFixture) -> None:
    """``from_env(settings=...)`` passes the object on whole: ``OTEL_EVAL_EMIT`` and the rest are not used. It was
    silent, so a user who meant "the environment, plus this" lost every variable without a word."""
    caplog.set_level(logging.WARNING, logger="otel_eval.processor._settings")
    environ = {"OTEL_EVAL_EMIT": "events", "OTEL_EVAL_MAX_OPEN_TRACES": "10"}
    processor = EvaluationSpanProcessor.from_env(
        environ, settings=ProcessorSettings(sample_rate=0.5), sinks=[lambda records: None]
    )
    processor.shutdown()
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("from_env(settings=...): the settings given replace every setting read from" in m for m in said), said
    caplog.clear()
    EvaluationSpanProcessor.from_env(environ, sample_rate=0.5, sinks=[lambda records: None]).shutdown()
    assert not [r for r in caplog.records if "from_env(settings=...)" in r.getMessage()]  # keywords: merged, quiet
