"""Exact completion: a local root is handed on when every span started under it here has ended, waits (bounded by the
idle timeout) for descendants still open, and the background thread is woken by a root's end, not its tick.

Real SDK spans; requests are read from an InMemoryInvocationExporter."""

from __future__ import annotations

import json
import threading
import time

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span

from otel_eval import semconv
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.model import content_text
from otel_eval.model.eval_case import get_all_tool_calls
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.processor import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.processor._intake import Wake, WakeSchedule
from otel_eval.processor._open_spans import OpenSpans
from otel_eval.transport import InMemoryInvocationExporter
from tests.processor.telemetry import attach
from tests.waiting import wait_until

USER_TEXT = "Weather in Paris, and email it to me"


def _message(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def _started_root(tracer: trace.Tracer, answer: str) -> Span:
    """A started ``invoke_agent`` root span of the travel assistant, asked :data:`USER_TEXT`, answering ``answer``."""
    return tracer.start_span(
        "invoke_agent travel_assistant",
        attributes={
            semconv.GEN_AI_OPERATION_NAME: "invoke_agent",
            semconv.GEN_AI_AGENT_NAME: "travel_assistant",
            semconv.GEN_AI_INPUT_MESSAGES: _message("user", USER_TEXT),
            semconv.GEN_AI_OUTPUT_MESSAGES: _message("assistant", answer),
        },
    )


def _invocation_with_background_tool(provider: TracerProvider) -> tuple[Span, Span]:
    """An ``invoke_agent`` root that ends while its ``execute_tool`` child (an async tool) is still running.

    Returns the ended root and the open tool span."""
    tracer = provider.get_tracer("travel.agent")
    root = _started_root(tracer, "Sunny; the email is on its way.")
    with trace.use_span(root, end_on_exit=False):
        tool = tracer.start_span(
            "execute_tool send_email",
            attributes={
                semconv.GEN_AI_OPERATION_NAME: "execute_tool",
                semconv.GEN_AI_TOOL_NAME: "send_email",
                semconv.GEN_AI_TOOL_CALL_ID: "call_0",
                semconv.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps({"to": "me"}),
            },
        )
    root.end()
    return root, tool


def _tool_names(request: EvaluationRequest) -> list[str | None]:
    return [call.name for call in get_all_tool_calls(request.invocations[0].invocation.intermediate_data)]


def test_a_child_ending_after_its_root_is_in_the_evaluated_invocation(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    processor = attach(provider, exporter)
    _root, tool = _invocation_with_background_tool(provider)

    assert processor.force_flush(10_000)
    assert exporter.get_finished_requests() == []  # the root ended, but a span under it is still open
    assert processor.stats()["waiting_roots"] == 1

    tool.set_attribute(semconv.GEN_AI_TOOL_CALL_RESULT, json.dumps({"sent": True}))
    tool.end()
    assert wait_until(lambda: len(exporter.get_finished_requests()) == 1)
    (request,) = exporter.get_finished_requests()
    assert content_text(request.invocations[0].invocation.user_content) == USER_TEXT
    assert _tool_names(request) == ["send_email"]  # the late child is part of the invocation
    stats = processor.stats()
    assert stats["waiting_roots"] == 0
    assert stats["invocations.incomplete"] == 0
    processor.shutdown()


def test_a_child_that_never_ends_is_handed_on_at_the_idle_timeout_and_counted(
    provider: TracerProvider, exporter: InMemoryInvocationExporter, caplog: pytest.LogCaptureFixture
) -> None:
    processor = attach(provider, exporter, settings=ProcessorSettings(trace_idle_timeout=1.0))
    _root, tool = _invocation_with_background_tool(provider)

    assert wait_until(lambda: len(exporter.get_finished_requests()) == 1)
    (request,) = exporter.get_finished_requests()
    assert content_text(request.invocations[0].invocation.user_content) == USER_TEXT
    assert _tool_names(request) == []  # handed on without the span that was still open
    assert wait_until(lambda: "raise OTEL_EVAL_TRACE_IDLE_TIMEOUT" in caplog.text)  # said, with what to change
    stats = processor.stats()
    assert stats["invocations.incomplete"] == 1
    assert stats["waiting_roots"] == 0

    tool.end()  # ends after its invocation was handed on: dropped and counted, never a second, partial invocation
    assert wait_until(lambda: processor.stats().get(f"spans.dropped.{semconv.DROP_INCOMPLETE}", 0) == 1)
    assert processor.force_flush(10_000)
    assert len(exporter.get_finished_requests()) == 1
    assert processor.stats()["open_traces"] == 0
    processor.shutdown()


def test_a_root_ending_wakes_the_waiting_background_thread_once_per_invocation(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    # "wakeups" counts the wake-ups of the background thread by the agent's threads (not its periodic ticks).
    processor = attach(provider, exporter, settings=ProcessorSettings(trace_idle_timeout=3600.0))
    wakeups = processor.stats()["wakeups"]
    agent = TravelAgent(provider)
    runs = 5
    for index in range(runs):
        time.sleep(0.1)  # the thread stopped polling and waits to be woken
        agent.run(SCENARIOS[index % len(SCENARIOS)])
        assert wait_until(lambda expected=index + 1: len(exporter.get_finished_requests()) == expected)
    woken = processor.stats()["wakeups"] - wakeups
    # One wake-up per invocation at most: not one per span (each run ends 4+ spans). The thread's periodic look
    # (every 0.2 s) may land in the middle of a run on a loaded machine: it takes the spans ended so far and polls
    # for the rest, so that invocation needs no wake-up; the others do (the agent's threads wake it).
    assert runs - 2 <= woken <= runs
    processor.shutdown()


def _after_one_invocation(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> tuple[EvaluationSpanProcessor, TravelAgent]:
    """A processor (no idle timeout within a test) and its agent, after one invocation was handed on."""
    processor = attach(provider, exporter, settings=ProcessorSettings(trace_idle_timeout=3600.0))
    agent = TravelAgent(provider)
    agent.run(SCENARIOS[0])
    assert wait_until(lambda: len(exporter.get_finished_requests()) == 1)
    return processor, agent


def test_while_invocations_keep_coming_the_background_thread_polls_instead_of_being_woken(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    processor, agent = _after_one_invocation(provider, exporter)
    wakeups = processor.stats()["wakeups"]
    runs = 20
    for index in range(runs):
        agent.run(SCENARIOS[index % len(SCENARIOS)])
    assert wait_until(lambda: len(exporter.get_finished_requests()) == runs + 1)  # each found without a wake-up
    assert processor.stats()["wakeups"] - wakeups < runs // 2
    processor.shutdown()


def test_the_open_span_bookkeeping_is_bounded() -> None:
    open_spans = OpenSpans(max_traces=2, max_spans_per_trace=3)
    for trace_id in (1, 2, 3):
        open_spans.started(trace_id, 10, None, now=0.0)
    assert open_spans.tracked_traces == 2  # the third trace is not tracked: its root completes when it ends
    for span_id in (11, 12, 13):
        open_spans.started(1, span_id, 10, now=0.0)
    assert open_spans.open_under(1, 10) == 3  # the root and two children; the fourth span is over the bound
    assert open_spans.ended(1, 13, now=0.0) is None  # never tracked
    open_spans.forget_idle(now=10.0, idle_seconds=5.0)
    assert open_spans.tracks(1)  # under way (spans open under its running root): waited for, however long
    assert not open_spans.tracks(2)  # a root open alone does not hold memory past the idle timeout
    assert open_spans.overdue(now=10.0, max_age=20.0) == []
    assert open_spans.overdue(now=10.0, max_age=8.0) == [1]  # the engine forgets it at the age limit
    open_spans.ended(1, 10, now=10.0)
    open_spans.forget_idle(now=20.0, idle_seconds=5.0)
    assert open_spans.tracked_traces == 0  # spans that never end, under a root that did: forgotten when idle


def test_the_periodic_step_runs_only_while_something_is_held(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    processor, _agent = _after_one_invocation(provider, exporter)
    assembler = processor._engine._assembler
    assert assembler.holds_nothing
    sweep = assembler._next_sweep  # moved on by every step (at most every 0.1 s)
    time.sleep(0.5)  # two periods (0.2 s) with nothing queued or held: no step
    assert assembler._next_sweep == sweep

    _root, tool = _invocation_with_background_tool(provider)
    assert wait_until(lambda: processor.stats()["waiting_roots"] == 1)
    assert not assembler.holds_nothing  # a root waits for its open child: the period's step runs (its expiry)
    sweep = assembler._next_sweep
    assert wait_until(lambda: assembler._next_sweep != sweep)
    tool.end()
    assert wait_until(lambda: len(exporter.get_finished_requests()) == 2)
    assert assembler.holds_nothing
    processor.shutdown()


def test_an_invocation_under_way_is_stepped_at_most_once_a_second_not_at_every_tick(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    # A tick that no wake-up cut short finds no complete invocation (a local root's end wakes the thread): the spans
    # of an invocation under way wait for the slow period (1 s), not the 0.2 s tick, and its root's end still hands
    # it on at once. The first invocation's step starts the slow period.
    processor, _agent = _after_one_invocation(provider, exporter)
    started = time.monotonic()
    time.sleep(0.05)  # the thread stopped polling (a look 3 ms after its last step found nothing)
    tracer = provider.get_tracer("travel.agent")
    root = _started_root(tracer, "Sunny.")
    with trace.use_span(root, end_on_exit=False):
        tracer.start_span("execute_tool get_weather", attributes={semconv.GEN_AI_TOOL_NAME: "get_weather"}).end()
    time.sleep(0.4)  # two ticks (0.2 s) with the child's end queued and no wake-up
    if time.monotonic() - started < 0.9:  # (a machine too loaded to tell: the slow period may have passed)
        assert processor.stats()["pending_spans"] == 1  # not stepped at a tick
    assert wait_until(lambda: processor.stats()["pending_spans"] == 0)  # the slow period took it
    root.end()
    assert wait_until(lambda: len(exporter.get_finished_requests()) == 2)  # the root's end woke the thread
    assert content_text(exporter.get_finished_requests()[1].invocations[0].invocation.user_content) == USER_TEXT
    assert processor.stats()["open_traces"] == 0
    processor.shutdown()


def _without_slow_period(provider: TracerProvider, exporter: InMemoryInvocationExporter) -> EvaluationSpanProcessor:
    """A processor whose engine's slow period (and idle timeout) never comes: only a look or a wake-up hands an
    invocation on."""
    processor = attach(provider, exporter, settings=ProcessorSettings(trace_idle_timeout=3600.0))
    processor._engine._slow_tick = 3600.0
    return processor


def test_a_root_that_ends_as_the_polling_stops_is_taken_by_the_last_look(
    provider: TracerProvider, exporter: InMemoryInvocationExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The thread polled after a step and its last look found nothing; the next root ends before it stops polling
    # (the agent's thread sees it polling, so wakes nobody). The look before its sleep must take that root: the ticks
    # after it step for what they find queued only once the slow period is due (here: never).
    processor = _without_slow_period(provider, exporter)
    paused, resume = threading.Event(), threading.Event()
    wait = WakeSchedule.wait

    def stopping_to_poll(schedule: WakeSchedule) -> bool:
        if not schedule._polling and schedule._intake.polling and not paused.is_set():
            paused.set()
            resume.wait(10)
        return wait(schedule)

    monkeypatch.setattr(WakeSchedule, "wait", stopping_to_poll)
    agent = TravelAgent(provider)
    agent.run(SCENARIOS[0])
    assert paused.wait(10)  # the step for it polled once; the look found nothing
    wakeups = processor.stats()["wakeups"]
    agent.run(SCENARIOS[1])
    resume.set()
    assert wait_until(lambda: len(exporter.get_finished_requests()) == 2)
    assert processor.stats()["wakeups"] == wakeups  # the look found it: nobody woke the thread
    processor.shutdown()


def test_a_root_that_ends_as_the_thread_goes_to_sleep_wakes_it(
    provider: TracerProvider, exporter: InMemoryInvocationExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The thread stopped polling and looked at the queue (empty); the next root ends before it sleeps for its tick.
    # The agent's thread wakes it (it is not polling), and the wake-up is not lost to the sleep that follows.
    processor = _without_slow_period(provider, exporter)
    engine = processor._engine
    agent = TravelAgent(provider)
    agent.run(SCENARIOS[0])
    assert wait_until(lambda: len(exporter.get_finished_requests()) == 1)
    paused, resume = threading.Event(), threading.Event()
    wait = Wake.wait

    def going_to_sleep(wake: Wake, timeout: float) -> bool:
        if timeout >= engine.period and not paused.is_set():  # the tick's sleep, not a poll
            paused.set()
            resume.wait(10)
        return wait(wake, timeout)

    monkeypatch.setattr(Wake, "wait", going_to_sleep)
    assert paused.wait(10)
    wakeups = processor.stats()["wakeups"]
    agent.run(SCENARIOS[1])
    resume.set()
    assert wait_until(lambda: len(exporter.get_finished_requests()) == 2)
    assert processor.stats()["wakeups"] == wakeups + 1
    processor.shutdown()


def test_an_agent_whose_invocations_come_within_the_poll_window_does_not_wake_the_thread(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    # ~120 invocations a second (bench_processor paces at 250): the thread's looks find each root (a wake-up costs the
    # agent's thread more than a span does). The first two may wake it: the polling window opens when spans come
    # within it of the ones before.
    processor = attach(provider, exporter)
    agent = TravelAgent(provider)
    for _ in range(40):
        agent.run(SCENARIOS[0])
        time.sleep(0.008)
    assert wait_until(lambda: len(exporter.get_finished_requests()) == 40)
    assert processor.stats()["wakeups"] <= 10  # without the window: one per invocation
    processor.shutdown()


def test_an_invocation_whose_spans_pause_longer_than_the_idle_timeout_is_evaluated_whole(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    # A reasoning model: each call ends no span for longer than the idle timeout while the root runs. The trace is
    # waited for (its root started here and has not ended), not handed on in two halves.
    processor = attach(provider, exporter, settings=ProcessorSettings(trace_idle_timeout=0.2))
    agent = TravelAgent(provider, model_latency_seconds=0.8)
    scenario = next(scenario for scenario in SCENARIOS if scenario.tool_steps)
    agent.run(scenario)
    assert processor.force_flush(10_000)
    (request,) = exporter.get_finished_requests()
    invocation = request.invocations[0].invocation
    assert content_text(invocation.user_content) == scenario.user_text
    assert invocation.final_response is not None and content_text(invocation.final_response) == scenario.answer
    assert _tool_names(request) == [step.name for step in scenario.tool_steps]
    stats = processor.stats()
    assert stats.get("traces.idle_flushed", 0) == 0
    assert stats["invocations.incomplete"] == 0
    processor.shutdown()


def test_a_root_running_past_the_max_trace_age_is_handed_on_as_it_is_and_its_later_spans_counted(
    provider: TracerProvider, exporter: InMemoryInvocationExporter, caplog: pytest.LogCaptureFixture
) -> None:
    processor = attach(provider, exporter, settings=ProcessorSettings(trace_idle_timeout=0.1, max_trace_age=0.5))
    tracer = provider.get_tracer("travel.agent")
    root = _started_root(tracer, "Sunny.")
    with trace.use_span(root, end_on_exit=False):
        chat = tracer.start_span(
            "chat gemini-2.5-flash",
            attributes={
                semconv.GEN_AI_OPERATION_NAME: "chat",
                semconv.GEN_AI_INPUT_MESSAGES: _message("user", USER_TEXT),
                semconv.GEN_AI_OUTPUT_MESSAGES: _message("assistant", "Let me ask for approval."),
            },
        )
        chat.end()
        approval = tracer.start_span("execute_tool ask_approval", attributes={semconv.GEN_AI_TOOL_NAME: "ask_approval"})
    time.sleep(0.3)  # past the idle timeout, before the age limit: still waited for
    assert processor.force_flush(10_000)
    assert exporter.get_finished_requests() == []
    assert wait_until(lambda: len(exporter.get_finished_requests()) == 1)  # what was buffered, as it is
    assert processor.stats()["invocations.incomplete"] == 1
    assert "raise OTEL_EVAL_MAX_TRACE_AGE for longer runs" in caplog.text

    approval.end()
    root.end()
    assert processor.force_flush(10_000)
    assert len(exporter.get_finished_requests()) == 1  # never a second, partial invocation
    assert processor.stats().get(f"spans.dropped.{semconv.DROP_MAX_TRACE_AGE}") == 2
    assert processor.stats()["open_traces"] == 0
    processor.shutdown()


def test_in_the_evaluation_process_an_invocation_whose_spans_pause_is_evaluated_whole() -> None:
    # The evaluation process steps when spans come: another agent's spans keep it stepping past the idle timeout while
    # the slow invocation's model call runs.
    records: list[EvaluationRecord] = []
    settings = ProcessorSettings(trace_idle_timeout=0.3, isolation="process", metrics=("inference_call_count_v1",))
    processor = EvaluationSpanProcessor(settings=settings, sinks=[records.extend])
    provider = TracerProvider()
    provider.add_span_processor(processor)
    greeting = next(scenario for scenario in SCENARIOS if not scenario.tool_steps)
    two_tools = next(scenario for scenario in SCENARIOS if len(scenario.tool_steps) == 2)
    TravelAgent(provider).run(greeting)
    assert processor.force_flush(30_000)  # the evaluation process is up
    stop = threading.Event()

    def other_agent() -> None:
        agent = TravelAgent(provider)
        while not stop.is_set():
            agent.run(greeting)
            time.sleep(0.05)

    other = threading.Thread(target=other_agent)
    other.start()
    try:
        TravelAgent(provider, model_latency_seconds=1.0).run(two_tools)
    finally:
        stop.set()
        other.join()
    try:
        assert processor.force_flush(30_000)
        calls = sorted(record.score for record in records if record.score != 1)
        assert calls == [2]  # one invocation with both model calls, not two halves of one each
        assert processor.stats().get("evaluation_process.traces.idle_flushed", 0) == 0
    finally:
        provider.shutdown()
