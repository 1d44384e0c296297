"""Agent with the processor and the Kafka exporter -> tansu -> two workers in one group: every invocation is
evaluated exactly once, in the emitted telemetry and on the results topic."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import EvaluationSpanProcessor, semconv
from otel_eval.demo import AGENT_NAME, SCENARIOS, TravelAgent, golden_eval_set
from otel_eval.evaluation import find_golden_turn
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord
from otel_eval.transport.kafka import KafkaInvocationExporter
from otel_eval.worker.results import ResultLedger
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, random_topic, read_topic
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings

pytestmark = [pytest.mark.kafka, pytest.mark.integration]

REFERENCE_METRICS = {"tool_trajectory_avg_score", "response_match_score"}
ROUNDS = 5


def _expected_metrics(user_text: str) -> set[str]:
    matched = find_golden_turn(golden_eval_set().eval_cases, user_text) is not None
    return set(EFFICIENCY_METRICS) | (REFERENCE_METRICS if matched else set())


async def test_two_workers_evaluate_every_invocation_exactly_once(kafka_bootstrap: str) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic], partitions=4)
    group = random_topic("group")

    # The agent side: a real TracerProvider with the processor shipping requests to Kafka.
    agent_spans = InMemorySpanExporter()
    provider = TracerProvider()
    exporter = KafkaInvocationExporter(kafka_bootstrap, topic=requests_topic)
    processor = EvaluationSpanProcessor(exporter=exporter)
    provider.add_span_processor(processor)
    provider.add_span_processor(SimpleSpanProcessor(agent_spans))
    agent = TravelAgent(provider)

    telemetries = [MemoryTelemetry(), MemoryTelemetry()]
    workers = [
        Worker(
            worker_settings(
                kafka_bootstrap,
                kafka_requests_topic=requests_topic,
                kafka_results_topic=results_topic,
                kafka_group_id=group,
                worker_max_batch_size=4,
            ),
            core=EvaluationCore(eval_set=golden_eval_set(), emitters=t.emitters(), judge_configured=False),
            telemetry=t.providers,
        )
        for t in telemetries
    ]
    try:
        async with running_worker(workers[0]), running_worker(workers[1]):
            for round_ in range(ROUNDS):
                for index, scenario in enumerate(SCENARIOS):
                    await asyncio.to_thread(agent.run, scenario, conversation_id=f"c-{round_}-{index}")
            assert await asyncio.to_thread(processor.force_flush, 30_000)
            invocations = [s for s in agent_spans.get_finished_spans() if s.name == f"invoke_agent {AGENT_NAME}"]
            assert len(invocations) == ROUNDS * len(SCENARIOS)
            expected: dict[tuple[str, str], set[str]] = {}
            for span in invocations:
                text = str(span.attributes[semconv.GEN_AI_INPUT_MESSAGES])
                scenario = next(s for s in SCENARIOS if s.user_text in text)
                key = (format(span.context.trace_id, "032x"), format(span.context.span_id, "016x"))
                expected[key] = _expected_metrics(scenario.user_text)
            total = sum(len(m) for m in expected.values())
            await wait_until_async(
                lambda: sum(len(t.events()) for t in telemetries) >= total, timeout=90, what=f"{total} result events"
            )
            # Let any duplicate that was going to happen arrive before counting.
            await asyncio.sleep(1.0)
    finally:
        await asyncio.to_thread(processor.shutdown)

    events = [e for t in telemetries for e in t.events()]
    assert all(len(t.events()) > 0 for t in telemetries), "both workers of the group should have taken partitions"
    by_invocation: dict[tuple[str, str], list[str]] = {}
    for event in events:
        by_invocation.setdefault((event.trace_id, event.span_id), []).append(event.metric)
    assert set(by_invocation) == set(expected)
    for key, metrics in by_invocation.items():
        assert Counter(metrics) == Counter(expected[key]), key  # every metric exactly once
    assert len({e.result_id for e in events}) == len(events) == total
    spans = [s for t in telemetries for s in t.evaluation_spans()]
    assert len(spans) == total

    records = await read_topic(kafka_bootstrap, results_topic)
    published = [EvaluationRecord.model_validate_json(r.value) for r in records]
    assert len(published) == total
    assert {r.result_id for r in published} == {e.result_id for e in events}
    assert all(r.key.decode() == EvaluationRecord.model_validate_json(r.value).trace_id for r in records)
    totals = [w.metrics.snapshot() for w in workers]
    assert sum(t.get("results_published", 0) for t in totals) == total
    assert sum(t.get("duplicates_skipped", 0) for t in totals) == 0
    assert exporter.stats().dropped_total == 0
    # The workers' own metrics: batch durations, and a consumer lag of zero once everything is consumed.
    batches = [p for t in telemetries for p in t.metric_points(semconv.METRIC_BATCH_DURATION)]
    assert sum(p.count for p in batches) == sum(t.get("batches", 0) for t in totals) > 0
    lags = [p for t in telemetries for p in t.metric_points(semconv.METRIC_CONSUMER_LAG)]
    assert lags and all(p.value == 0 for p in lags)
    assert {p.attributes[semconv.KAFKA_TOPIC] for p in lags} == {requests_topic}
    for telemetry in telemetries:
        telemetry.shutdown()


def test_ledger_is_bounded_and_remembers_invocations() -> None:
    ledger = ResultLedger(capacity=2)
    records = [
        EvaluationRecord(
            result_id=f"r{i}", trace_id=f"t{i}", span_id=f"s{i}", metric_name="m", eval_status=1, label="pass"
        )
        for i in range(3)
    ]
    ledger.add(records)
    assert not ledger.has_result("r0") and ledger.has_result("r1") and ledger.has_result("r2")
    assert ledger.has_invocation("t2", "s2") and not ledger.has_invocation("t0", "s0")
    assert ledger.has_trace("t1")
    off = ResultLedger(capacity=0)
    off.add(records)
    assert not off.has_result("r2")
