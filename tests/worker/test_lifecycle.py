"""The worker's lifecycle, as uvicorn's: signals captured while it runs and raised again after a graceful stop, a
second SIGINT forcing the exit, a task that dies stopping the worker with its error. Real worker processes
(``otel-eval worker``) against the real broker, except where the test needs the process's own signal handlers."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from types import FrameType

import pytest

from otel_eval.cli._common import EXIT_FAILED
from otel_eval.cli.worker import EXIT_ABANDONED, EXIT_INTERRUPTED
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, producer, random_topic, read_topic
from tests.judge.fake_gemini import FakeGemini, hang_reply
from tests.transport._requests import request
from tests.waiting import wait_until, wait_until_async
from tests.worker._harness import MemoryTelemetry, start_worker_process, worker_settings

pytestmark = [pytest.mark.kafka, pytest.mark.integration]

TEST_KEY = "AIzaSyTEST-not-a-real-key-0000000000000"


async def _produce(bootstrap: str, topic: str, count: int) -> None:
    async with producer(bootstrap, acks="all") as prod:
        for index in range(count):
            sent = request(index)
            await prod.send(topic, sent.model_dump_json().encode(), key=sent.trace_id.encode())
        await prod.flush()


def _args(bootstrap: str, requests_topic: str, results_topic: str, *more: str) -> list[str]:
    args = ["--bootstrap-servers", bootstrap, "--requests-topic", requests_topic, "--results-topic", results_topic]
    return [*args, "--group-id", random_topic("group"), "--telemetry", "none", *more]


async def _exit_code(process: subprocess.Popen[bytes], within: float) -> int | None:
    """The process's exit code, or None when it was still running ``within`` seconds later (then killed)."""
    try:
        return await asyncio.to_thread(process.wait, within)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return None


def test_after_a_graceful_stop_the_signal_is_raised_again_under_the_previous_handler(kafka_bootstrap: str) -> None:
    requests_topic = random_topic("requests")
    asyncio.run(create_topics(kafka_bootstrap, [requests_topic], partitions=1))
    caught: list[int] = []

    def previous(sig: int, frame: FrameType | None) -> None:
        caught.append(sig)

    telemetry = MemoryTelemetry()
    worker = Worker(
        worker_settings(
            kafka_bootstrap,
            kafka_requests_topic=requests_topic,
            kafka_results_topic="",
            kafka_group_id=random_topic("group"),
        ),
        telemetry=telemetry.providers,
    )

    def terminate_once_started() -> None:
        if wait_until(worker.started.is_set, timeout=60):
            os.kill(os.getpid(), signal.SIGTERM)

    original = signal.signal(signal.SIGTERM, previous)
    try:
        threading.Thread(target=terminate_once_started, daemon=True).start()
        worker.run()
        installed = signal.getsignal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, original)
    assert caught == [signal.SIGTERM]  # not while the worker ran: after it stopped, under the handler restored
    assert installed is previous
    assert not worker.abandoned_uncommitted and worker.error is None


@pytest.mark.parametrize(
    ("sent", "disposition"),
    [
        (signal.SIGINT, "signal.default_int_handler"),  # started from a terminal
        (signal.SIGINT, "signal.SIG_IGN"),  # a non-interactive shell's background job: SIGINT inherited ignored
        (signal.SIGTERM, "signal.SIG_IGN"),  # SIGTERM inherited ignored (from a launcher that ignores it)
    ],
    ids=["SIGINT-handled", "SIGINT-ignored", "SIGTERM-ignored"],
)
async def test_a_signal_after_a_graceful_stop_exits_128_plus_the_signal(
    kafka_bootstrap: str, tmp_path: Path, sent: signal.Signals, disposition: str
) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await _produce(kafka_bootstrap, requests_topic, 3)
    log = tmp_path / "worker.log"
    process = start_worker_process(
        _args(kafka_bootstrap, requests_topic, results_topic),
        {"OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000"},
        log,
        prelude=f"import signal; signal.signal(signal.{sent.name}, {disposition})",
    )
    try:
        await read_topic(kafka_bootstrap, results_topic, expected=3 * len(EFFICIENCY_METRICS), timeout=60)
        process.send_signal(sent)
    finally:
        code = await _exit_code(process, 30)
    output = log.read_text()
    assert code == (EXIT_INTERRUPTED if sent == signal.SIGINT else 128 + sent), output  # as a shell reports it
    assert f"received {sent.name}: finishing the current batch" in output
    assert "Traceback" not in output and "Aborted" not in output


async def test_a_second_sigint_stops_at_once_leaving_the_batch_to_the_group(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    # A judge that never answers keeps the worker inside its first batch.
    server = FakeGemini(lambda model, body: hang_reply()).start()
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await _produce(kafka_bootstrap, requests_topic, 2)
    env = {
        "OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000",
        "OTEL_EVAL_CRITERIA": '{"hallucinations_v1": {"threshold": 0.5}}',
        "OTEL_EVAL_JUDGE_MAX_ATTEMPTS": "1",
        "OTEL_EVAL_JUDGE_TIMEOUT": "120",
        "GOOGLE_API_KEY": TEST_KEY,
        "GOOGLE_GEMINI_BASE_URL": server.base_url,
    }
    log = tmp_path / "worker.log"
    process = start_worker_process(
        _args(kafka_bootstrap, requests_topic, results_topic, "--shutdown-timeout", "120"), env, log
    )
    try:
        await wait_until_async(lambda: bool(server.generate_requests()), timeout=60, what="a batch under evaluation")
        process.send_signal(signal.SIGINT)
        await wait_until_async(lambda: "received SIGINT" in log.read_text(), timeout=10, what="the first SIGINT")
        await asyncio.sleep(0.5)
        assert process.poll() is None  # the first SIGINT waits for the batch (up to the shutdown timeout)
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        code = await _exit_code(process, 30)
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
        server.stop()
    output = log.read_text()
    assert code == EXIT_ABANDONED, output
    assert took < 10, took
    assert "received SIGINT again: stopping now" in output
    assert "fetched records left uncommitted" in output
    assert "Traceback" not in output and "Unclosed AIOKafka" not in output


_BROKEN_WATCH = """
import asyncio
from otel_eval.worker.consumer import BrokerWatch

async def _broken(self, consumer):
    while consumer() is None:
        await asyncio.sleep(0.1)
    raise RuntimeError("the broker watch broke")

BrokerWatch.watch = _broken
"""


async def test_a_task_that_dies_stops_the_worker_with_its_error_and_exit_code_1(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic], partitions=1)
    log = tmp_path / "worker.log"
    process = start_worker_process(
        _args(kafka_bootstrap, requests_topic, results_topic),
        {"OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000"},
        log,
        prelude=_BROKEN_WATCH,
    )
    code = await _exit_code(process, 60)
    output = log.read_text()
    assert code == EXIT_FAILED, output
    assert "error: worker failed: RuntimeError: the broker watch broke" in output
    assert "worker stopped" in output  # shut down in order first: clients stopped, telemetry flushed
    # Said in the log as soon as it is known, before the telemetry's last flush (which may wait on its collector).
    logged = output.index("ERROR otel_eval.worker.service: worker failed: RuntimeError: the broker watch broke")
    assert output.index("worker stopped") < logged < output.index("error: worker failed")
