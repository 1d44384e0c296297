"""An invocation whose own spans name no session joins the session its nearest ancestor span names (the application's
request span above the agent's invocation span): for every convention, in the full and the plain rebuild; the
invocation's own session wins, the nearest ancestor wins over those above it, and a broken chain above (a cycle, a
self-parent, a chain 100,000 deep) is walked once and ends. ADK runs under an application span that names a session
of its own keep ADK's session and are not taken for an AgentTool's inner run."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval.reconstruct import Reads, rebuild_traces
from otel_eval.reconstruct.plain import PLAIN_READS
from otel_eval.reconstruct.sessions import SESSION_ID_KEYS
from otel_eval.traces import Span, spans_from_readable
from tests.reconstruct.adk_agents import adk_telemetry, run_turns, single_tool_scenario, span_exporter
from tests.reconstruct.session_turns import TURNS, genai_turn


@pytest.fixture
def recorded() -> Iterator[tuple[Any, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("app"), exporter
    provider.shutdown()


def _sessions(exporter: InMemorySpanExporter, reads: Reads = Reads.ALL) -> list[tuple[str, str, str | None]]:
    """(convention, root span name, session id) of every invocation rebuilt from the exported spans."""
    spans = spans_from_readable(exporter.get_finished_spans())
    names = {span.span_id: span.name for span in spans}
    found = []
    for rebuilt in rebuild_traces(spans, reads=reads):
        views = rebuilt.plain if reads in (PLAIN_READS,) and rebuilt.plain is not None else rebuilt.invocations
        found += [(rebuilt.convention, names[view.span_id], view.session_id) for view in views]
    return found


@pytest.mark.parametrize("reads", [Reads.ALL, PLAIN_READS], ids=["full", "plain"])
@pytest.mark.parametrize("key", SESSION_ID_KEYS)
@pytest.mark.parametrize("convention", sorted(TURNS))
def test_a_turn_naming_no_session_joins_the_one_its_application_span_names(
    recorded: tuple[Any, InMemorySpanExporter], convention: str, key: str, reads: Reads
) -> None:
    tracer, exporter = recorded
    with tracer.start_as_current_span("POST /chat", attributes={key: "chat-1"}):
        TURNS[convention](tracer, {})
    TURNS[convention](tracer, {})  # no span of its trace names a session: a conversation of its own
    ((first_convention, root, session), (_, _, alone)) = _sessions(exporter, reads)
    assert (first_convention, session, alone) == (convention, "chat-1", None)
    assert root != "POST /chat"  # the invocation is still the agent's, not the application span


def test_the_nearest_ancestor_names_the_session_and_the_invocations_own_session_wins(
    recorded: tuple[Any, InMemorySpanExporter],
) -> None:
    tracer, exporter = recorded
    outer = {"session.id": "outer"}
    with (
        tracer.start_as_current_span("POST /chat", attributes=outer),
        tracer.start_as_current_span("route", attributes={"gen_ai.conversation.id": "inner"}),
    ):
        genai_turn(tracer, {})
    with tracer.start_as_current_span("POST /chat", attributes=outer), tracer.start_as_current_span("route"):
        genai_turn(tracer, {})
    with tracer.start_as_current_span("POST /chat", attributes={"session.id": "outer"}):
        genai_turn(tracer, {"gen_ai.conversation.id": "own"})
    assert [session for *_, session in _sessions(exporter)] == ["inner", "outer", "own"]


def _span(span_id: str, parent: str | None, name: str, start: int, **attributes: Any) -> Span:
    return Span(
        trace_id="ab" * 16,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_time_ns=start,
        end_time_ns=10**9 - start,
        attributes=attributes,
    )


def _agent_below(parent: str) -> list[Span]:
    """A GenAI agent invocation (no session of its own) whose root's parent is ``parent``."""
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Hey"}]}]),
    }
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"}
    return [
        _span("a" * 16, parent, "invoke_agent helper", 10**6, **agent),
        _span("b" * 16, "a" * 16, "chat m", 2 * 10**6, **chat),
    ]


def _only_session(spans: list[Span]) -> tuple[str | None, list[str]]:
    (rebuilt,) = rebuild_traces(spans)
    (invocation,) = rebuilt.invocations
    assert invocation.span_id == "a" * 16
    return invocation.session_id, rebuilt.warnings


def test_a_chain_100000_deep_above_the_invocation_is_walked_once() -> None:
    depth = 100_000
    chain = [
        _span(f"{n + 1:016x}", f"{n:016x}" if n else None, "middleware", n, **({"session.id": "top"} if n == 0 else {}))
        for n in range(depth)
    ]
    assert _only_session([*chain, *_agent_below(f"{depth:016x}")]) == ("top", [])


def test_a_cycle_or_a_self_parent_above_the_invocation_ends_the_walk() -> None:
    cycle = [
        _span("c" * 16, "d" * 16, "loop", 1, **{"session.id": "loop"}),
        _span("d" * 16, "c" * 16, "loop", 2, **{"session.id": "loop"}),
    ]
    session, warnings = _only_session([*cycle, *_agent_below("c" * 16)])
    assert session == "loop" and any("parent links form a cycle" in w for w in warnings)
    looped = [_span("e" * 16, "e" * 16, "self", 1, **{"session.id": "self"})]
    session, warnings = _only_session([*looped, *_agent_below("e" * 16)])
    assert session == "self" and any("is its own parent" in w for w in warnings)
    unnamed = [dataclasses.replace(span, attributes={}) for span in cycle]
    assert _only_session([*unnamed, *_agent_below("c" * 16)])[0] is None


@pytest.mark.usefixtures("quiet_adk")
@pytest.mark.parametrize("schema", [1, 2])
async def test_an_adk_run_under_an_application_span_of_another_session_keeps_its_own(schema: int) -> None:
    """The application's request span names its own session id, ADK's spans ADK's: the run is not an AgentTool's
    inner run (which a span of another session above it would mean inside ADK), and its session is ADK's."""
    exporter = span_exporter()
    app_span = trace.get_tracer("app").start_as_current_span("POST /chat", attributes={"session.id": "app-session"})
    with adk_telemetry(schema=schema), app_span:
        run = await run_turns(single_tool_scenario(), session_id="adk-session")
    spans = spans_from_readable(exporter.get_finished_spans())
    assert any(span.name == "POST /chat" for span in spans) and run.readable_spans
    invocations = [invocation for rebuilt in rebuild_traces(spans) for invocation in rebuilt.invocations]
    assert [(i.convention, i.session_id) for i in invocations] == [("adk" if schema == 1 else "adk_v2", "adk-session")]
