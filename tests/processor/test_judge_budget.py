"""The judge budget in the processor (embedded mode): read from the environment with the rest of the judge's
configuration, a bad value stops start-up, a refused metric is NOT_EVALUATED while the others are scored."""

from __future__ import annotations

import pytest

from otel_eval import EvaluationSpanProcessor, semconv
from otel_eval.demo.run import run_demo
from otel_eval.errors import ConfigurationError
from otel_eval.metrics._judge_prompts_hallucinations import SEGMENTER_PROMPT
from otel_eval.model import EvalStatus
from tests.judge.fake_gemini import FakeGemini


def test_a_metric_out_of_budget_is_not_evaluated_and_the_others_are_scored(
    gemini_credentials: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EVAL_JUDGE_BUDGET", "hallucinations_v1=0,*=100")
    run = run_demo(None, flush_timeout_millis=60_000)
    assert run.flushed and run.invocations
    for invocation in run.invocations:
        records = {r.metric_name: r for r in run.records_of(invocation)}
        refused = records["hallucinations_v1"]
        assert (refused.label, refused.error_type) == ("not_evaluated", semconv.ERROR_TYPE_BUDGET_EXHAUSTED)
        assert records["safety_v1"].eval_status is EvalStatus.PASSED  # its own bucket ('*') covers it
        assert records["tool_call_count_v1"].eval_status is EvalStatus.INFORMATIONAL  # deterministic: always
    segmenter = SEGMENTER_PROMPT[:80]
    requests = gemini_credentials.generate_requests()
    assert requests and not any(segmenter in r.prompt for r in requests)


def test_a_bad_budget_stops_the_processor_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EVAL_JUDGE_BUDGET", "hallucinations_v1=lots")
    with pytest.raises(ConfigurationError, match=r"OTEL_EVAL_JUDGE_BUDGET='hallucinations_v1=lots': entry"):
        EvaluationSpanProcessor.from_env()


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_budget_naming_an_unknown_metric_stops_the_processor_at_start_up(
    monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    monkeypatch.setenv("OTEL_EVAL_JUDGE_BUDGET", "safety_v1=1,halucinations_v1=1")
    monkeypatch.setenv("OTEL_EVAL_ISOLATION", isolation)
    with pytest.raises(ConfigurationError, match=r"OTEL_EVAL_JUDGE_BUDGET: unknown metric 'halucinations_v1'; did"):
        EvaluationSpanProcessor.from_env()
