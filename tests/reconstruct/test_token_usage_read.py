"""The token counts read with the lean rule (an int under the current name taken as it is; neither name there: None)
equal the general rule (:func:`first_int` over the current name, then the deprecated one), whatever the attributes
hold; and their sum over model calls equals summing each count's reported values."""

from __future__ import annotations

import itertools
import math
from typing import Any

from otel_eval import semconv
from otel_eval.model import TokenUsage
from otel_eval.reconstruct._token_usage import Usage, sum_token_counts, usage_by_first_int, usage_from

_VALUES: list[Any] = [None, 0, 7, -3, 2.0, 2.5, math.inf, math.nan, True, False, "12", "", [1], {"a": 1}, 10**30]
"""Absent (None: the key left out), ints, floats (finite, not), bools, strings, containers."""


def _attributes(current: Any, legacy: Any, present_none: bool) -> dict[str, Any]:
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat"}
    for key, value in ((semconv.GEN_AI_USAGE_INPUT_TOKENS, current), (semconv.GEN_AI_USAGE_PROMPT_TOKENS, legacy)):
        if value is not None or present_none:
            attributes[key] = value
    return attributes


def test_usage_equals_first_int_on_every_value_pair() -> None:
    for current, legacy, present_none in itertools.product(_VALUES, _VALUES, (False, True)):
        attributes = _attributes(current, legacy, present_none)
        lean, general = usage_from(attributes), usage_by_first_int(attributes)
        assert repr(lean) == repr(general), attributes  # repr: nan and types compared too
        assert type(lean.input_tokens) is type(general.input_tokens)


def test_usage_every_count_under_both_names() -> None:
    attributes = {
        semconv.GEN_AI_USAGE_INPUT_TOKENS: 1,
        semconv.GEN_AI_USAGE_COMPLETION_TOKENS: 2.0,
        semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: "x",
        semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS_LEGACY: 3,
        semconv.GEN_AI_USAGE_REASONING_TOKENS_LEGACY: 4,
    }
    assert usage_from(attributes) == usage_by_first_int(attributes) == Usage(1, 2, 3, 4)
    assert usage_from({}) == Usage()


def test_sum_of_counts_equals_the_sum_of_each_reported_count() -> None:
    usages = [Usage(1, None, None, 2), Usage(None, None, None, 3), Usage(4, None, 0, None)]
    total = sum_token_counts(usages)
    assert total == TokenUsage(input_tokens=5, output_tokens=None, cached_input_tokens=0, reasoning_tokens=5)
    assert sum_token_counts([]) == TokenUsage()
    assert sum_token_counts([TokenUsage(input_tokens=2), Usage(3)]).input_tokens == 5
