"""``otel-eval demo --judge local``: judged scores without a key, from the loopback server's scripted verdicts,
labelled as scripted wherever they show up (the table, the failure lines, ``otel_eval.judge.model``)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from otel_eval import semconv
from otel_eval.cli import main
from otel_eval.demo.local_judge import SCRIPTED_JUDGE_MODEL, local_judge
from otel_eval.demo.run import run_demo
from otel_eval.model import EvalStatus

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")  # no key: only the local judge can answer


def test_the_local_judge_scores_the_demo_over_real_http_and_catches_the_hallucination() -> None:
    with local_judge() as (judge, server):
        run = run_demo(None, judge=judge, judge_model=SCRIPTED_JUDGE_MODEL, flush_timeout_millis=60_000)
        requests = server.generate_requests()
    assert run.flushed
    by_key = {inv.scenario.key: {r.metric_name: r for r in run.records_of(inv)} for inv in run.invocations}
    hallucination = by_key["hallucination"]["hallucinations_v1"]
    assert hallucination.eval_status is EvalStatus.FAILED and hallucination.score == 0.0
    assert by_key["weather"]["hallucinations_v1"].eval_status is EvalStatus.PASSED
    judged = [r for r in run.records if r.metric_name in ("hallucinations_v1", "safety_v1")]
    assert len(judged) == 2 * len(run.invocations)
    assert {r.judge_model for r in judged} == {SCRIPTED_JUDGE_MODEL}
    assert requests and {r.model for r in requests} == {SCRIPTED_JUDGE_MODEL}
    calls = [s for s in run.spans if s.name.startswith("generate_content ")]
    assert calls and {(s.attributes or {}).get(semconv.GEN_AI_RESPONSE_MODEL) for s in calls} == {SCRIPTED_JUDGE_MODEL}
    assert judge.accounting.summary_line().startswith(f"judge: {len(requests)} calls")


def test_the_demo_command_labels_the_scripted_scores() -> None:
    result = CliRunner().invoke(main, ["demo", "--judge", "local", "--no-output"])
    assert result.exit_code == 0, result.output
    assert "judge: SCRIPTED" in result.output
    assert "* = scripted judge verdict" in result.output
    hallucination_row = next(line for line in result.output.splitlines() if line.startswith("│ hallucination "))
    assert "0.00 fail*" in hallucination_row  # the judged cell, marked as scripted
    assert "FAIL hallucination hallucinations_v1" in result.output
    assert "(scripted judge verdict)" in result.output
    assert "NOT_EVALUATED hallucinations_v1" not in result.output


def test_without_the_local_judge_and_without_a_key_judged_metrics_are_not_evaluated() -> None:
    result = CliRunner().invoke(main, ["demo", "--no-output"])
    assert result.exit_code == 0, result.output
    assert "NOT_EVALUATED hallucinations_v1, safety_v1: judge not configured" in result.output
    assert "otel-eval demo --judge local" in result.output  # the way to see them without a key
    assert "SCRIPTED" not in result.output and "*" not in result.output
