"""The worker through broker outages on the real tansu broker: refused connections (broker killed), a hung broker
(SIGSTOP, then SIGCONT), a restart that keeps the broker's data. Asserted: a quiet log, an exit within
``--shutdown-timeout`` after SIGTERM whatever the broker does (0 after a clean drain, 75 with records left
uncommitted, never a traceback or an unclosed client), readiness that follows the outage, and consumption that
resumes by itself with every invocation scored exactly once."""

from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from otel_eval import semconv
from otel_eval.cli.worker import EXIT_ABANDONED
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.worker.service import Worker
from tests._kafka import TansuBroker, create_topics, producer, random_topic, read_topic
from tests.judge.fake_gemini import FakeGemini, error_reply
from tests.transport._brokers import durable_broker, hung
from tests.transport._requests import request
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, running_worker, start_worker_process, worker_settings

pytestmark = [pytest.mark.kafka, pytest.mark.integration]

SHUTDOWN_TIMEOUT = 8.0
EXIT_SLACK = 7.0
"""Interpreter teardown and a loaded machine: a bound that catches a worker waiting for the broker, not a timing."""
TEST_KEY = "AIzaSyTEST-not-a-real-key-0000000000000"


async def _produce(bootstrap: str, topic: str, requests: list[EvaluationRequest]) -> None:
    async with producer(bootstrap, acks="all") as prod:
        for item in requests:
            await prod.send(topic, value=item.model_dump_json().encode(), key=item.trace_id.encode())
        await prod.flush()


async def _sigterm(process: subprocess.Popen[bytes]) -> int:
    """Sends SIGTERM; the exit code, which must come within the shutdown timeout (plus slack)."""
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    code = await asyncio.to_thread(process.wait, SHUTDOWN_TIMEOUT + EXIT_SLACK)
    assert time.monotonic() - started < SHUTDOWN_TIMEOUT + EXIT_SLACK
    return code


def _outage_lines(log: str, mark: int) -> list[str]:
    return [line for line in log.splitlines()[mark:] if " received SIGTERM" not in line]


def _assert_clean_exit_log(log: str) -> None:
    assert "Traceback" not in log, log[-4000:]
    assert "Unclosed AIOKafka" not in log, log[-4000:]
    assert " ERROR " not in log, log[-4000:]
    assert " aiokafka" not in log, log[-4000:]  # the worker's clients never write to the log above DEBUG


@pytest.mark.parametrize("fault", ["refused", "hung"])
async def test_sigterm_during_an_outage_exits_in_time_quietly_and_cleanly(fault: str, tmp_path: Path) -> None:
    broker = TansuBroker()
    broker.start()
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    sent = [request(i) for i in range(4)]
    await _produce(broker.bootstrap, requests_topic, sent)
    args = ["--bootstrap-servers", broker.bootstrap, "--requests-topic", requests_topic]
    args += ["--results-topic", results_topic, "--group-id", random_topic("group"), "--telemetry", "none"]
    args += ["--shutdown-timeout", str(SHUTDOWN_TIMEOUT)]
    log_path = tmp_path / "worker.log"
    process = start_worker_process(args, {"OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000"}, log_path)
    frozen = hung(broker) if fault == "hung" else None
    try:
        records = await read_topic(broker.bootstrap, results_topic, expected=len(sent) * len(EFFICIENCY_METRICS))
        assert len(records) == len(sent) * len(EFFICIENCY_METRICS)  # everything committed before the outage
        await asyncio.sleep(1.0)
        mark = len(log_path.read_text().splitlines())
        if frozen is not None:
            frozen.__enter__()
        else:
            broker.stop()
        await wait_until_async(
            lambda: "Kafka broker unreachable" in log_path.read_text(), timeout=60, what="the outage"
        )
        await asyncio.sleep(5.0)  # aiokafka keeps retrying meanwhile
        outage = _outage_lines(log_path.read_text(), mark)
        code = await _sigterm(process)
    finally:
        if process.poll() is None:
            process.kill()
        if frozen is not None:
            frozen.__exit__(None, None, None)
        broker.stop()
    log = log_path.read_text()
    assert code == -signal.SIGTERM, log  # nothing was in flight: a clean drain, then SIGTERM raised again
    assert len(outage) <= 3, outage
    assert "WARNING otel_eval.worker.consumer: worker: Kafka broker unreachable at " + broker.bootstrap in outage[0]
    assert "worker stopped" in log
    _assert_clean_exit_log(log)


