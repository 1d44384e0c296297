"""``isolation="process"``: every span of a trace in flight when the evaluation process is killed is counted, never
lost silently; so is every invocation it had handed to its evaluation (waiting on the judge), also when it is killed
because it did not answer the shutdown in time.

A batch written to the evaluation process's socket after it was killed, but before the kernel closed its socket (a
dying process unmaps its memory first), was accepted and thrown away with the process: those spans were neither
evaluated nor counted (``otel_eval.spans.dropped``), in ~9 of 10 kills followed at once by span ends. Nor were the
spans it had taken and held (their root had not ended), nor its invocations in evaluation, nor anything of a process
``shutdown`` killed (its counts were closed before the kill). Each test kills a real evaluation process and reads the
agent's counter through a real metric reader.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Iterator

import pytest
from opentelemetry.trace import Tracer

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.demo import SCENARIOS, TravelAgent
from tests.judge.fake_gemini import FakeGemini
from tests.processor.telemetry import Telemetry, evaluation_process_pid, is_running
from tests.waiting import wait_until
from tests.worker._harness import OtlpSink, child_otlp_sink

pytestmark = pytest.mark.integration

TOOLS = 3


@pytest.fixture
def sink(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpSink]:
    with child_otlp_sink(monkeypatch) as receiver:
        yield receiver


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    telemetry = Telemetry()
    yield telemetry
    telemetry.shutdown()


@pytest.fixture
def judge_hangs(silent_judge: tuple[str, list[socket.socket]], monkeypatch: pytest.MonkeyPatch) -> list[socket.socket]:
    """The evaluation process's judge never answers; the connections it made to it."""
    url, called = silent_judge
    monkeypatch.setenv("OTEL_EVAL_JUDGE_BASE_URL", url)
    monkeypatch.setenv("OTEL_EVAL_JUDGE_API_KEY", "test-key")
    return called


def _processor(
    telemetry: Telemetry, criteria: dict[str, float] | None = None
) -> tuple[EvaluationSpanProcessor, Tracer]:
    processor = EvaluationSpanProcessor(
        criteria, settings=ProcessorSettings(isolation="process"), meter_provider=telemetry.meter_provider
    )
    telemetry.tracer_provider.add_span_processor(processor)
    return processor, telemetry.tracer_provider.get_tracer("agent")


def _started(processor: EvaluationSpanProcessor, tracer: Tracer, other_than: int | None = None) -> int:
    """The running evaluation process's id, once one other than ``other_than`` has taken an invocation."""

    def running() -> int | None:
        with tracer.start_as_current_span("invoke_agent warm-up"):
            pass
        processor.force_flush(60_000)
        pid = evaluation_process_pid()
        return pid if pid not in (None, other_than) else None

    assert wait_until(running, timeout=60)
    pid = evaluation_process_pid()
    assert pid is not None
    return pid


def _lost(telemetry: Telemetry, metric: str = semconv.METRIC_SPANS_DROPPED) -> int:
    """The agent's ``otel_eval.spans.dropped{otel_eval.drop.reason=transport_error}`` (or ``metric``'s), as its reader
    collects it."""
    points = telemetry.metric_points(metric)
    reason = semconv.DROP_TRANSPORT_ERROR
    return sum(int(p.value) for p in points if p.attributes.get(semconv.OTEL_EVAL_DROP_REASON) == reason)


def _lost_in_new(processor: EvaluationSpanProcessor, killed: int) -> int:
    """The spans of the killed process's traces a new evaluation process dropped, when one started in time to get
    the last of them (a slow machine): as of the last flush, which it answered."""
    if evaluation_process_pid() in (None, killed):
        return 0
    return processor.stats().get(f"evaluation_process.spans.dropped.{semconv.DROP_TRANSPORT_ERROR}", 0)


def test_spans_an_evaluation_process_held_or_never_read_are_counted_when_it_is_killed(
    sink: OtlpSink, telemetry: Telemetry
) -> None:
    processor, tracer = _processor(telemetry)
    pid = _started(processor, tracer)
    before = _lost(telemetry)
    with tracer.start_as_current_span("invoke_agent travel"):
        with tracer.start_as_current_span("call_llm"):
            pass
        assert processor.force_flush(60_000)  # held there until its root ends
        os.kill(pid, signal.SIGSTOP)  # reads nothing from here on
        for _ in range(TOOLS):
            with tracer.start_as_current_span("execute_tool"):
                pass
        assert not processor.force_flush(500)  # written to its socket, never answered
        os.kill(pid, signal.SIGKILL)
        assert wait_until(lambda: not is_running(pid), timeout=10)
        with tracer.start_as_current_span("call_llm"):  # no process for a second: lost in the agent's process
            pass
    assert not processor.force_flush(60_000)
    # The call it held, the tools it never read, the call and the root after it.
    assert _lost(telemetry) - before + _lost_in_new(processor, pid) == 1 + TOOLS + 2


