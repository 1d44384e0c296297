"""Sampling by session: with a sample rate below 1 (and priority sampling, the default), a session's turns are
evaluated all or none, decided from a stable hash of the session id whether the root or a span under it names it;
a trace without a session id is sampled by its trace id; both isolations decide the same way."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
from collections import defaultdict
from dataclasses import replace

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.emit.enrichment import score_attribute
from otel_eval.evaluation.sessions import SessionLimits
from otel_eval.model.messages import EvaluationRecord
from otel_eval.processor._selection import is_sampled, sampling_bound
from otel_eval.transport import InMemoryInvocationExporter
from tests.metrics.custom_metrics_fixture import TURNS_IN_CONVERSATION_CONFIG
from tests.processor.telemetry import attach, hex_id
from tests.waiting import wait_until

RATE = 0.5
SESSIONS = 24
TURNS = 3
SESSIONLESS = 12


def _session_in(session_id: str, rate: float) -> bool:
    """The documented rule, worked out here on its own: a 64-bit BLAKE2b of the id under the trace-id bound."""
    digest = hashlib.blake2b(session_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") < round(rate * (1 << 64))


def _workload(provider: TracerProvider) -> tuple[dict[str, list[str]], list[str]]:
    """Interleaved turns of many sessions (half named by the root, half by a span under it), and traces without a
    session id. Returns each session's trace ids and the session-less trace ids (32 hex digits)."""
    sessions: dict[str, list[str]] = defaultdict(list)
    recorder = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(recorder))
    for turn in range(TURNS):
        for number in range(SESSIONS):
            session = f"conversation-{number}"
            sessions[session].append(_turn(provider, recorder, turn, session, web_root=number % 2 == 0))
    sessionless = [_turn(provider, recorder, n, None, web_root=n % 2 == 0) for n in range(SESSIONLESS)]
    return sessions, sessionless


def _turn(
    provider: TracerProvider, recorder: InMemorySpanExporter, index: int, session: str | None, *, web_root: bool
) -> str:
    """One turn of ``session``; with ``web_root`` under a ``POST /chat`` local root, so only a span under it names
    the session (as under ADK's ``invocation`` root). Returns its trace id."""
    recorder.clear()
    scenario = SCENARIOS[index % len(SCENARIOS)]
    if web_root:
        with provider.get_tracer("web.server").start_as_current_span("POST /chat"):
            TravelAgent(provider).run(scenario, conversation_id=session)
    else:
        TravelAgent(provider).run(scenario, conversation_id=session)
    (trace_id,) = {span.context.trace_id for span in recorder.get_finished_spans()}
    return hex_id(trace_id, 32)


def _expected(sessions: dict[str, list[str]], sessionless: list[str]) -> set[str]:
    bound = sampling_bound(RATE)
    kept = {t for session, ids in sessions.items() if _session_in(session, RATE) for t in ids}
    return kept | {t for t in sessionless if is_sampled(int(t, 16), bound)}


def _assert_whole_sessions(evaluated: set[str], sessions: dict[str, list[str]]) -> None:
    split = {s: ids for s, ids in sessions.items() if 0 < len(evaluated & set(ids)) < len(ids)}
    assert split == {}, "sessions evaluated in part"
    whole = sum(set(ids) <= evaluated for ids in sessions.values())
    assert SESSIONS * RATE / 2 <= whole <= SESSIONS * RATE * 1.5  # about rate x sessions


