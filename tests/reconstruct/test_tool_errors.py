"""A tool span with error status that recorded the tool's response keeps it, in every convention; ADK's placeholder
for an unhandled exception is no response. (Live ADK parity for both cases is in ``test_adk_parity``: the
``tool_error`` and ``tool_error_handled`` scenarios, both telemetry schemas.)"""

from __future__ import annotations

import json

import pytest

from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import Span, read_trace_bytes
from tests.data.hostile import shapes

HANDLED = {"error": "ToolFailedError: backend down", "retryable": False}


def _spans(convention: str, *, result: object) -> list[Span]:
    raw = shapes.good_invocation(convention)
    tool = raw[3]
    tool.error = True
    tool.attributes["error.type"] = "TOOL_ERROR"
    tool.attributes = {k: (json.dumps(result) if "sunny" in str(v) else v) for k, v in tool.attributes.items()}
    return read_trace_bytes(json.dumps(shapes.otlp_json(raw)).encode(), source="tool-error").spans


@pytest.mark.parametrize("convention", shapes.CONVENTIONS)
def test_failed_tool_keeps_the_response_it_recorded(convention: str) -> None:
    [trace] = rebuild_traces(_spans(convention, result=HANDLED))
    assert trace.convention == convention
    [traced] = trace.invocations
    data = traced.invocation.intermediate_data
    assert data is not None and hasattr(data, "tool_responses")
    assert [(r.name, r.response) for r in data.tool_responses] == [("get_weather", HANDLED)]
    assert [c.name for c in data.tool_uses] == ["get_weather"]


@pytest.mark.parametrize("convention", ["adk", "adk_v2"])
def test_unhandled_exception_placeholder_is_no_response(convention: str) -> None:
    [trace] = rebuild_traces(_spans(convention, result={"result": "<not specified>"}))
    [traced] = trace.invocations
    data = traced.invocation.intermediate_data
    assert data is not None and hasattr(data, "tool_responses")
    assert data.tool_responses == []
    assert [c.name for c in data.tool_uses] == ["get_weather"]
