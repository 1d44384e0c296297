"""The judge's one-line usage summary reads as English for every count."""

from __future__ import annotations

from otel_eval.judge.accounting import JudgeAccounting


def test_the_summary_line_counts_in_the_singular_and_the_plural() -> None:
    accounting = JudgeAccounting()
    accounting.record("safety_v1", calls=1, cache_hits=1, retries=1, failures=1, input_tokens=1200, output_tokens=30)
    assert accounting.summary_line() == (
        "judge: 1 call, 1 cache hit, 1 retry, 1 failure, 1,230 tokens (1,200 in, 30 out), $0.0000"
    )
    accounting.record("safety_v1", calls=1, cache_hits=1, retries=1, failures=1, unpriced_calls=2)
    assert accounting.summary_line().startswith("judge: 2 calls, 2 cache hits, 2 retries, 2 failures, ")
    assert "(+2 calls of unpriced models)" in accounting.summary_line()
