"""The OpenAI Agents SDK for JavaScript under OpenInference (recorded under Node.js by
``tests/data/frameworks/generate.py openai_agents_js``): its turns join one session only through the span processor
``docs/frameworks.md`` shows, which puts the SDK trace's group id on every span as ``session.id``."""

from __future__ import annotations

from dataclasses import replace

from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import read_trace_file
from tests.reconstruct.test_frameworks import FRAMEWORKS, load

MULTI_TURN = FRAMEWORKS / "openai_agents_js" / "multi_turn.record.json"


def test_turns_share_the_group_id_as_their_session() -> None:
    _, invocations, _ = load(MULTI_TURN)
    assert [i.session_id for i in invocations] == ["conversation-multi_turn"] * 2
    assert [i.agent_name for i in invocations] == ["weather_agent"] * 2


def test_without_the_processor_each_turn_is_a_conversation_of_its_own() -> None:
    """What the instrumentation writes by itself: no group id, no session id, on any span."""
    spans = read_trace_file(MULTI_TURN.with_name("multi_turn.otlp.json.gz")).spans
    bare = [replace(s, attributes={k: v for k, v in s.attributes.items() if k != "session.id"}) for s in spans]
    rebuilt = [i for t in rebuild_traces(bare) for i in t.invocations]
    assert len(rebuilt) == 2 and [i.session_id for i in rebuilt] == [None, None]
