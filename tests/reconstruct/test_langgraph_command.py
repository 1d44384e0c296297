"""A LangGraph tool that answers with ``Command(update={"messages": [ToolMessage(...)]})``, recorded under OpenInference
and OpenLLMetry (``tests/data/frameworks/record_langgraph_command.py``): its result is the ``ToolMessage``'s content,
what the model was sent back, not the serialised ``Command``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from otel_eval.cli import main

FRAMEWORKS = Path(__file__).resolve().parents[1] / "data" / "frameworks"


@pytest.mark.parametrize("producer", ["langgraph_openinference", "langgraph_openllmetry"])
def test_tool_answering_with_a_command_has_its_tool_message_as_its_result(producer: str, tmp_path: Path) -> None:
    golden = tmp_path / "golden.json"
    args = ["golden", str(FRAMEWORKS / producer / "command_tool.otlp.json.gz"), "-o", str(golden)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (case,) = json.loads(golden.read_text())["eval_cases"]
    (turn,) = case["conversation"]
    assert turn["final_response"]["parts"][0]["text"] == "It is 14:05 in Paris."
    assert turn["intermediate_data"]["tool_uses"] == [{"id": "call_1", "name": "get_time", "args": {"city": "Paris"}}]
    assert turn["intermediate_data"]["tool_responses"] == [
        {"id": "call_1", "name": "get_time", "response": {"result": "14:05"}}
    ]
