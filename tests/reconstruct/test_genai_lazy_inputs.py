"""A model call's input messages (the whole history again, on every call) are converted only when a rule reads them.

Proven two ways: every recorded and fixture trace rebuilds to the same invocations as when every model call's inputs
are read, and a malformed input is still reported wherever it is read (or, as malformed JSON, always).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from otel_eval.model import TracedInvocation
from otel_eval.reconstruct import rebuild_traces
from otel_eval.reconstruct._genai_messages import ParsedMessages
from otel_eval.traces import Span
from tests.reconstruct.recorded import DATA, RECORDED_TRACE_FILES, demo_spans, file_spans
from tests.reconstruct.sdk_traces import TraceRecorder, as_json, only_invocation, trajectory

TRACE_FILES = RECORDED_TRACE_FILES
INPUT_KEY = "gen_ai.input.messages"


def _with_every_input_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every message list claims a system message: each model call's inputs are read when the call is, as the
    reader did before it learnt to defer them."""
    monkeypatch.setattr(ParsedMessages, "has_role", lambda self, role: True)


def _results(spans: Sequence[Span]) -> list[tuple[str, list[dict[str, Any]], list[str]]]:
    return [
        (
            trace.convention,
            [inv.model_dump(mode="json", exclude={"warnings"}) for inv in trace.invocations],
            sorted([*trace.warnings, *(w for inv in trace.invocations for w in inv.warnings)]),
        )
        for trace in rebuild_traces(spans)
    ]


def _assert_same_as_reading_every_input(spans: Sequence[Span], monkeypatch: pytest.MonkeyPatch) -> None:
    lazy = _results(spans)
    with monkeypatch.context() as patch:
        _with_every_input_read(patch)
        read = _results(spans)
    assert [(convention, invocations) for convention, invocations, _ in lazy] == [
        (convention, invocations) for convention, invocations, _ in read
    ]
    for (_, _, lazy_warnings), (_, _, read_warnings) in zip(lazy, read, strict=True):
        # Reading every input can only add the problems of inputs no rule needed (their JSON is checked at once).
        unread = list(read_warnings)
        for warning in lazy_warnings:
            unread.remove(warning)
        assert all(INPUT_KEY in w and "not valid JSON" not in w for w in unread), unread


@pytest.mark.parametrize("path", TRACE_FILES, ids=lambda p: str(p.relative_to(DATA)))
def test_recorded_traces_rebuild_as_when_every_input_is_read(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _assert_same_as_reading_every_input(file_spans(path), monkeypatch)


def test_demo_traces_rebuild_as_when_every_input_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    for _, spans in demo_spans():
        _assert_same_as_reading_every_input(spans, monkeypatch)


USER = "What's the weather in Paris?"
BAD_PART = {"type": "tool_call", "arguments": {"city": "Paris"}}  # a call without a name
CALL = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}
ANSWER = [{"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}]}]


def _chat(inputs: Any, outputs: Any) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": inputs if isinstance(inputs, str) else as_json(inputs),
        "gen_ai.output.messages": as_json(outputs),
    }


def _agent(inputs: list[dict[str, Any]] | None) -> dict[str, Any]:
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"}
    return attributes | ({"gen_ai.input.messages": as_json(inputs)} if inputs is not None else {})


def _warnings_about(inv: TracedInvocation, text: str) -> list[str]:
    return [w for w in inv.warnings if INPUT_KEY in w and text in w]


def test_malformed_input_json_is_reported_though_the_input_is_not_needed() -> None:
    recorder = TraceRecorder()
    user = [{"role": "user", "parts": [{"type": "text", "content": USER}]}]
    with (
        recorder.span("invoke_agent weather_agent", _agent(user), new_trace=True),
        recorder.span("chat m", _chat('[{"role": "user", "parts": [', ANSWER)),
    ):
        pass
    inv = only_invocation(recorder.spans(), "genai")
    assert trajectory(inv)["user"] == USER  # from the agent span: the model call's input is not needed
    assert _warnings_about(inv, "not valid JSON")


def test_malformed_part_of_an_input_read_for_the_user_message_is_reported() -> None:
    recorder = TraceRecorder()
    inputs = [{"role": "user", "parts": [{"type": "text", "content": USER}, BAD_PART]}]
    with (
        recorder.span("invoke_agent weather_agent", _agent(None), new_trace=True),
        recorder.span("chat m", _chat(inputs, ANSWER)),
    ):
        pass
    inv = only_invocation(recorder.spans(), "genai")
    assert trajectory(inv)["user"] == USER
    assert _warnings_about(inv, "malformed part")


def test_malformed_part_of_an_input_read_for_a_missing_tool_result_is_reported() -> None:
    recorder = TraceRecorder()
    user = [{"role": "user", "parts": [{"type": "text", "content": USER}]}]
    called = [{"role": "assistant", "parts": [CALL]}]
    sent_back = [
        *user,
        *called,
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "sunny"}, BAD_PART]},
    ]
    with (
        recorder.span("invoke_agent weather_agent", _agent(user), new_trace=True),
        recorder.span("chat m", _chat(user, called)),
    ):
        pass
        with recorder.span("execute_tool get_weather", {"gen_ai.operation.name": "execute_tool"}):
            pass  # no result recorded: the one sent back to the model is used
        with recorder.span("chat m", _chat(sent_back, ANSWER)):
            pass
    inv = only_invocation(recorder.spans(), "genai")
    assert trajectory(inv)["responses"] == [("get_weather", {"result": "sunny"}, "call_1")]
    assert _warnings_about(inv, "malformed part")


def test_system_message_of_an_input_is_the_instruction() -> None:
    recorder = TraceRecorder()
    user = [{"role": "user", "parts": [{"type": "text", "content": USER}]}]
    inputs = [{"role": " System ", "parts": [{"type": "text", "content": "Be brief."}]}, *user]
    with (
        recorder.span("invoke_agent weather_agent", _agent(user), new_trace=True),
        recorder.span("chat m", _chat(inputs, ANSWER)),
    ):
        pass
    inv = only_invocation(recorder.spans(), "genai")
    details = inv.invocation.app_details
    assert details is not None and details.agent_details["weather_agent"].instructions == "Be brief."
