"""Never blocking, never raising: a judge that hangs (the real judge client against a loopback Gemini server that
never answers) and a full embedded queue leave the agent's span creation untouched; every drop is counted, and
flush and shutdown honour their deadlines."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.demo import AGENT_NAME, SCENARIOS, TravelAgent
from tests.judge.fake_gemini import FakeGemini, hang_reply
from tests.judge.helpers import make_judge
from tests.processor.telemetry import Telemetry
from tests.waiting import wait_until

RUNS = 30


@pytest.fixture
def hanging_gemini() -> Iterator[FakeGemini]:
    server = FakeGemini(lambda model, body: hang_reply()).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.timeout(60)
def test_a_hanging_judge_and_a_full_queue_never_block_or_break_the_agent(
    telemetry: Telemetry, hanging_gemini: FakeGemini
) -> None:
    judge = make_judge(hanging_gemini, timeout_seconds=300, max_total_seconds=600, max_attempts=1)
    processor = EvaluationSpanProcessor(
        {"hallucinations_v1": 0.8},
        judge=judge,
        settings=ProcessorSettings(max_queue_size=2, concurrency=1),
        **telemetry.providers(),
    )
    telemetry.tracer_provider.add_span_processor(processor)
    telemetry.add_exporting_processor()
    agent = TravelAgent(telemetry.tracer_provider)

    answers = [agent.run(SCENARIOS[index % len(SCENARIOS)]) for index in range(RUNS)]

    assert len(answers) == RUNS
    invocations = [s for s in telemetry.finished_spans() if s.name == f"invoke_agent {AGENT_NAME}"]
    assert len(invocations) == RUNS  # every span was created and exported as without the processor
    assert wait_until(lambda: hanging_gemini.in_flight >= 1)  # the judge call is hanging
    assert processor.force_flush(200) is False  # the deadline passes: False, not a hang

    stats = processor.stats()
    assert 1 <= stats["invocations.sampled"] <= 4  # handed to the transport; the rest was shed before rebuilding
    queue_full = stats.get(f"invocations.dropped.{semconv.DROP_TRANSPORT_QUEUE_FULL}", 0)
    assert RUNS - 4 <= queue_full <= RUNS - 1  # at most 1 running + 1 waiting for a slot + 2 queued
    assert "invocations.evaluated" not in stats

    processor.shutdown(timeout_millis=300)
    processor.shutdown(timeout_millis=300)  # idempotent
    stats = processor.stats()
    abandoned = stats[f"invocations.dropped.{semconv.DROP_SHUTDOWN}"]
    assert queue_full + abandoned == RUNS  # every invocation is either evaluated or counted as dropped
    assert processor.force_flush(100) is False
    agent.run(SCENARIOS[0])  # after shutdown the processor ignores spans; the agent is unaffected
    assert processor.stats()["invocations.sampled"] == stats["invocations.sampled"]
