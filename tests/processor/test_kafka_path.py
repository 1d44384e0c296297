"""``EvaluationSpanProcessor.from_env`` with ``OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS``: requests go to the real broker
(tansu), keyed by trace id, carrying the criteria and the golden case for a remote worker."""

from __future__ import annotations

import asyncio
import json

import pytest
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor
from otel_eval import environment_variables as env
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.model.messages import EvaluationRequest
from otel_eval.transport.kafka import KafkaInvocationExporter
from tests._kafka import create_topics, random_topic, read_topic

pytestmark = pytest.mark.kafka


async def test_from_env_sends_requests_to_kafka(kafka_bootstrap: str) -> None:
    topic = random_topic("requests")
    await create_topics(kafka_bootstrap, [topic])
    environ = {
        env.OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS: kafka_bootstrap,
        env.OTEL_EVAL_KAFKA_REQUESTS_TOPIC: topic,
        env.OTEL_EVAL_CRITERIA: json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0}}),
    }
    provider = TracerProvider()
    # The embedded worker's overrides do not apply with Kafka: the same one line serves both set-ups.
    processor = EvaluationSpanProcessor.from_env(environ, tracer_provider=provider, sinks=[print], concurrency=2)
    assert KafkaInvocationExporter.__name__ in repr(processor)
    provider.add_span_processor(processor)
    agent = TravelAgent(provider)
    for scenario in SCENARIOS[:3]:
        agent.run(scenario)
    assert await asyncio.to_thread(processor.force_flush, 30_000)
    records = await read_topic(kafka_bootstrap, topic, expected=3)
    requests = [EvaluationRequest.model_validate_json(record.value) for record in records]
    assert sorted(r.invocations[0].invocation.user_content.parts[0].text for r in requests) == sorted(
        s.user_text for s in SCENARIOS[:3]
    )
    assert all(record.key.decode() == request.trace_id for record, request in zip(records, requests, strict=True))
    assert all(r.criteria == {"tool_trajectory_avg_score": {"threshold": 1.0}} for r in requests)
    await asyncio.to_thread(provider.shutdown)
