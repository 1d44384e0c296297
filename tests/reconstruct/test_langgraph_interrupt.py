"""A LangGraph run resumed after an ``interrupt()`` (``Command(resume=...)`` on the same ``thread_id``), recorded under
OpenInference (``tests/data/frameworks/record_langgraph_interrupt.py``): the resumed trace runs the tool of a call the
model made in the first trace, so no model output of its own accounts for it; its arguments are the model's, from the
history the resumed trace sends the model, not the tool span's bare ``input.value``."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from otel_eval.cli import main

RECORDED = (
    Path(__file__).resolve().parents[1] / "data" / "frameworks" / "langgraph_openinference" / "interrupt.otlp.json.gz"
)
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
    args = ["run", str(RECORDED), "--eval-set", str(eval_set), "-m", "tool_trajectory_avg_score", "--output", "json"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (conversation,) = json.loads(result.stdout)["results"]
    assert conversation["session_id"] == "thread-hitl" and len(conversation["trace_ids"]) == 2
    (trajectory,) = [m for m in conversation["metrics"] if m["metric_name"] == "tool_trajectory_avg_score"]
    assert trajectory["per_invocation_scores"] == [1.0, 1.0]
