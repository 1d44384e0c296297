"""A misspelled ``OTEL_EVAL_*`` variable is said by ``from_env()``, not silently replaced by the default.

``OTEL_EVAL_JUDGE_BUGDET=1`` used to leave the judge with no budget at all, ``OTEL_EVAL_SAMPLE_RAT=0.01`` evaluated
every trace, and ``OTEL_EVAL_CONSLE=true`` printed nothing, each without a word.
"""

from __future__ import annotations

import logging

import pytest

from otel_eval import EvaluationSpanProcessor, environment_variables

LOGGER = "otel_eval.processor._settings"


def _said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


def test_each_misspelled_variable_is_named_with_the_closest_real_one(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    environ = {
        "OTEL_EVAL_JUDGE_BUGDET": "1",
        "OTEL_EVAL_CONSLE": "true",
        "OTEL_EVAL_SAMPLE_RATE": "1",  # a real one: not said
        "OTEL_EVAL_NO_SUCH_THING": "s3cret-value",
        "OTEL_EVAL_TEST_PYTHON": "python3",  # the test suite's own
    }
    EvaluationSpanProcessor.from_env(environ, sinks=[lambda records: None]).shutdown()
    said = _said(caplog)
    assert said == [
        "EvaluationSpanProcessor.from_env: OTEL_EVAL_CONSLE is set but is not an otel-eval variable: it is ignored "
        "(did you mean OTEL_EVAL_CONSOLE?)",
        "EvaluationSpanProcessor.from_env: OTEL_EVAL_JUDGE_BUGDET is set but is not an otel-eval variable: it is "
        "ignored (did you mean OTEL_EVAL_JUDGE_BUDGET or OTEL_EVAL_JUDGE_MODEL?)",
        "EvaluationSpanProcessor.from_env: OTEL_EVAL_NO_SUCH_THING is set but is not an otel-eval variable: it is "
        "ignored",
    ]
    assert "s3cret-value" not in " ".join(said)  # the value is never shown


def test_every_documented_variable_is_taken_without_a_word(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    known = [value for name, value in vars(environment_variables).items() if name.startswith("OTEL_EVAL_")]
    assert len(known) > 50
    from otel_eval._runtime.unknown_variables import unknown_variables

    assert unknown_variables(dict.fromkeys(known, "")) == []
    EvaluationSpanProcessor.from_env({"OTEL_EVAL_CONSOLE": "false"}, sinks=[lambda records: None]).shutdown()
    assert _said(caplog) == []
