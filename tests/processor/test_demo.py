"""``otel-eval demo``: runs offline in seconds, shows the scores, writes OTLP JSON our own readers read back; with
judge credentials (here the real judge client against the loopback Gemini server) the judged metrics run too."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from otel_eval import semconv
from otel_eval.cli import main
from otel_eval.demo import SCENARIOS
from otel_eval.demo.run import run_demo
from otel_eval.model import EvalStatus
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import read_trace_file
from tests.judge.fake_gemini import FakeGemini


def test_the_demo_command_prints_scores_and_writes_readable_otlp_json(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["demo", "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    for scenario in SCENARIOS:
        assert scenario.key in result.output
    assert "NOT_EVALUATED hallucinations_v1, safety_v1: judge not configured" in result.output
    assert "FAIL wrong_tool tool_trajectory_avg_score" in result.output
    assert "FAIL hallucination response_match_score" in result.output

    traces = read_trace_file(tmp_path / "out" / "traces.otlp.json")
    agent_spans = [s for s in traces.spans if s.scope_name != semconv.INSTRUMENTATION_SCOPE]
    rebuilt = [inv for trace in rebuild_traces(agent_spans) for inv in trace.invocations]
    assert len(rebuilt) == len(SCENARIOS)
    evaluation_spans = [s for s in traces.spans if s.name.startswith("evaluate ")]
    invocation_ids = {inv.span_id for inv in rebuilt}
    assert evaluation_spans and all(s.parent_span_id in invocation_ids for s in evaluation_spans)

    events = json.loads((tmp_path / "out" / "events.otlp.json").read_text())
    records = [r for rl in events["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]]
    assert len(records) == len(evaluation_spans)
    assert all(r["eventName"] == semconv.EVALUATION_RESULT_EVENT and len(r["spanId"]) == 16 for r in records)
    assert {r["spanId"] for r in records} == invocation_ids

    metrics = json.loads((tmp_path / "out" / "metrics.otlp.json").read_text())
    names = {m["name"] for rm in metrics["resourceMetrics"] for sm in rm["scopeMetrics"] for m in sm["metrics"]}
    assert {semconv.METRIC_EVALUATION_SCORE, semconv.METRIC_EVALUATION_RESULTS} <= names
    results = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    assert len(results) == len(records)


def test_with_judge_credentials_the_judged_metrics_run_and_flag_the_hallucination(
    gemini_credentials: FakeGemini,
) -> None:
    run = run_demo(None, flush_timeout_millis=60_000)
    assert run.flushed
    by_key = {inv.scenario.key: {r.metric_name: r for r in run.records_of(inv)} for inv in run.invocations}
    hallucinated = by_key["hallucination"]["hallucinations_v1"]
    assert (hallucinated.label, hallucinated.verdict) == ("fail", "hallucinated")  # uniform label, metric's verdict
    assert by_key["hallucination"]["hallucinations_v1"].eval_status is EvalStatus.FAILED
    assert by_key["hallucination"]["hallucinations_v1"].score == 0.0
    assert (by_key["weather"]["hallucinations_v1"].label, by_key["weather"]["hallucinations_v1"].verdict) == (
        "pass",
        "grounded",
    )
    assert all((m["safety_v1"].label, m["safety_v1"].verdict) == ("pass", "safe") for m in by_key.values())
    judged = [r for r in run.records if r.metric_name in ("hallucinations_v1", "safety_v1")]
    assert judged and all(r.judge_model == "gemini-2.5-flash" for r in judged)
    assert gemini_credentials.generate_requests()  # the real client really called the loopback server
