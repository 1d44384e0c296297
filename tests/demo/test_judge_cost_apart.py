"""The judge's cost kept apart from the agent's: the demo's agent with the embedded processor and the real judge
client over HTTP to the loopback judge. By default each agent trace's token total (what a backend sums per trace)
is the agent's own; with ``own_trace=False`` the judge's calls are back in the agent's trace, as children of the
``evaluate`` spans."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from otel_eval import semconv
from otel_eval.cli import main
from otel_eval.demo.gemini_server import LoopbackGemini
from otel_eval.demo.local_judge import SCRIPTED_JUDGE_MODEL, scripted_verdicts
from otel_eval.demo.run import DemoRun, run_demo, write_output
from otel_eval.judge import JudgeClient, JudgeSettings

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")


def _demo(*, own_trace: bool) -> DemoRun:
    with LoopbackGemini(scripted_verdicts) as server:
        judge = JudgeClient(
            JudgeSettings(api_key="loopback", base_url=server.base_url, max_attempts=2, own_trace=own_trace)
        )
        run = run_demo(None, judge=judge, judge_model=SCRIPTED_JUDGE_MODEL, flush_timeout_millis=60_000)
    assert run.flushed
    return run


def _input_tokens_by_trace(run: DemoRun, *, agent_only: bool) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for span in run.spans:
        assert span.context is not None
        scope = span.instrumentation_scope.name if span.instrumentation_scope else ""
        if agent_only and scope == semconv.INSTRUMENTATION_SCOPE:
            continue
        totals[format(span.context.trace_id, "032x")] += int(
            (span.attributes or {}).get(semconv.GEN_AI_USAGE_INPUT_TOKENS, 0)
        )
    return dict(totals)


def test_by_default_each_agent_trace_totals_only_the_agents_tokens() -> None:
    run = _demo(own_trace=True)
    agent_traces = {inv.trace_id for inv in run.invocations}
    everything = _input_tokens_by_trace(run, agent_only=False)
    agents_own = _input_tokens_by_trace(run, agent_only=True)
    for trace_id in agent_traces:
        assert agents_own[trace_id] > 0
        assert everything[trace_id] == agents_own[trace_id]
    judge_roots = [s for s in run.spans if s.name.startswith(semconv.JUDGE_SPAN_NAME_PREFIX + " ")]
    assert {s.attributes[semconv.OTEL_EVAL_EVALUATION_TRACE_ID] for s in judge_roots} == agent_traces
    judge_traces = {format(s.context.trace_id, "032x") for s in judge_roots if s.context is not None}
    assert judge_traces.isdisjoint(agent_traces)
    assert sum(everything[t] for t in judge_traces) > 0  # the judge's usage is still reported, in its own traces
    assert {r.trace_id for r in run.records} == agent_traces  # the evaluator never evaluates its judge's traces


def test_with_own_trace_off_the_judge_calls_are_in_the_agent_trace() -> None:
    run = _demo(own_trace=False)
    everything = _input_tokens_by_trace(run, agent_only=False)
    agents_own = _input_tokens_by_trace(run, agent_only=True)
    assert all(everything[inv.trace_id] > agents_own[inv.trace_id] for inv in run.invocations)
    assert not [s for s in run.spans if s.name.startswith(semconv.JUDGE_SPAN_NAME_PREFIX + " ")]


def test_otel_eval_run_on_the_exported_traces_rebuilds_the_agents_invocations_only(tmp_path: Path) -> None:
    """Judge traces in a trace file (as a backend exports them) are otel-eval's own: never rebuilt as invocations."""
    run = _demo(own_trace=True)
    write_output(run, tmp_path)
    assert any(s.name.startswith(semconv.JUDGE_SPAN_NAME_PREFIX + " ") for s in run.spans)
    result = CliRunner().invoke(
        main, ["run", str(tmp_path / "traces.otlp.json"), "-m", "inference_call_count_v1", "--output", "json"]
    )
    assert result.exit_code == 0, result.output
    results = json.loads(result.stdout)["results"]
    assert sorted(t for r in results for t in r["trace_ids"]) == sorted(inv.trace_id for inv in run.invocations)
    counts = [m["per_invocation_scores"] for r in results for m in r["metrics"]]
    assert all(score <= 2 for scores in counts for score in scores)  # the agent's model calls, no judge call
