"""A tool run's own arguments are parsed only when something reads them (a run no function call accounts for), and a
rebuilt invocation's ids are checked as the model's patterns check them (``tests/reconstruct/test_rebuild_on_demand.py``
checks the whole rebuild on every trace)."""

from __future__ import annotations

import json
import re
from typing import Any

import pydantic
import pytest

from otel_eval.model import Content, Invocation
from otel_eval.model.traced import SPAN_ID_PATTERN, TRACE_ID_PATTERN
from otel_eval.reconstruct import Reads, genai, rebuild_traces
from otel_eval.reconstruct._built import traced_invocation
from otel_eval.reconstruct.reads import read_of
from otel_eval.traces import Span
from tests.reconstruct.recorded import demo_spans

TRACE = "0af7651916cd43dd8448eb211c80319c"


def _span(span_id: str, parent: str | None, name: str, start: int, end: int, **attributes: Any) -> Span:
    return Span(TRACE, span_id, parent, name, start, end, attributes)


def _counted_tool_args(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parsed: list[str] = []
    tool_args = genai._Reader.tool_args

    def counted(reader: Any, span: Span) -> Any:
        parsed.append(span.span_id)
        return tool_args(reader, span)

    monkeypatch.setattr(genai._Reader, "tool_args", counted)
    return parsed


def test_a_tool_count_rebuild_parses_no_matched_run_s_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    spans = dict(demo_spans())["two_tools"]
    parsed = _counted_tool_args(monkeypatch)
    full = rebuild_traces(spans)[0].invocations[0]
    assert len(parsed) == 2  # the full rebuild parses both runs' arguments (their problems reported)
    parsed.clear()
    lean = rebuild_traces(spans, reads=Reads.TOOL_CALLS)[0].invocations[0]
    assert parsed == []  # both runs answer a call: the calls' own arguments are the tool uses'
    assert read_of(lean, Reads.TOOL_CALLS) == read_of(full, Reads.TOOL_CALLS)
    assert len(read_of(lean, Reads.TOOL_CALLS)) == 2


@pytest.mark.parametrize("arguments", ['{"city": "Rome"}', "{'city': 'Rome'}", '{"city": ', "plain text"])
def test_a_run_no_call_accounts_for_reads_its_arguments_alike(monkeypatch: pytest.MonkeyPatch, arguments: str) -> None:
    """Content capture off for the model call (no output messages): the run is a leftover, its arguments are the
    tool use's, read on first use, with the same value and the same problem reported as by the full rebuild."""
    spans = [
        _span("a" * 16, None, "invoke_agent travel", 0, 100, **{"gen_ai.operation.name": "invoke_agent"}),
        _span("b" * 16, "a" * 16, "chat m", 1, 10, **{"gen_ai.operation.name": "chat"}),
        _span(
            "c" * 16,
            "a" * 16,
            "execute_tool get_weather",
            20,
            30,
            **{
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": arguments,
                "gen_ai.tool.call.result": json.dumps({"ok": True}),
            },
        ),
    ]
    parsed = _counted_tool_args(monkeypatch)
    full = rebuild_traces(spans)[0].invocations[0]
    lean = rebuild_traces(spans, reads=Reads.TOOL_CALLS)[0].invocations[0]
    assert parsed == ["c" * 16, "c" * 16]  # once per rebuild
    uses = read_of(lean, Reads.TOOL_CALLS)
    assert uses == read_of(full, Reads.TOOL_CALLS)
    assert uses[0]["name"] == "get_weather" and uses[0]["id"] == "call_1"
    assert [w for w in lean.warnings if "arguments" in w] == [w for w in full.warnings if "arguments" in w]
    if arguments == '{"city": ':
        assert any("not valid JSON" in w for w in lean.warnings)


@pytest.mark.parametrize(
    ("trace_id", "span_id"),
    [
        (TRACE, "00f067aa0ba902b7"),
        (TRACE.upper(), "00f067aa0ba902b7"),
        (TRACE, "00F067AA0BA902B7"),
        (TRACE[:-1], "00f067aa0ba902b7"),
        (TRACE, "00f067aa0ba902b7" + "0"),
        (TRACE + "\n", "00f067aa0ba902b7"),
        (TRACE, "00f067aa0ba902g7"),
        (TRACE, " 0f067aa0ba902b7"),
    ],
)
def test_the_ids_of_a_rebuilt_invocation_are_checked_as_the_patterns_check_them(trace_id: str, span_id: str) -> None:
    fits = bool(re.fullmatch(TRACE_ID_PATTERN, trace_id)) and bool(re.fullmatch(SPAN_ID_PATTERN, span_id))
    values: dict[str, Any] = {
        "invocation": Invocation(invocation_id="i", user_content=Content(parts=[])),
        "trace_id": trace_id,
        "span_id": span_id,
        "start_time_ns": 1,
        "end_time_ns": 2,
        "convention": "genai",
    }
    if fits:
        assert traced_invocation(values).trace_id == trace_id
    else:
        with pytest.raises(pydantic.ValidationError):
            traced_invocation(values)
