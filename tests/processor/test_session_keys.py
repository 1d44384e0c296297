"""One rule names a turn's session (``otel_eval.reconstruct.sessions``): the processor samples a session by the id its
turns are then grouped by, for every convention's reader, even when one span names two different sessions. And on
every recorded trace, the id the sampler reads from the local root and the spans buffered under it is the session id
of each invocation rebuilt from that trace."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import ProcessorSettings
from otel_eval.reconstruct import group_by_trace, rebuild_traces
from otel_eval.reconstruct.sessions import SESSION_ID_KEYS, session_id_of
from otel_eval.transport import InMemoryInvocationExporter
from tests.processor.telemetry import attach
from tests.reconstruct.recorded import ALL_TRACE_FILES, file_spans
from tests.reconstruct.session_turns import TURNS

RATE = 0.5


def _in_sample(session_id: str) -> bool:
    digest = hashlib.blake2b(session_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") < round(RATE * (1 << 64))


KEPT = next(f"kept-{n}" for n in range(100) if _in_sample(f"kept-{n}"))
LEFT_OUT = next(f"left-{n}" for n in range(100) if not _in_sample(f"left-{n}"))


PAIRS = [(first, second) for i, first in enumerate(SESSION_ID_KEYS) for second in SESSION_ID_KEYS[i + 1 :]]


@pytest.mark.parametrize("convention", sorted(TURNS))
@pytest.mark.parametrize(("preferred", "other"), PAIRS, ids=[f"{a}>{b}" for a, b in PAIRS])
def test_a_turn_naming_two_sessions_is_sampled_and_grouped_by_the_same_one(
    provider: TracerProvider, exporter: InMemoryInvocationExporter, convention: str, preferred: str, other: str
) -> None:
    """The root names one session under ``preferred`` and another under ``other``: the turn is in the sample by the
    preferred one, so it must be grouped (session id, Kafka record key) by it too; a reader that preferred the other
    key put a sampled turn into a session left out of the sample, whose conversation-level metrics never ran."""
    processor = attach(provider, exporter, settings=ProcessorSettings(sample_rate=RATE))
    TURNS[convention](provider.get_tracer("app"), {preferred: KEPT, other: LEFT_OUT})
    TURNS[convention](provider.get_tracer("app"), {preferred: LEFT_OUT, other: KEPT})
    assert processor.force_flush(30_000)
    (request,) = exporter.get_finished_requests()
    ((invocation,),) = [request.invocations]
    assert (invocation.convention, invocation.session_id, request.record_key) == (convention, KEPT, KEPT)
    processor.shutdown()


RECORDED = [path for path in ALL_TRACE_FILES if path.parent.name != "hostile"]
"""Every recorded trace (the hostile ones are typed to break readers, not written by an instrumentation)."""


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_on_every_recorded_trace_the_sampled_session_is_each_rebuilt_invocations(path: Path) -> None:
    """The sampler reads the local root above the invocation, then the spans buffered (in the order they ended); the
    reader, the invocation's own spans. Both name the same session (or none) on what real instrumentations write."""
    for trace_spans in group_by_trace(file_spans(path)).values():
        by_id = {span.span_id: span for span in trace_spans}
        ended = sorted(trace_spans, key=lambda span: span.end_time_ns)
        for trace in rebuild_traces(trace_spans):
            for invocation in trace.invocations:
                local_root = by_id[invocation.span_id]
                seen = {local_root.span_id}
                while local_root.parent_span_id in by_id and local_root.parent_span_id not in seen:
                    local_root = by_id[local_root.parent_span_id]
                    seen.add(local_root.span_id)
                sampled = session_id_of([local_root, *ended])
                assert sampled == invocation.session_id, (invocation.span_id, sampled, invocation.session_id)
