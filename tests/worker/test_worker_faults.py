"""Faults with counts asserted: poison messages, a judge outage, a worker killed mid-batch, SIGTERM."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import pytest

from otel_eval import semconv
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.judge import JUDGE_SERVER_ERROR, JudgeClient, JudgeSettings
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.worker.service import Worker
from tests._kafka import TansuBroker, TcpProxy, create_topics, free_port, producer, random_topic, read_topic
from tests.judge.fake_gemini import FakeGemini, error_reply
from tests.transport._requests import request
from tests.waiting import wait_until_async
from tests.worker._harness import (
    MemoryTelemetry,
    OtlpSink,
    running_worker,
    start_worker_process,
    worker_settings,
)

pytestmark = [pytest.mark.kafka, pytest.mark.integration]


def _core(telemetry: MemoryTelemetry, **options: object) -> EvaluationCore:
    options.setdefault("judge_configured", False)
    return EvaluationCore(emitters=telemetry.emitters(), **options)  # type: ignore[arg-type]


async def _produce(bootstrap: str, topic: str, values: list[tuple[bytes | None, bytes]]) -> None:
    async with producer(bootstrap, acks="all") as prod:
        for key, value in values:
            await prod.send(topic, value=value, key=key)
        await prod.flush()


def _json(request_: EvaluationRequest) -> tuple[bytes, bytes]:
    return request_.trace_id.encode(), request_.model_dump_json().encode()


async def test_poison_messages_are_dead_lettered_and_the_rest_processed(kafka_bootstrap: str) -> None:
    requests_topic, dead_topic = random_topic("requests"), random_topic("dead")
    good = [request(i) for i in range(6)]
    wrong_version = json.loads(good[0].model_dump_json()) | {"schema_version": 99}
    bad_field = json.loads(good[1].model_dump_json())
    bad_field["invocations"][0]["trace_id"] = 12
    poison: list[tuple[bytes | None, bytes]] = [
        (b"k1", b"\x00\x01 definitely not json"),
        (b"k2", json.dumps(wrong_version).encode()),
        (None, json.dumps(bad_field).encode()),
    ]
    values = [_json(good[0]), poison[0], _json(good[1]), _json(good[2]), poison[1], _json(good[3]), poison[2]]
    values += [_json(r) for r in good[4:]]
    await create_topics(kafka_bootstrap, [requests_topic, dead_topic], partitions=1)  # offsets below are exact
    await _produce(kafka_bootstrap, requests_topic, values)

    telemetry = MemoryTelemetry()
    worker = Worker(
        worker_settings(
            kafka_bootstrap,
            kafka_requests_topic=requests_topic,
            kafka_dead_letter_topic=dead_topic,
            kafka_results_topic="",
            kafka_group_id=random_topic("group"),
        ),
        core=_core(telemetry),
        telemetry=telemetry.providers,
    )
    async with running_worker(worker):
        expected = len(good) * len(EFFICIENCY_METRICS)
        await wait_until_async(lambda: len(telemetry.events()) >= expected, what=f"{expected} result events")

    events = telemetry.events()
    assert len(events) == expected
    assert {e.trace_id for e in events} == {r.trace_id for r in good}
    assert worker.metrics.snapshot()["dead_letters"] == 3
    dead = await read_topic(kafka_bootstrap, dead_topic, expected=3)
    assert len(dead) == 3
    assert [d.value for d in dead] == [value for _, value in poison]
    assert [d.key for d in dead] == [key for key, _ in poison]
    headers = [dict(d.headers) for d in dead]
    assert [h[semconv.HEADER_DEAD_LETTER_TOPIC].decode() for h in headers] == [requests_topic] * 3
    assert [int(h[semconv.HEADER_DEAD_LETTER_OFFSET]) for h in headers] == [1, 4, 6]
    assert "not JSON" in headers[0][semconv.HEADER_DEAD_LETTER_ERROR].decode()
    assert "schema_version 99 is not supported" in headers[1][semconv.HEADER_DEAD_LETTER_ERROR].decode()
    assert "invocations.0.trace_id" in headers[2][semconv.HEADER_DEAD_LETTER_ERROR].decode()
    assert {h[semconv.HEADER_DEAD_LETTER_ERROR_TYPE].decode() for h in headers} == {"InputError"}
    telemetry.shutdown()


async def test_judge_outage_gives_not_evaluated_and_the_worker_keeps_consuming(kafka_bootstrap: str) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    server = FakeGemini(lambda model, body: error_reply(503, "the judge is down")).start()
    judge = JudgeClient(
        JudgeSettings(
            api_key="AIzaSyTEST-not-a-real-key-0000000000000",
            base_url=server.base_url,
            timeout_seconds=2.0,
            max_attempts=2,
            initial_backoff_seconds=0.01,
            max_backoff_seconds=0.05,
            max_total_seconds=5.0,
        )
    )
    telemetry = MemoryTelemetry()
    worker = Worker(
        worker_settings(
            kafka_bootstrap,
            kafka_requests_topic=requests_topic,
            kafka_results_topic=results_topic,
            kafka_group_id=random_topic("group"),
        ),
        core=_core(telemetry, criteria={"hallucinations_v1": {"threshold": 0.5}}, judge=judge),
        telemetry=telemetry.providers,
    )
    judge.use_meter_provider(telemetry.providers.meter_provider)
    per_request = 1 + len(EFFICIENCY_METRICS)
    try:
        async with running_worker(worker):
            first = [request(i) for i in range(4)]
            await _produce(kafka_bootstrap, requests_topic, [_json(r) for r in first])
            await wait_until_async(
                lambda: len(telemetry.events()) >= 4 * per_request, what="the first requests' results"
            )
            # Still consuming during the outage: later requests are evaluated too.
            later = [request(10 + i) for i in range(3)]
            await _produce(kafka_bootstrap, requests_topic, [_json(r) for r in later])
            await wait_until_async(
                lambda: len(telemetry.events()) >= 7 * per_request, what="the later requests' results"
            )
    finally:
        server.stop()

    events = telemetry.events()
    judged = [e for e in events if e.metric == "hallucinations_v1"]
    assert len(judged) == 7
    assert {(e.label, e.error_type, e.score) for e in judged} == {
        (semconv.LABEL_NOT_EVALUATED, JUDGE_SERVER_ERROR, None)
    }
    efficiency = [e for e in events if e.metric in EFFICIENCY_METRICS]
    assert len(efficiency) == 7 * len(EFFICIENCY_METRICS)
    assert all(e.error_type is None for e in efficiency)
    assert server.generate_requests()  # the judge was really called (it may stop calling a judge that is down)
    calls = {
        p.attributes[semconv.OTEL_EVAL_OUTCOME]: p.value
        for p in telemetry.metric_points(semconv.METRIC_JUDGE_CALLS)
        if p.attributes[semconv.GEN_AI_EVALUATION_NAME] == "hallucinations_v1"
    }
    assert calls.get("error", 0) >= 1 and calls.get("ok", 0) == 0
    published = [
        EvaluationRecord.model_validate_json(r.value) for r in await read_topic(kafka_bootstrap, results_topic)
    ]
    assert len(published) == 7 * per_request
    assert {r.error_type for r in published if r.metric_name == "hallucinations_v1"} == {JUDGE_SERVER_ERROR}
    telemetry.shutdown()


async def test_a_worker_killed_mid_batch_loses_nothing_and_duplicates_nothing(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic], partitions=2)
    group = random_topic("group")
    sent = [request(i) for i in range(24)]
    await _produce(kafka_bootstrap, requests_topic, [_json(r) for r in sent])
    expected = len(sent) * len(EFFICIENCY_METRICS)

    # Worker A exports its telemetry to a backend that gets stuck on A's third batch: A is then inside the batch
    # (evaluated, emitted to its SDK, not yet exported, published or committed) when it is killed.
    sink = OtlpSink(hang_traces_after=2).start()
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_BSP_SCHEDULE_DELAY": "600000",  # export only when the worker flushes, before each commit
        "OTEL_BLRP_SCHEDULE_DELAY": "600000",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "60",
        "OTEL_EVAL_WORKER_FLUSH_TIMEOUT": "60",
        "OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000",
    }
    args = ["--bootstrap-servers", kafka_bootstrap, "--requests-topic", requests_topic]
    args += ["--results-topic", results_topic, "--group-id", group, "--max-batch-size", "3", "--concurrency", "2"]
    worker_a = start_worker_process([*args, "--telemetry", "otlp"], env, tmp_path / "worker-a.log")
    try:
        await wait_until_async(sink.hanging.is_set, timeout=60, what="worker A to get stuck in its third batch")
        worker_a.send_signal(signal.SIGKILL)
        worker_a.wait(10)
    finally:
        if worker_a.poll() is None:
            worker_a.kill()
    from_a = sink.events()
    assert 0 < len(from_a) < expected
    published_by_a = [
        EvaluationRecord.model_validate_json(r.value) for r in await read_topic(kafka_bootstrap, results_topic)
    ]
    assert {r.result_id for r in published_by_a} == {e.result_id for e in from_a}

    # Worker B takes over the group: A's uncommitted batch is redelivered to it.
    telemetry = MemoryTelemetry()
    worker_b = Worker(
        worker_settings(
            kafka_bootstrap,
            kafka_requests_topic=requests_topic,
            kafka_results_topic=results_topic,
            kafka_group_id=group,
        ),
        core=_core(telemetry),
        telemetry=telemetry.providers,
    )
    async with running_worker(worker_b):
        await wait_until_async(
            lambda: len(from_a) + len(telemetry.events()) >= expected, timeout=90, what="every request evaluated"
        )
        await asyncio.sleep(1.0)  # any duplicate would arrive now
    sink.stop()

    emitted = from_a + telemetry.events()
    assert len(emitted) == expected
    assert len({e.result_id for e in emitted}) == expected  # nothing twice
    assert {e.trace_id for e in emitted} == {r.trace_id for r in sent}  # nothing lost
    assert sink.evaluation_span_count() + len(telemetry.evaluation_spans()) == expected
    published = [
        EvaluationRecord.model_validate_json(r.value) for r in await read_topic(kafka_bootstrap, results_topic)
    ]
    assert len(published) == expected
    assert {r.result_id for r in published} == {e.result_id for e in emitted}
    telemetry.shutdown()


async def test_sigterm_drains_then_ends_the_process_by_sigterm(kafka_bootstrap: str, tmp_path: Path) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    sent = [request(i) for i in range(5)]
    await _produce(kafka_bootstrap, requests_topic, [_json(r) for r in sent])
    args = [
        "--bootstrap-servers",
        kafka_bootstrap,
        "--requests-topic",
        requests_topic,
        "--results-topic",
        results_topic,
    ]
    args += ["--group-id", random_topic("group"), "--telemetry", "none", "--shutdown-timeout", "10"]
    log = tmp_path / "worker.log"
    process = start_worker_process(args, {"OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000"}, log)
    try:
        records = await read_topic(
            kafka_bootstrap, results_topic, expected=len(sent) * len(EFFICIENCY_METRICS), timeout=60
        )
        assert len(records) == len(sent) * len(EFFICIENCY_METRICS)
        process.send_signal(signal.SIGTERM)
        # Drained and committed, the worker raises the signal again: the process ends as SIGTERM says.
        assert await asyncio.to_thread(process.wait, 30) == -signal.SIGTERM
    finally:
        if process.poll() is None:
            process.kill()
    output = log.read_text()
    assert "received SIGTERM" in output
    assert "worker stopped" in output


async def test_broker_unreachable_mid_batch_then_back_nothing_lost_nothing_twice(tmp_path: Path) -> None:
    proxy = TcpProxy(target_port=free_port())
    broker = TansuBroker(port=proxy.target_port, advertised_port=proxy.port, log_dir=tmp_path)
    broker.start()
    proxy.restore()
    # A slow judge keeps the worker inside its first batch long enough to cut the broker off under it.
    server = FakeGemini(lambda model, body: error_reply(503, "judge down"), latency=1.0).start()
    judge = JudgeClient(
        JudgeSettings(
            api_key="AIzaSyTEST-not-a-real-key-0000000000000",
            base_url=server.base_url,
            timeout_seconds=5.0,
            max_attempts=1,
            max_total_seconds=5.0,
        )
    )
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    sent = [request(i) for i in range(8)]
    telemetry = MemoryTelemetry()
    worker = Worker(
        worker_settings(
            broker.bootstrap,
            kafka_requests_topic=requests_topic,
            kafka_results_topic=results_topic,
            kafka_group_id=random_topic("group"),
            kafka_request_timeout_ms=2_000,
            kafka_session_timeout_ms=20_000,
            worker_max_batch_size=4,
        ),
        core=_core(telemetry, criteria={"hallucinations_v1": {"threshold": 0.5}}, judge=judge),
        telemetry=telemetry.providers,
    )
    expected = len(sent) * (1 + len(EFFICIENCY_METRICS))
    try:
        await create_topics(broker.bootstrap, [requests_topic, results_topic], partitions=1)
        await _produce(broker.bootstrap, requests_topic, [_json(r) for r in sent])
        async with running_worker(worker):
            await wait_until_async(
                lambda: bool(server.generate_requests()), what="the first batch to be under evaluation"
            )
            proxy.cut()
            await wait_until_async(
                lambda: any(k.startswith("errors.") for k in worker.metrics.snapshot()), what="a failed publish"
            )
            proxy.restore()
            await wait_until_async(lambda: len(telemetry.events()) >= expected, timeout=90, what="every result")
            await asyncio.sleep(1.5)  # any duplicate would arrive now
        events = telemetry.events()
        assert len(events) == len({e.result_id for e in events}) == expected
        assert {e.trace_id for e in events} == {r.trace_id for r in sent}
        published = [
            EvaluationRecord.model_validate_json(r.value) for r in await read_topic(broker.bootstrap, results_topic)
        ]
        assert len(published) == len({r.result_id for r in published}) == expected
        errors = {k: v for k, v in worker.metrics.snapshot().items() if k.startswith("errors.")}
        assert sum(errors.values()) >= 1  # the batch failed at least once and was retried
    finally:
        server.stop()
        proxy.stop()
        broker.stop()
        telemetry.shutdown()