def test_a_session_is_evaluated_whole_or_left_out_and_a_trace_without_one_by_its_trace_id(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    processor = attach(provider, exporter, settings=ProcessorSettings(sample_rate=RATE))
    sessions, sessionless = _workload(provider)
    assert processor.force_flush(30_000)
    requests = exporter.get_finished_requests()
    evaluated = {r.trace_id for r in requests}
    _assert_whole_sessions(evaluated, sessions)
    assert evaluated == _expected(sessions, sessionless)
    assert {r.record_key for r in requests if r.record_key in sessions} == {s for s in sessions if _session_in(s, RATE)}
    stats = processor.stats()
    total = SESSIONS * TURNS + SESSIONLESS
    assert stats["invocations.sampled"] == len(evaluated)
    assert stats["invocations.sampled_out"] == total - len(evaluated)  # counted as before, not as a loss
    assert not any(key.startswith("invocations.dropped") for key in stats)
    assert (stats["open_traces"], stats["buffered_spans"]) == (0, 0)
    processor.shutdown()


def test_a_left_out_session_keeps_the_priority_rescue_of_an_errored_turn(
    provider: TracerProvider, exporter: InMemoryInvocationExporter
) -> None:
    left_out = next(f"s-{n}" for n in range(100) if not _session_in(f"s-{n}", RATE))
    processor = attach(provider, exporter, settings=ProcessorSettings(sample_rate=RATE))
    agent = TravelAgent(provider)
    agent.run(SCENARIOS[2], conversation_id=left_out)
    with provider.get_tracer("web.server").start_as_current_span("POST /chat") as root:
        agent.run(SCENARIOS[2], conversation_id=left_out)
        root.set_attribute("user.feedback", "thumbs_down")
    assert processor.force_flush(30_000)
    assert [r.trace_id for r in exporter.get_finished_requests()] == [hex_id(root.get_span_context().trace_id, 32)]
    stats = processor.stats()
    assert (stats["invocations.priority_sampled.negative_feedback"], stats["invocations.sampled_out"]) == (1, 1)
    processor.shutdown()


def test_a_rescued_turn_of_a_left_out_session_is_not_judged_as_a_session_of_its_own(
    provider: TracerProvider, caplog: pytest.LogCaptureFixture
) -> None:
    """The rescued turn gets its per-invocation scores; its session, left out, gets no conversation-level score (it
    would be judged from that one turn: a conversation with its other turns missing). A session in the sample is."""
    kept = next(f"s-{n}" for n in range(100) if _session_in(f"s-{n}", RATE))
    left_out = next(f"s-{n}" for n in range(100) if not _session_in(f"s-{n}", RATE))
    config = {
        "criteria": {"turns_in_conversation": {"threshold": 0.0}},
        "custom_metrics": {"turns_in_conversation": TURNS_IN_CONVERSATION_CONFIG},
    }
    records: list[EvaluationRecord] = []
    settings = ProcessorSettings(
        sample_rate=RATE,
        metrics=("turns_in_conversation", "tool_call_count_v1"),
        sessions=SessionLimits(idle_timeout=0.3),
    )
    processor = EvaluationSpanProcessor(config, settings=settings, sinks=[records.extend])
    provider.add_span_processor(processor)
    agent = TravelAgent(provider)
    for session in (kept, left_out):
        agent.run(SCENARIOS[2], conversation_id=session)
    with provider.get_tracer("web.server").start_as_current_span("POST /chat") as root:
        agent.run(SCENARIOS[2], conversation_id=left_out)
        root.set_attribute("user.feedback", "thumbs_down")
    agent.run(SCENARIOS[2], conversation_id=kept)
    assert processor.force_flush(30_000)
    assert wait_until(lambda: any(r.metric_name == "turns_in_conversation" for r in records), timeout=30)
    processor.shutdown(30_000)
    per_turn = {(r.session_id, r.trace_id) for r in records if r.metric_name == "tool_call_count_v1"}
    assert sorted(session for session, _ in per_turn) == [kept, kept, left_out]
    assert (left_out, hex_id(root.get_span_context().trace_id, 32)) in per_turn
    judged = {(r.session_id, r.score) for r in records if r.metric_name == "turns_in_conversation" and r.score}
    assert judged == {(kept, 2.0)}
    # A custom metric named in ``metrics`` is known to the start-up judge check too (it raised "unknown metric").
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


@pytest.mark.integration
@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_both_isolations_evaluate_the_same_whole_sessions(isolation: str) -> None:
    records: list[EvaluationRecord] = []
    settings = ProcessorSettings(sample_rate=RATE, metrics=("tool_call_count_v1",))
    processor = EvaluationSpanProcessor(settings=replace(settings, isolation=isolation), sinks=[records.extend])
    provider = TracerProvider()
    provider.add_span_processor(processor)
    sessions, sessionless = _workload(provider)
    expected = _expected(sessions, sessionless)
    assert processor.force_flush(60_000)
    try:
        assert wait_until(lambda: len({r.trace_id for r in records}) >= len(expected), timeout=30)
        evaluated = {r.trace_id for r in records}
        _assert_whole_sessions(evaluated, sessions)
        assert evaluated == expected
    finally:
        processor.shutdown(30_000)


class _LeftOutTraceIds(RandomIdGenerator):
    """Trace ids whose low 64 bits are above every bound below 1: each trace is left out by its trace id."""

    def generate_trace_id(self) -> int:
        return (super().generate_trace_id() >> 64 << 64) | ((1 << 64) - 1 - random.getrandbits(8))


def test_a_root_that_names_no_session_is_held_for_the_scores_its_sessions_sample_brings() -> None:
    kept = next(f"s-{n}" for n in range(100) if _session_in(f"s-{n}", RATE))
    exported = InMemorySpanExporter()
    provider = TracerProvider(id_generator=_LeftOutTraceIds())
    settings = ProcessorSettings(sample_rate=RATE, metrics=("tool_call_count_v1",))
    processor = EvaluationSpanProcessor(
        settings=settings, enrich=SimpleSpanProcessor(exported), tracer_provider=provider, enrichment_wait_seconds=60
    )
    provider.add_span_processor(processor)
    for session in (kept, None):
        with provider.get_tracer("web.server").start_as_current_span("POST /chat", attributes={"turn": str(session)}):
            TravelAgent(provider).run(SCENARIOS[0], conversation_id=session)
    assert processor.force_flush(30_000)
    roots = {s.attributes["turn"]: s.attributes for s in exported.get_finished_spans() if s.name == "POST /chat"}
    assert roots[kept][score_attribute("tool_call_count_v1")] == 1.0  # its child names a session in the sample
    assert not any(key.startswith("gen_ai.evaluation.") for key in roots["None"])  # left out, released unscored
    provider.shutdown()


@pytest.mark.parametrize("schema", [1, 2])
@pytest.mark.parametrize("rate", [0.3, 0.7])
def test_real_adk_sessions_are_sampled_whole_by_the_session_id_adk_writes(
    exporter: InMemoryInvocationExporter, schema: int, rate: float
) -> None:
    """ADK's own spans (both telemetry schemas), not ours: its ``invocation`` root names no session, the spans under
    it do (``gcp.vertex.agent.session_id``, ``gen_ai.conversation.id``); each session's turns are in or out together,
    as the rule says for the session id ADK wrote."""
    from tests.reconstruct.adk_agents import adk_telemetry
    from tests.reconstruct.adk_sessions import record_sessions

    with adk_telemetry(schema=schema):
        recorded = asyncio.run(record_sessions())
    provider = TracerProvider()
    processor = attach(provider, exporter, settings=ProcessorSettings(sample_rate=rate))
    for span in sorted(recorded.spans, key=lambda s: s.end_time or 0):
        processor.on_end(span)
    assert processor.force_flush(30_000)
    processor.shutdown()
    evaluated: dict[str, int] = defaultdict(int)
    for request in exporter.get_finished_requests():
        for invocation in request.invocations:
            evaluated[invocation.session_id or ""] += 1
    expected = {
        recorded.session_ids[name]: len(turns)
        for name, turns in recorded.invocations.items()
        if _session_in(recorded.session_ids[name], rate)
    }
    assert dict(evaluated) == expected
