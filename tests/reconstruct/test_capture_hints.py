"""Invocations rebuilt without message content: one WARNING per process names the setting of the instrumentation the
spans came from that turns capture on (the ``content_not_captured`` reason alone does not), on recorded spans of the
real instrumentations and spans made with the real OpenTelemetry SDK."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from otel_eval.reconstruct import capture_hints, rebuild_traces
from otel_eval.traces import Span, read_trace_file
from tests.reconstruct.sdk_traces import TraceRecorder

FRAMEWORKS = Path(__file__).resolve().parents[1] / "data" / "frameworks"
HINT = "carries no message content"


@pytest.fixture
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The once-per-process hint not yet given (as in a process that has rebuilt nothing)."""
    monkeypatch.setattr(capture_hints, "_HINT", capture_hints._Hint())
    yield


def recorded(name: str) -> Callable[[], list[Span]]:
    return lambda: read_trace_file(FRAMEWORKS / name).spans


def genai_without_content(scope: str, **extra: str) -> Callable[[], list[Span]]:
    def spans() -> list[Span]:
        recorder = TraceRecorder(scope)
        with recorder.span("invoke_agent helper", {"gen_ai.operation.name": "invoke_agent", **extra}, new_trace=True):
            with recorder.span("chat model", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}):
                pass
            with recorder.span("execute_tool lookup", {"gen_ai.operation.name": "execute_tool"}):
                pass
        return recorder.spans()

    return spans


def openinference_without_content() -> list[Span]:
    recorder = TraceRecorder("openinference.instrumentation.crewai")
    kind = "openinference.span.kind"
    with (
        recorder.span("agent", {kind: "AGENT", "input.value": "__REDACTED__"}, new_trace=True),
        recorder.span("llm", {kind: "LLM", "llm.token_count.prompt": 5}),
    ):
        pass
    return recorder.spans()


@pytest.mark.usefixtures("fresh_process")
@pytest.mark.parametrize(
    ("spans", "framework", "setting"),
    [
        (recorded("agent_framework_no_content/one_tool.otlp.json.gz"), "Microsoft Agent Framework", "ENABLE_SENSITIVE_DATA=true"),
        (recorded("autogen/one_tool.otlp.json.gz"), "AutoGen", "never carry message content"),
        (genai_without_content("pydantic-ai"), "Pydantic AI", "include_content"),
        (genai_without_content("opentelemetry.instrumentation.langchain", **{"traceloop.span.kind": "agent"}), "OpenLLMetry", "TRACELOOP_TRACE_CONTENT"),
        (genai_without_content("opentelemetry.instrumentation.openai_v2"), "GenAI", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY"),
        (openinference_without_content, "OpenInference", "OPENINFERENCE_HIDE_INPUTS"),
    ],
)  # fmt: skip
def test_the_hint_names_the_setting_of_the_instrumentation_once(
    caplog: pytest.LogCaptureFixture, spans: Callable[[], list[Span]], framework: str, setting: str
) -> None:
    with caplog.at_level("WARNING", "otel_eval.reconstruct"):
        first = rebuild_traces(spans())
        rebuild_traces(spans())
    assert any(not inv.content_captured for trace in first for inv in trace.invocations)
    hints = [r for r in caplog.records if HINT in r.getMessage()]
    assert len(hints) == 1, [r.getMessage() for r in hints]
    message = hints[0].getMessage()
    assert framework in message and setting in message and "docs/troubleshooting.md" in message
    assert hints[0].levelname == "WARNING"


@pytest.mark.usefixtures("fresh_process")
def test_no_hint_when_the_content_was_captured(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", "otel_eval.reconstruct"):
        traces = rebuild_traces(read_trace_file(FRAMEWORKS / "agent_framework/one_tool.otlp.json.gz").spans)
    assert all(inv.content_captured for trace in traces for inv in trace.invocations)
    assert not [r for r in caplog.records if HINT in r.getMessage()]


def test_otel_eval_run_says_it_once_for_every_trace_without_content() -> None:
    files = [
        FRAMEWORKS / "agent_framework_no_content" / name for name in ("one_tool.otlp.json.gz", "no_tool.otlp.json.gz")
    ]
    command = [sys.executable, "-c", "from otel_eval.cli import main; main()", "run", *map(str, files)]
    done = subprocess.run(
        [*command, "-m", "response_match_score", "--allow-not-evaluated"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    hints = [line for line in done.stderr.splitlines() if HINT in line]
    assert len(hints) == 1, done.stderr
    assert "ENABLE_SENSITIVE_DATA=true" in hints[0] and "content_not_captured" in hints[0]
