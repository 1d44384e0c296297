"""The Kafka worker judging with a non-Gemini provider: the same evaluation core, the judge model named by the
criterion resolved as ADK resolves it (``anthropic/…`` through LiteLLM, ``gpt-*`` through ``openai``), each SDK over
HTTP to the loopback server speaking its protocol."""

from __future__ import annotations

import pytest

from otel_eval import semconv
from otel_eval.demo.gemini_server import LoopbackGemini
from otel_eval.demo.local_judge import scripted_verdicts
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.model.messages import EvaluationRecord
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, producer, random_topic, read_topic
from tests.transport._requests import request
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.usefixtures("clean_genai_env")]


@pytest.mark.parametrize(
    ("model", "protocol"),
    [("anthropic/claude-sonnet-4-5", "anthropic.messages"), ("gpt-4o-mini", "openai.chat_completions")],
)
async def test_the_worker_judges_with_the_criterions_provider(
    kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch, model: str, protocol: str
) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic])
    server = LoopbackGemini(scripted_verdicts).start()
    judge = JudgeClient(JudgeSettings(api_key="sk-test-worker-00000000000000000", base_url=server.base_url))
    telemetry = MemoryTelemetry()
    criteria = {"hallucinations_v1": {"threshold": 0.5, "judge_model_options": {"judge_model": model}}}
    worker = Worker(
        worker_settings(
            kafka_bootstrap,
            kafka_requests_topic=requests_topic,
            kafka_results_topic=results_topic,
            kafka_group_id=random_topic("group"),
        ),
        core=EvaluationCore(emitters=telemetry.emitters(), criteria=criteria, judge=judge, judge_configured=False),
        telemetry=telemetry.providers,
    )
    try:
        async with running_worker(worker):
            async with producer(kafka_bootstrap, acks="all") as prod:
                for i in range(3):
                    sent = request(i)
                    await prod.send(requests_topic, value=sent.model_dump_json().encode(), key=sent.trace_id.encode())
                await prod.flush()
            await wait_until_async(
                lambda: len([e for e in telemetry.events() if e.metric == "hallucinations_v1"]) >= 3,
                what="the judged results",
            )
    finally:
        server.stop()
    judged = [e for e in telemetry.events() if e.metric == "hallucinations_v1"]
    assert {(e.label, e.score, e.error_type) for e in judged} == {(semconv.LABEL_PASS, 1.0, None)}
    assert {r.protocol for r in server.generate_requests()} == {protocol}
    published = [
        EvaluationRecord.model_validate_json(r.value) for r in await read_topic(kafka_bootstrap, results_topic)
    ]
    assert {(r.judge_model, r.score) for r in published if r.metric_name == "hallucinations_v1"} == {(model, 1.0)}
    telemetry.shutdown()
