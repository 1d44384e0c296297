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
from otel_eval.evaluation import ConversationReport, build_plan, select_criteria
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