def _core(telemetry: MemoryTelemetry, judge: JudgeClient) -> EvaluationCore:
    emitters = telemetry.emitters()
    judge.use_meter_provider(telemetry.providers.meter_provider)
    return EvaluationCore(
        emitters=emitters, criteria={"hallucinations_v1": {"threshold": 0.5}}, judge=judge, judge_configured=True
    )


def _slow_judge(server: FakeGemini) -> JudgeClient:
    return JudgeClient(
        JudgeSettings(
            api_key=TEST_KEY, base_url=server.base_url, timeout_seconds=5.0, max_attempts=1, max_total_seconds=5.0
        )
    )


@pytest.fixture
def otel_eval_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.INFO)
    yield caplog


async def _recovers(
    broker: TansuBroker,
    telemetry: MemoryTelemetry,
    otel_eval_log: pytest.LogCaptureFixture,
    outage: str,
) -> Worker:
    """Runs a worker over 8 requests with a slow judge, makes ``outage`` happen while its first batch is being
    evaluated, and waits until every result is out. Returns the worker (stopped)."""
    server = FakeGemini(lambda model, body: error_reply(503, "judge down"), latency=1.0).start()
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    sent = [request(i) for i in range(8)]
    worker = Worker(
        worker_settings(
            broker.bootstrap,
            kafka_requests_topic=requests_topic,
            kafka_results_topic=results_topic,
            kafka_group_id=random_topic("group"),
            kafka_request_timeout_ms=2_000,
            kafka_session_timeout_ms=30_000,
            worker_max_batch_size=4,
        ),
        core=_core(telemetry, _slow_judge(server)),
        telemetry=telemetry.providers,
    )
    expected = len(sent) * (1 + len(EFFICIENCY_METRICS))
    try:
        await create_topics(broker.bootstrap, [requests_topic, results_topic], partitions=1)
        await _produce(broker.bootstrap, requests_topic, sent)
        async with running_worker(worker):
            await wait_until_async(
                lambda: bool(server.generate_requests()), what="the first batch to be under evaluation"
            )
            frozen = hung(broker) if outage == "hung" else None
            if frozen is not None:
                frozen.__enter__()
            else:
                broker.stop()
            try:
                await wait_until_async(
                    lambda: worker.broker.outage.unavailable, timeout=60, what="the worker to see it"
                )
                assert "Kafka broker unreachable" in worker.health.fetch_error  # type: ignore[operator]
                # /readyz says so in generic words; the broker's error text stays in the log
                assert "last fetch from the broker failed" in worker.health.readiness()
                await asyncio.sleep(3.0)
            finally:
                if frozen is not None:
                    frozen.__exit__(None, None, None)
                else:
                    broker.start()
            # No restart of the worker: it resumes, the in-flight batch is neither lost nor scored twice.
            await wait_until_async(lambda: len(telemetry.events()) >= expected, timeout=120, what="every result")
            await wait_until_async(lambda: not worker.broker.outage.unavailable, timeout=60, what="the broker back")
            await asyncio.sleep(1.5)  # any duplicate would arrive now
            assert worker.health.fetch_error is None
        events = telemetry.events()
        assert len(events) == len({e.result_id for e in events}) == expected
        assert {e.trace_id for e in events} == {r.trace_id for r in sent}
        published = [
            EvaluationRecord.model_validate_json(r.value) for r in await read_topic(broker.bootstrap, results_topic)
        ]
        assert len({r.result_id for r in published}) == expected  # published at least once each
        assert {r.result_id for r in published} == {e.result_id for e in events}
    finally:
        server.stop()
    outage_lines = [
        r for r in otel_eval_log.records if r.name.startswith("otel_eval.worker") and "Kafka broker" in r.getMessage()
    ]
    assert [r.levelname for r in outage_lines] == ["WARNING", "INFO"], [r.getMessage() for r in outage_lines]
    assert worker.metrics.snapshot()["transport.failed_attempts"] >= 1
    points = telemetry.metric_points(semconv.METRIC_TRANSPORT_OUTAGE_DURATION)
    assert [(dict(p.attributes), p.value) for p in points] == [({semconv.OTEL_EVAL_TRANSPORT: "kafka"}, 0)]
    return worker


