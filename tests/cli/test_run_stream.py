"""``otel-eval run``'s streamed outputs: the same bytes as writing all results at once."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from otel_eval.cli._common import load_traces, print_json
from otel_eval.cli._results_dir import write_results
from otel_eval.cli._run_stream import JsonResults, ResultsFile, spool_file, stream_reports
from otel_eval.cli.run import report_json
from otel_eval.conversations import group_conversations
from otel_eval.evaluation import (
    ConversationReport,
    all_inline,
    build_plan,
    evaluate_conversation,
    evaluate_conversation_inline,
    select_criteria,
)
from otel_eval.metrics import default_registry

DATA = Path(__file__).parents[1] / "data" / "traces"
FILES = [DATA / "agentevals" / "helm.json", DATA / "agentevals" / "k8s.json", DATA / "agentevals" / "helm_3.json"]


def _reports(window: int) -> list[ConversationReport]:
    loaded = load_traces(FILES)
    conversations = group_conversations(inv for trace in loaded.traces for inv in trace.invocations)
    registry = default_registry()
    criteria = select_criteria(None, with_reference=False, with_judge=False, registry=registry)
    plan = build_plan(criteria, registry=registry, match_type=None, judge=None)

    async def collect() -> list[ConversationReport]:
        return [report async for report in stream_reports(iter(conversations), plan, window=window)]

    return asyncio.run(collect())


def test_reports_come_in_input_order_whatever_the_window() -> None:
    one, two = _reports(window=1), _reports(window=2)
    assert len(one) == 3
    assert [r.conversation.trace_ids for r in one] == [r.conversation.trace_ids for r in two]
    assert [[o.result.overall_score for o in r.outcomes] for r in one] == [
        [o.result.overall_score for o in r.outcomes] for r in two
    ]


@pytest.mark.parametrize("count", [0, 1, 3])
def test_json_results_written_one_by_one_are_the_bytes_of_the_whole_document(
    count: int, capsys: pytest.CaptureFixture[str]
) -> None:
    elements = [report_json(report) for report in _reports(window=2)][:count]
    print_json({"results": elements})
    whole = capsys.readouterr().out
    streamed = JsonResults()
    for element in elements:
        streamed.add(element)
    streamed.close()
    assert capsys.readouterr().out == whole


def test_results_file_spooled_case_by_case_equals_the_whole_file(tmp_path: Path) -> None:
    reports = _reports(window=2)
    app = next(inv.agent_name for r in reports for inv in r.conversation.invocations if inv.agent_name)
    whole = write_results(tmp_path / "whole", reports, app_name=app, eval_set_id="traces").read_text()
    with spool_file() as spool:
        results = ResultsFile(tmp_path / "streamed", "traces", spool)
        for report in reports:
            results.add(report)
        path = results.close()
    assert path is not None and path.name.startswith(f"{app}_traces_")
    streamed = path.read_text()
    assert _without_times(streamed) == _without_times(whole)
    assert len(json.loads(streamed)["eval_case_results"]) == 3


def _without_times(text: str) -> str:
    """The file without its unix times (in the result id and name, and the creation timestamp)."""
    return re.sub(r"_traces_[0-9.]+\"|\"creationTimestamp\": [0-9.e+]+|\"creation_timestamp\": [0-9.e+]+", "", text)


@pytest.mark.parametrize(
    "names",
    [
        ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"),
        ("token_usage_v1", "tool_call_count_v1"),
    ],
)
def test_a_plan_of_inline_metrics_is_scored_without_tasks_to_the_same_reports(names: tuple[str, ...]) -> None:
    loaded = load_traces(FILES)
    conversations = group_conversations(inv for trace in loaded.traces for inv in trace.invocations)
    plan = build_plan(dict.fromkeys(names), registry=default_registry())
    assert all_inline(plan)

    async def streamed() -> list[ConversationReport]:
        return [report async for report in stream_reports(iter(conversations), plan)]

    async def one_by_one() -> list[ConversationReport]:
        return [await evaluate_conversation(conversation, plan) for conversation in conversations]

    inline, reference = asyncio.run(streamed()), asyncio.run(one_by_one())
    assert [evaluate_conversation_inline(c, plan) for c in conversations] == inline
    assert [json.dumps(report_json(r)) for r in inline] == [json.dumps(report_json(r)) for r in reference]
    assert {o.result.overall_eval_status.name for r in inline for o in r.outcomes} >= {"INFORMATIONAL"}


def test_a_plan_with_a_metric_that_does_not_run_inline_is_scored_in_tasks() -> None:
    plan = build_plan(dict.fromkeys(("tool_call_count_v1", "tool_trajectory_avg_score")), registry=default_registry())
    assert not all_inline(plan)
    loaded = load_traces(FILES)
    conversations = group_conversations(inv for trace in loaded.traces for inv in trace.invocations)

    async def streamed() -> list[ConversationReport]:
        return [report async for report in stream_reports(iter(conversations), plan, window=2)]

    reports = asyncio.run(streamed())
    assert [r.conversation.trace_ids for r in reports] == [c.trace_ids for c in conversations]
    assert {o.metric.name: o.result.overall_eval_status.name for o in reports[0].outcomes} == {
        "tool_call_count_v1": "INFORMATIONAL",
        "tool_trajectory_avg_score": "NOT_EVALUATED",  # no reference
    }
