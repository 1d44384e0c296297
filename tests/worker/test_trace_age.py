"""The Collector path bounds a trace's age: a trace whose spans keep coming (a long-running root whose periodic
children never leave it idle for the idle timeout) is handed on once its spans span ``max_trace_age`` (their own
timestamps), as when it reaches ``max_spans_per_trace``: its later spans are dropped (``max_trace_age``), and it no
longer holds its partition's committed offset at its first record."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import semconv
from otel_eval.demo import SCENARIOS, TravelAgent, golden_eval_set
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.traces import spans_from_readable
from otel_eval.worker.collector_path import TraceAssembler
from otel_eval.worker.service import Worker
from tests._kafka import committed_offset, create_topics, producer, random_topic
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings

MAX_AGE = 100.0
SHIFTS = (0.0, 50.0, 150.0, 200.0)
"""Seconds each run is moved by: the third takes the trace past ``MAX_AGE``."""


def _runs() -> list[list[ReadableSpan]]:
    """Four agent invocations under one root that never ends (one trace), each run moved by its :data:`SHIFTS`."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = TravelAgent(provider)
    lifelong = provider.get_tracer("daemon").start_span("serve forever")
    runs, seen = [], 0
    with trace.use_span(lifelong, end_on_exit=False):
        for index, shift in enumerate(SHIFTS):
            agent.run(SCENARIOS[index % len(SCENARIOS)], conversation_id=f"c{index}")
            finished = exporter.get_finished_spans()
            runs.append(_shifted(finished[seen:], shift))
            seen = len(finished)
    return runs


def _shifted(spans: Sequence[ReadableSpan], seconds: float) -> list[ReadableSpan]:
    delta = int(seconds * 1e9)
    return [
        ReadableSpan(
            name=s.name,
            context=s.context,
            parent=s.parent,
            resource=s.resource,
            attributes=s.attributes,
            events=s.events,
            links=s.links,
            kind=s.kind,
            status=s.status,
            start_time=(s.start_time or 0) + delta,
            end_time=(s.end_time or 0) + delta,
            instrumentation_scope=s.instrumentation_scope,
        )
        for s in spans
    ]


def _invocation_span_id(run: Sequence[ReadableSpan]) -> str:
    (agent,) = (s for s in run if s.name.startswith("invoke_agent"))
    return format(agent.context.span_id, "016x")


def test_a_trace_past_its_age_is_handed_on_and_its_later_spans_dropped() -> None:
    runs = _runs()
    assembler = TraceAssembler(idle_timeout=60.0, max_trace_age=MAX_AGE, clock=lambda: 0.0)  # never idle
    for offset, run in enumerate(runs[:2]):
        assembler.add(0, offset, spans_from_readable(run))
    assert assembler.ready() == [] and assembler.committable(0, 2) == 0  # 50 s old: held open
    assembler.add(0, 2, spans_from_readable(runs[2]))  # its first span is 150 s after the trace's first
    (aged,) = assembler.ready()
    assert len(aged.spans) == len(runs[0]) + len(runs[1]) + 1
    assembler.add(0, 3, spans_from_readable(runs[3]))
    assert len(assembler) == 0 and assembler.committable(0, 4) == 4
    assert assembler.take_span_drops() == {semconv.DROP_MAX_TRACE_AGE: len(runs[2]) - 1 + len(runs[3])}


@pytest.mark.kafka
@pytest.mark.integration
async def test_a_trace_that_never_goes_idle_is_scored_at_its_age_and_committed(kafka_bootstrap: str) -> None:
    spans_topic, group = random_topic("otlp_spans"), random_topic("group")
    await create_topics(kafka_bootstrap, [spans_topic], partitions=1)
    telemetry = MemoryTelemetry()
    worker = Worker(
        worker_settings(
            kafka_bootstrap,
            worker_sources="otlp_spans",
            kafka_spans_topic=spans_topic,
            kafka_results_topic="",
            kafka_sessions_topic="",
            kafka_group_id=group,
            trace_idle_timeout=600.0,  # longer than the test: only its age hands the trace on
            max_trace_age=MAX_AGE,
        ),
        core=EvaluationCore(eval_set=golden_eval_set(), emitters=telemetry.emitters(), judge_configured=False),
        telemetry=telemetry.providers,
    )
    runs = _runs()
    trace_id = format(runs[0][0].context.trace_id, "032x")

    def dropped() -> int:
        return int(worker.metrics.snapshot().get(f"spans.dropped.{semconv.DROP_MAX_TRACE_AGE}", 0))

    async with running_worker(worker), producer(kafka_bootstrap) as prod:
        for run in runs:  # one record per run, as a Collector exporting every few seconds writes them
            await prod.send_and_wait(spans_topic, encode_spans(run).SerializeToString(), key=trace_id.encode())
        await wait_until_async(lambda: dropped() == len(runs[2]) - 1 + len(runs[3]), timeout=30, what="late spans")
        await wait_until_async(
            lambda: {e.span_id for e in telemetry.events()} >= {_invocation_span_id(r) for r in runs[:2]},
            timeout=30,
            what="the first two invocations scored",
        )
        assert {e.span_id for e in telemetry.events()} == {_invocation_span_id(r) for r in runs[:2]}
        await wait_until_async(
            lambda: worker.assembler.committable(0, len(runs)) == len(runs), timeout=5, what="nothing held open"
        )
    assert await committed_offset(kafka_bootstrap, group, spans_topic) == len(runs)
    telemetry.shutdown()
