"""Agent with priority sampling below rate 1 and the Kafka exporter -> tansu -> a worker: the invocations priority
sampling rescued carry ``otel_eval.priority.reason`` to the worker's result events, evaluation spans, score series and
the results topic; the ones in the sample carry nothing."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.model.messages import EvaluationRecord
from otel_eval.transport.kafka import KafkaInvocationExporter
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, random_topic, read_topic
from tests.processor.test_rescued_results import RATE, _ChosenTraceIds, _workload
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings

pytestmark = [pytest.mark.kafka, pytest.mark.integration]


async def test_the_worker_gives_rescued_results_the_reason(kafka_bootstrap: str) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic])
    ids = _ChosenTraceIds()
    provider = TracerProvider(id_generator=ids)
    exporter = KafkaInvocationExporter(kafka_bootstrap, topic=requests_topic)
    processor = EvaluationSpanProcessor(exporter=exporter, settings=ProcessorSettings(sample_rate=RATE))
    provider.add_span_processor(processor)
    telemetry = MemoryTelemetry()
    worker = Worker(
        worker_settings(
            kafka_bootstrap,
            kafka_requests_topic=requests_topic,
            kafka_results_topic=results_topic,
            kafka_group_id=random_topic("group"),
        ),
        core=EvaluationCore(emitters=telemetry.emitters(), judge_configured=False, metric_names=["tool_call_count_v1"]),
        telemetry=telemetry.providers,
    )
    try:
        async with running_worker(worker):
            expected = await asyncio.to_thread(_workload, provider, ids)
            assert await asyncio.to_thread(processor.force_flush, 30_000)
            await wait_until_async(lambda: len(telemetry.events()) >= len(expected), timeout=60, what="results")
    finally:
        await asyncio.to_thread(processor.shutdown)

    reasons = {
        format(data.log_record.trace_id, "032x"): data.log_record.attributes.get(semconv.OTEL_EVAL_PRIORITY_REASON)
        for data in telemetry.logs.get_finished_logs()
        if data.log_record.event_name == semconv.EVALUATION_RESULT_EVENT
    }
    assert reasons == expected
    spans = {
        format(s.context.trace_id, "032x"): s.attributes.get(semconv.OTEL_EVAL_PRIORITY_REASON)
        for s in telemetry.evaluation_spans()
    }
    assert spans == expected
    series = {
        p.attributes.get(semconv.OTEL_EVAL_PRIORITY_REASON): p.value
        for p in telemetry.metric_points(semconv.METRIC_EVALUATION_RESULTS)
    }
    assert series == {reason: list(expected.values()).count(reason) for reason in set(expected.values())}
    published = {}
    for message in await read_topic(kafka_bootstrap, results_topic, expected=len(expected)):
        record = EvaluationRecord.model_validate_json(message.value)
        published[record.trace_id] = record.priority_reason
        assert (b'"priority_reason"' in message.value) == (record.priority_reason is not None)  # only when set
    assert published == expected
    telemetry.shutdown()