async def test_a_hung_broker_then_back_nothing_lost_nothing_scored_twice(
    otel_eval_log: pytest.LogCaptureFixture,
) -> None:
    broker = TansuBroker()
    broker.start()
    telemetry = MemoryTelemetry()
    try:
        await _recovers(broker, telemetry, otel_eval_log, "hung")
    finally:
        broker.stop()
        telemetry.shutdown()


async def test_a_broker_restart_keeping_its_data_nothing_lost_nothing_scored_twice(
    otel_eval_log: pytest.LogCaptureFixture,
) -> None:
    telemetry = MemoryTelemetry()
    with durable_broker() as broker:
        try:
            await _recovers(broker, telemetry, otel_eval_log, "restart")
        finally:
            telemetry.shutdown()


async def test_sigterm_with_a_batch_stuck_on_a_dead_broker_exits_75_and_the_group_redelivers_it(
    tmp_path: Path,
) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    group = random_topic("group")
    sent = [request(i) for i in range(4)]
    per_request = 1 + len(EFFICIENCY_METRICS)
    server = FakeGemini(lambda model, body: error_reply(503, "judge down"), latency=1.0).start()
    with durable_broker() as broker:
        try:
            await create_topics(broker.bootstrap, [requests_topic, results_topic], partitions=1)
            await _produce(broker.bootstrap, requests_topic, sent)
            env = {
                "OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000",
                "OTEL_EVAL_KAFKA_REQUEST_TIMEOUT_MS": "2000",
                "OTEL_EVAL_CRITERIA": '{"hallucinations_v1": {"threshold": 0.5}}',
                "OTEL_EVAL_JUDGE_MAX_ATTEMPTS": "1",
                "GOOGLE_API_KEY": TEST_KEY,
                "GOOGLE_GEMINI_BASE_URL": server.base_url,
            }
            args = ["--bootstrap-servers", broker.bootstrap, "--requests-topic", requests_topic]
            args += ["--results-topic", results_topic, "--group-id", group, "--telemetry", "none"]
            args += ["--shutdown-timeout", str(SHUTDOWN_TIMEOUT), "--max-batch-size", "4"]
            log_path = tmp_path / "worker-a.log"
            process = start_worker_process(args, env, log_path)
            try:
                await wait_until_async(
                    lambda: bool(server.generate_requests()), timeout=60, what="a batch under evaluation"
                )
                broker.stop()  # its results cannot be published, its offsets cannot be committed
                await wait_until_async(
                    lambda: "Kafka broker unreachable" in log_path.read_text(), timeout=60, what="outage"
                )
                code = await _sigterm(process)
            finally:
                if process.poll() is None:
                    process.kill()
            log = log_path.read_text()
            assert code == EXIT_ABANDONED, log
            assert "fetched records left uncommitted" in log
            _assert_clean_exit_log(log)

            # The broker is back with its data: another worker of the group gets the uncommitted batch.
            broker.start()
            telemetry = MemoryTelemetry()
            worker_b = Worker(
                worker_settings(
                    broker.bootstrap,
                    kafka_requests_topic=requests_topic,
                    kafka_results_topic=results_topic,
                    kafka_group_id=group,
                ),
                core=_core(telemetry, _slow_judge(server)),
                telemetry=telemetry.providers,
            )
            async with running_worker(worker_b):
                await wait_until_async(
                    lambda: len(telemetry.events()) >= len(sent) * per_request, timeout=120, what="redelivered work"
                )
                await asyncio.sleep(1.5)
            events = telemetry.events()
            assert len(events) == len({e.result_id for e in events}) == len(sent) * per_request
            assert {e.trace_id for e in events} == {r.trace_id for r in sent}
            published = [
                EvaluationRecord.model_validate_json(r.value) for r in await read_topic(broker.bootstrap, results_topic)
            ]
            assert {r.result_id for r in published} == {e.result_id for e in events}
            telemetry.shutdown()
        finally:
            server.stop()
