"""LangGraph runs that stop before the model answers, recorded under OpenInference
(``tests/data/frameworks/record_langgraph_stops.py``).

A run resumed after an ``interrupt()`` (``Command(resume=...)`` on the same ``thread_id``) runs the tool of a call the
model made in the first trace, so no model output of its own accounts for it; its arguments are the model's, from the
history the resumed trace sends the model, not the tool span's bare ``input.value``. A tool that raises through the
graph has the exception's message as its result, not OpenInference's status message (the exception's repr and its
whole traceback)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from otel_eval.cli import main

RECORDED = Path(__file__).resolve().parents[1] / "data" / "frameworks" / "langgraph_openinference"
EVAL_SET = {
    "eval_set_id": "booking",
    "eval_cases": [
        {
            "eval_id": "book_paris",
            "conversation": [
                {
                    "invocation_id": "t1",
                    "user_content": {"role": "user", "parts": [{"text": "Book a table in Paris."}]},
                    "final_response": {"role": "model", "parts": [{"text": "Your table in Paris is booked."}]},
                    "intermediate_data": {"tool_uses": [{"name": "book_table", "args": {"city": "Paris"}}]},
                }
            ],
        }
    ],
}


def test_resumed_run_calls_the_tool_with_the_arguments_the_model_gave(tmp_path: Path) -> None:
    eval_set = tmp_path / "booking.evalset.json"
    eval_set.write_text(json.dumps(EVAL_SET))
    args = [
        "run",
        str(RECORDED / "interrupt.otlp.json.gz"),
        "--eval-set",
        str(eval_set),
        "-m",
        "tool_trajectory_avg_score",
        "--output",
        "json",
    ]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (conversation,) = json.loads(result.stdout)["results"]
    assert conversation["session_id"] == "thread-hitl" and len(conversation["trace_ids"]) == 2
    (trajectory,) = [m for m in conversation["metrics"] if m["metric_name"] == "tool_trajectory_avg_score"]
    assert trajectory["per_invocation_scores"] == [1.0, 1.0]


def test_tool_raising_through_the_graph_has_the_exception_message_as_its_result(tmp_path: Path) -> None:
    golden = tmp_path / "golden.json"
    args = ["golden", str(RECORDED / "tool_raises.otlp.json.gz"), "-o", str(golden)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (case,) = json.loads(golden.read_text())["eval_cases"]
    (turn,) = case["conversation"]
    assert turn["user_content"]["parts"][0]["text"] == "Reserve a table in Rome."
    assert turn["intermediate_data"]["tool_uses"] == [
        {"id": "call_1", "name": "reserve_table", "args": {"city": "Rome"}}
    ]
    assert turn["intermediate_data"]["tool_responses"] == [
        {"id": "call_1", "name": "reserve_table", "response": {"error": "booking service down"}}
    ]
