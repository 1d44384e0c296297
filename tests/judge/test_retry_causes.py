"""How a judge failure that LiteLLM reports as a connection error is classified from the exceptions behind it: the
walk down its causes is bounded, safe on a cycle, and finds the provider's answer behind status-less wrappers."""

from __future__ import annotations

import itertools
import json

import httpx
import litellm
import openai
import pytest

from otel_eval.judge.retry import (
    JUDGE_BAD_RESPONSE,
    JUDGE_CONNECTION,
    JUDGE_NOT_CONFIGURED,
    JUDGE_RATE_LIMITED,
    Failure,
    classify,
)


def _status_error(status: int) -> openai.APIStatusError:
    request = httpx.Request("POST", "http://127.0.0.1:11434/api/chat")
    return openai.APIStatusError("provider answered", response=httpx.Response(status, request=request), body=None)


def _reported_as_connection_error(*chain: BaseException) -> Failure:
    """``classify`` of LiteLLM's ``APIConnectionError`` raised from ``chain`` (nearest first)."""
    for outer, inner in itertools.pairwise(chain):
        outer.__cause__ = inner
    error = litellm.APIConnectionError(message="OllamaException", llm_provider="ollama", model="llama3.1")
    error.__cause__ = chain[0] if chain else None
    return classify(error)


@pytest.mark.parametrize(
    ("status", "error_type"), [(404, JUDGE_NOT_CONFIGURED), (429, JUDGE_RATE_LIMITED), (503, JUDGE_CONNECTION)]
)
def test_the_providers_answer_one_or_two_links_down_is_what_it_answered(status: int, error_type: str) -> None:
    """A 5xx stays a connection error: LiteLLM reports its own client-side failures with that status too."""
    assert _reported_as_connection_error(_status_error(status)).error_type == error_type
    assert _reported_as_connection_error(RuntimeError("wrapped"), _status_error(status)).error_type == error_type


def test_the_nearest_status_wins() -> None:
    """LiteLLM's own 500 (a refused connection) in front of an older 429 it handled is not a rate limit."""
    nearest = _status_error(500)
    assert _reported_as_connection_error(nearest, _status_error(429)).error_type == JUDGE_CONNECTION


def test_a_body_that_is_not_json_behind_wrappers_is_a_bad_response() -> None:
    undecodable = json.JSONDecodeError("Expecting value", "<html>", 0)
    failure = _reported_as_connection_error(RuntimeError("a"), RuntimeError("b"), undecodable)
    assert failure.error_type == JUDGE_BAD_RESPONSE


def test_a_cycle_of_causes_ends_and_a_status_past_the_bound_is_not_looked_at() -> None:
    first, second = RuntimeError("first"), RuntimeError("second")
    second.__cause__ = first
    assert _reported_as_connection_error(first, second).error_type == JUDGE_CONNECTION  # first -> second -> first
    far = [RuntimeError(str(n)) for n in range(8)]
    assert _reported_as_connection_error(*far, _status_error(429)).error_type == JUDGE_CONNECTION
    assert _reported_as_connection_error(*far[1:], _status_error(429)).error_type == JUDGE_RATE_LIMITED