def test_every_span_ended_right_after_a_kill_is_counted(sink: OtlpSink, telemetry: Telemetry) -> None:
    processor, tracer = _processor(telemetry)
    pid = _started(processor, tracer)
    for _ in range(3):  # without the count of what it never read, 2 of 3 rounds at least lost spans silently
        before = _lost(telemetry)
        with tracer.start_as_current_span("invoke_agent travel"):
            with tracer.start_as_current_span("call_llm"):
                pass
            assert processor.force_flush(60_000)
            os.kill(pid, signal.SIGKILL)
            for _ in range(TOOLS):  # at once: the first ones may be written while it is dying
                with tracer.start_as_current_span("execute_tool"):
                    pass
            assert wait_until(lambda: not is_running(pid), timeout=10)  # noqa: B023
            with tracer.start_as_current_span("call_llm"):
                pass
        assert not processor.force_flush(60_000)
        assert _lost(telemetry) - before + _lost_in_new(processor, pid) == 1 + TOOLS + 2
        pid = _started(processor, tracer, other_than=pid)


def _judging(processor: EvaluationSpanProcessor, telemetry: Telemetry, called: list[socket.socket]) -> int:
    """The evaluation process's id, once it is waiting on the judge for the demo's one invocation."""
    TravelAgent(telemetry.tracer_provider).run(SCENARIOS[0])
    assert wait_until(lambda: bool(called), timeout=60)
    pid = evaluation_process_pid()
    assert pid is not None
    return pid


def test_invocations_an_evaluation_process_had_in_evaluation_are_counted_when_it_is_killed(
    sink: OtlpSink, telemetry: Telemetry, judge_hangs: list[socket.socket]
) -> None:
    processor, _ = _processor(telemetry, {"hallucinations_v1": 0.5})
    pid = _judging(processor, telemetry, judge_hangs)
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not is_running(pid), timeout=10)
    assert not processor.force_flush(10_000)
    assert _lost(telemetry, semconv.METRIC_INVOCATIONS_DROPPED) == 1
    assert _lost(telemetry) == 0  # its spans were rebuilt into it: not lost twice
    processor.shutdown(10_000)


def test_what_an_evaluation_process_killed_at_shutdown_had_is_counted(
    sink: OtlpSink, telemetry: Telemetry, judge_hangs: list[socket.socket]
) -> None:
    processor, tracer = _processor(telemetry, {"hallucinations_v1": 0.5})
    pid = _judging(processor, telemetry, judge_hangs)
    try:
        with tracer.start_as_current_span("invoke_agent travel"):
            with tracer.start_as_current_span("call_llm"):
                pass
            assert not processor.force_flush(3_000)  # taken and held (its root has not ended); the judge hangs
            os.kill(pid, signal.SIGSTOP)  # answers nothing from here on
            for _ in range(TOOLS):
                with tracer.start_as_current_span("execute_tool"):
                    pass
        processor.shutdown(3_000)  # the tools and the root are written to it, never read; then it is killed
    finally:
        with contextlib.suppress(ProcessLookupError):  # left stopped by a failure above
            os.kill(pid, signal.SIGKILL)
    assert _lost(telemetry, semconv.METRIC_INVOCATIONS_DROPPED) == 1
    assert _lost(telemetry) == 1 + TOOLS + 1


def test_invocations_evaluated_before_the_kill_are_not_counted(
    sink: OtlpSink, telemetry: Telemetry, gemini_credentials: FakeGemini
) -> None:
    processor, _ = _processor(telemetry, {"hallucinations_v1": 0.5})
    TravelAgent(telemetry.tracer_provider).run(SCENARIOS[0])
    assert processor.force_flush(60_000)  # judged and emitted
    assert gemini_credentials.generate_requests()
    pid = evaluation_process_pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not is_running(pid), timeout=10)
    assert not processor.force_flush(10_000)
    assert _lost(telemetry, semconv.METRIC_INVOCATIONS_DROPPED) == 0
    processor.shutdown(10_000)
