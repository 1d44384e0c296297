"""The learned output-token estimate: starts at the allowance, leaves it only after most of a window of smaller
replies, rises after a few larger ones, never drops below its floor, and stays bounded in models."""

from __future__ import annotations

import threading

import pytest

from otel_eval.judge.output_estimate import FLOOR_TOKENS, OUTPUT_TOKEN_ALLOWANCE, OutputEstimates


def test_it_falls_to_the_replies_slowly_and_rises_quickly() -> None:
    estimates = OutputEstimates()
    seen = []
    for _ in range(29):
        estimates.observe("gemini-2.5-flash", 100)
        seen.append(estimates.tokens("gemini-2.5-flash"))
    assert seen == [OUTPUT_TOKEN_ALLOWANCE] * 28 + [100]  # 29 of the last 32 below the allowance
    for _ in range(3):
        estimates.observe("gemini-2.5-flash", 3000)
    assert estimates.tokens("gemini-2.5-flash") == 100  # 3 long replies in 32: below the 90th percentile
    estimates.observe("models/gemini-2.5-flash", 3000)  # same model, however it is spelt
    assert estimates.tokens("gemini-2.5-flash") == 3000  # the 4th: the estimate covers them
    assert estimates.tokens("gemini-2.5-pro") == OUTPUT_TOKEN_ALLOWANCE  # per model


def test_it_never_goes_below_the_floor_and_a_zero_window_never_learns() -> None:
    estimates = OutputEstimates()
    for _ in range(40):
        estimates.observe("judge", 0)  # blocked or empty replies
    assert estimates.tokens("judge") == FLOOR_TOKENS
    fixed = OutputEstimates(window=0)
    for _ in range(40):
        fixed.observe("judge", 10)
    assert fixed.tokens("judge") == OUTPUT_TOKEN_ALLOWANCE
    with pytest.raises(ValueError, match="quantile"):
        OutputEstimates(quantile=0.0)


def test_the_models_learned_are_bounded() -> None:
    estimates = OutputEstimates(window=1, max_models=3)
    for index in range(5):
        estimates.observe(f"judge-{index}", 200)
    assert [estimates.tokens(f"judge-{index}") for index in range(5)] == [200, 200, 200, 1024, 1024]


def test_threads_observing_and_reading_at_once_see_only_observed_values() -> None:
    estimates = OutputEstimates()
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []
    read: set[int] = set()

    def observe(size: int) -> None:
        barrier.wait()
        try:
            for _ in range(500):
                estimates.observe("judge", size)
                read.add(estimates.tokens("judge"))
        except BaseException as exc:  # a window changed while being sorted would raise here
            errors.append(exc)

    threads = [threading.Thread(target=observe, args=(300 if i < 7 else 5000,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert read <= {OUTPUT_TOKEN_ALLOWANCE, 300, 5000} and estimates.tokens("judge") in (300, 5000)
