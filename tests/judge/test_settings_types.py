"""``JudgeSettings`` (and ``JudgeClient.from_env(**overrides)``, the API reference's entry point) given a value of
the wrong type in code says which setting and what it takes, as ``ProcessorSettings`` does. It used to fail in its
range check with a bare ``TypeError: '>=' not supported between instances of 'str' and 'int'``."""

from __future__ import annotations

from typing import Any

import pytest

from otel_eval.errors import ConfigurationError
from otel_eval.judge import JudgeClient, JudgeSettings


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"max_concurrency": "4"}, "judge setting max_concurrency must be an integer, got '4'"),
        ({"timeout_seconds": "30"}, "judge setting timeout_seconds must be a number, got '30'"),
        ({"num_samples": 2.5}, "judge setting num_samples must be an integer or None, got 2.5"),
        ({"cache_size": True}, "judge setting cache_size must be an integer, got True"),
    ],
)
def test_a_value_of_the_wrong_type_names_the_setting(override: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        JudgeClient.from_env(**override)
    assert str(raised.value) == message


def test_numbers_of_the_right_type_are_taken() -> None:
    settings = JudgeSettings(timeout_seconds=5, max_concurrency=2, num_samples=None)
    assert (settings.timeout_seconds, settings.max_concurrency) == (5, 2)
    with pytest.raises(ConfigurationError, match=r"max_concurrency=0 is out of range"):
        JudgeSettings(max_concurrency=0)
