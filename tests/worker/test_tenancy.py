"""Tenancy on the Collector path, through the real broker: a second tenant's spans with the first tenant's trace and
session ids never touch the first's scores (not its traces, not its session windows, not its results), and a span
of a trace already handed on is late: dropped and counted, never scored."""

from __future__ import annotations

import asyncio
import os
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_eval import semconv
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model import TracedInvocation
from otel_eval.model.messages import EvaluationRecord
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import spans_from_readable
from otel_eval.worker._tenancy import WORKER_TENANT_HEADER
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, producer, random_topic, read_topic
from tests.judge.fake_gemini import FakeGemini
from tests.judge.helpers import TEST_KEY
from tests.reconstruct.adk_agents import adk_telemetry
from tests.reconstruct.adk_sessions import record_sessions
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings
from tests.worker._multi_turn import CONFIG, MULTI_TURN, verdict

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.usefixtures("quiet_adk")]

TENANT_HEADER = "x-tenant"
PARTITIONS = 2


def _forged(message: ExportTraceServiceRequest) -> ExportTraceServiceRequest:
    """``message`` with every span id replaced (parents consistently): the same traces, the same session ids, the
    same content, other invocations."""
    forged = ExportTraceServiceRequest()
    forged.CopyFrom(message)
    ids: dict[bytes, bytes] = {}
    for resource_spans in forged.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                span.span_id = ids.setdefault(span.span_id, os.urandom(8))
                if span.parent_span_id:
                    span.parent_span_id = ids.setdefault(span.parent_span_id, os.urandom(8))
    return forged


def _roots_only(message: ExportTraceServiceRequest) -> ExportTraceServiceRequest:
    """The root spans of ``message`` alone: a bare forged invocation."""
    roots = ExportTraceServiceRequest()
    roots.CopyFrom(message)
    for resource_spans in roots.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            kept = [s for s in scope_spans.spans if not s.parent_span_id]
            del scope_spans.spans[:]
            scope_spans.spans.extend(kept)
    return roots


def _tenant(record: Any) -> str:
    return next((bytes(v).decode() for k, v in record.headers or () if k == WORKER_TENANT_HEADER), "")


async def _published(bootstrap: str, topic: str) -> dict[str, list[EvaluationRecord]]:
    by_tenant: dict[str, list[EvaluationRecord]] = defaultdict(list)
    for record in await read_topic(bootstrap, topic, idle=0.2):
        by_tenant[_tenant(record)].append(EvaluationRecord.model_validate_json(record.value))
    return by_tenant


async def _wait(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.3)


def _turn_keys(turns: list[TracedInvocation]) -> set[tuple[str, str]]:
    return {(t.trace_id, t.span_id) for t in turns}


async def test_a_second_tenants_spans_with_the_first_tenants_ids_never_touch_its_scores(kafka_bootstrap: str) -> None:
    with adk_telemetry(schema=2):
        recorded = await record_sessions()
    by_trace: dict[str, list[Any]] = defaultdict(list)
    for span in recorded.spans:
        by_trace[format(span.context.trace_id, "032x")].append(span)
    real = {trace_id: encode_spans(spans) for trace_id, spans in by_trace.items()}
    forged = {trace_id: _forged(message) for trace_id, message in real.items()}
    turns = [i for trace in rebuild_traces(spans_from_readable(recorded.spans)) for i in trace.invocations]
    assert len(turns) == 9 and len({t.session_id for t in turns}) == 3

    spans_topic, sessions_topic, results_topic = random_topic("spans"), random_topic("sessions"), random_topic("res")
    await create_topics(kafka_bootstrap, [spans_topic, sessions_topic, results_topic], partitions=PARTITIONS)
    async with producer(kafka_bootstrap, acks="all") as prod:  # as authenticated Collectors: a tenant header each
        for trace_id in real:  # interleaved: tenant b's copy of each trace lands while tenant a's is open
            for tenant, message in (("a", real[trace_id]), ("b", forged[trace_id])):
                value, key = message.SerializeToString(), trace_id.encode()
                await prod.send(spans_topic, value=value, key=key, headers=[(TENANT_HEADER, tenant.encode())])

    server = FakeGemini(verdict).start()
    judge = JudgeClient(JudgeSettings(api_key=TEST_KEY, base_url=server.base_url))
    telemetry = MemoryTelemetry()
    worker = Worker(
        worker_settings(
            kafka_bootstrap,
            worker_sources="otlp_spans,sessions",
            kafka_spans_topic=spans_topic,
            kafka_sessions_topic=sessions_topic,
            kafka_results_topic=results_topic,
            kafka_group_id=random_topic("group"),
            trace_idle_timeout=0.5,
            session_idle_timeout=1.5,
            tenant_header=TENANT_HEADER,
        ),
        core=EvaluationCore(criteria=CONFIG, judge=judge, emitters=telemetry.emitters()),
        telemetry=telemetry.providers,
    )

    async def judged_both() -> bool:
        published = await _published(kafka_bootstrap, results_topic)
        return all(sum(r.metric_name == MULTI_TURN for r in published[t]) >= len(turns) for t in ("a", "b"))

    try:
        async with running_worker(worker):
            await _wait(judged_both, "both tenants' sessions judged")
            # A bare root span forged into tenant a's evaluated traces (its trace ids travel in traceparent).
            async with producer(kafka_bootstrap, acks="all") as prod:
                for trace_id, message in real.items():
                    value = _roots_only(_forged(message)).SerializeToString()
                    await prod.send(spans_topic, value=value, key=trace_id.encode(), headers=[(TENANT_HEADER, b"a")])

            async def counted_late() -> bool:
                return worker.metrics.snapshot().get(f"spans.dropped.{semconv.DROP_LATE}", 0) >= len(real)

            await _wait(counted_late, "the late spans counted")
            await asyncio.sleep(2.0)  # a late invocation scored, or a window judged again, would be published now
    finally:
        await judge.aclose()
        server.stop()

    published = await _published(kafka_bootstrap, results_topic)
    assert set(published) == {"a", "b"}
    mine = published["a"]
    # Tenant a's results are of its own invocations only, each once, as if tenant b had sent nothing.
    assert {(r.trace_id, r.span_id) for r in mine} == _turn_keys(turns)
    own = [r for r in mine if r.session_window is None]
    assert len(own) == len({r.result_id for r in own}) == len(turns) * len(EFFICIENCY_METRICS)
    judged = [r for r in mine if r.metric_name == MULTI_TURN]
    assert len(judged) == len({r.result_id for r in judged}) == len(turns)
    for session_id in recorded.session_ids.values():  # one window per session over its own turns, none of b's
        windows = {
            (r.session_window, r.session_first_turn, r.session_last_turn) for r in judged if r.session_id == session_id
        }
        count = sum(t.session_id == session_id for t in turns)
        assert windows == {(0, 0, count - 1)}
    # Tenant b's copies are its own traces and sessions: scored apart, on other span ids, in the same trace ids.
    theirs = published["b"]
    assert {r.trace_id for r in theirs} == {t.trace_id for t in turns}
    assert not {(r.trace_id, r.span_id) for r in theirs} & _turn_keys(turns)
    assert sum(r.metric_name == MULTI_TURN for r in theirs) == len(turns)
    # The late roots were dropped and counted, never scored.
    assert worker.metrics.snapshot()[f"spans.dropped.{semconv.DROP_LATE}"] == len(real)
    telemetry.shutdown()
