"""The worker's log at INFO holds its own events, not the per-request lines of the libraries it drives (httpx,
google_genai, aiokafka): those only at DEBUG, unless the operator set their levels."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otel_eval.cli.worker import configure_logging
from otel_eval.demo.local_judge import scripted_verdicts
from otel_eval.judge import JUDGE_SERVER_ERROR
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord
from tests._kafka import producer, random_topic, read_topic
from tests.judge.fake_gemini import FakeGemini, Reply, error_reply
from tests.transport._requests import request
from tests.worker._harness import start_worker_process

TEST_KEY = "AIzaSyTEST-not-a-real-key-0000000000000"
LIBRARIES = ("aiokafka", "httpx", "httpx2", "httpcore", "httpcore2", "google_genai")
WITHOUT_AIOHTTP = "import google.genai._api_client as api_client\napi_client.has_aiohttp = False"
"""google-genai then sends through httpx, which writes an INFO line per request (the case of an install without
aiohttp)."""


@pytest.fixture
def library_levels() -> Iterator[None]:
    saved = {name: logging.getLogger(name).level for name in LIBRARIES}
    yield
    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)


@pytest.mark.usefixtures("library_levels")
def test_libraries_log_per_request_lines_only_at_debug_unless_configured() -> None:
    for name in LIBRARIES:
        logging.getLogger(name).setLevel(logging.NOTSET)
    logging.getLogger("httpx").setLevel(logging.INFO)  # the operator's choice stands
    configure_logging("INFO")
    assert logging.getLogger("httpx").level == logging.INFO
    for name in ("aiokafka", "httpx2", "httpcore", "httpcore2", "google_genai"):
        assert not logging.getLogger(name).isEnabledFor(logging.INFO), name
        assert logging.getLogger(name).isEnabledFor(logging.WARNING), name


def _judged_worker(
    server: FakeGemini, kafka_bootstrap: str, *more_args: str
) -> tuple[str, str, dict[str, str], list[str]]:
    """Fresh requests and results topics, and the environment and flags of a worker judging
    ``hallucinations_v1`` with ``server`` (one attempt a call) between them."""
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    env = {
        "OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000",
        "OTEL_EVAL_CRITERIA": '{"hallucinations_v1": {"threshold": 0.5}}',
        "OTEL_EVAL_JUDGE_MAX_ATTEMPTS": "1",
        "GOOGLE_API_KEY": TEST_KEY,
        "GOOGLE_GEMINI_BASE_URL": server.base_url,
    }
    args = ["--bootstrap-servers", kafka_bootstrap, "--requests-topic", requests_topic, "--results-topic"]
    args += [results_topic, "--group-id", random_topic("group"), "--telemetry", "none", *more_args]
    return requests_topic, results_topic, env, args


@pytest.mark.kafka
@pytest.mark.integration
async def test_a_judged_run_at_info_logs_no_line_per_judge_call(kafka_bootstrap: str, tmp_path: Path) -> None:
    server = FakeGemini(lambda model, body: error_reply(503, "judge down")).start()
    requests_topic, results_topic, env, args = _judged_worker(server, kafka_bootstrap)
    sent = [request(i) for i in range(6)]
    async with producer(kafka_bootstrap, acks="all") as prod:
        for item in sent:
            await prod.send(requests_topic, item.model_dump_json().encode(), key=item.trace_id.encode())
    log = tmp_path / "worker.log"
    process = start_worker_process(args, env, log, prelude=WITHOUT_AIOHTTP)
    try:
        per_request = 1 + len(EFFICIENCY_METRICS)
        await read_topic(kafka_bootstrap, results_topic, expected=len(sent) * per_request, timeout=60)
        assert server.generate_requests()  # the judge was called
        process.send_signal(signal.SIGTERM)
        await asyncio.to_thread(process.wait, 30)
    finally:
        if process.poll() is None:
            process.kill()
        server.stop()
    lines = log.read_text().splitlines()
    assert any("worker started" in line for line in lines)
    noisy = [line for line in lines if any(f" {name}" in line for name in LIBRARIES) or "HTTP Request" in line]
    assert noisy == []
    assert len(lines) < 20, lines  # a handful of events, whatever the number of judge calls


@pytest.mark.kafka
@pytest.mark.integration
async def test_a_judge_outage_is_one_warning_line_and_its_end_one_info_line(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    judge_down = True

    def respond(model: str, body: dict[str, Any]) -> Reply:
        return error_reply(503, "judge down") if judge_down else scripted_verdicts(model, body)

    server = FakeGemini(respond).start()
    requests_topic, results_topic, env, args = _judged_worker(server, kafka_bootstrap, "--max-batch-size", "2")
    log = tmp_path / "worker.log"
    process = start_worker_process(args, env, log)
    per_request = 1 + len(EFFICIENCY_METRICS)
    try:
        async with producer(kafka_bootstrap, acks="all") as prod:
            for item in [request(i) for i in range(6)]:
                await prod.send(requests_topic, item.model_dump_json().encode(), key=item.trace_id.encode())
            await prod.flush()
            during = await read_topic(kafka_bootstrap, results_topic, expected=6 * per_request, timeout=60)
            judge_down = False
            for item in [request(i) for i in range(6, 10)]:
                await prod.send(requests_topic, item.model_dump_json().encode(), key=item.trace_id.encode())
            await prod.flush()
        after = await read_topic(kafka_bootstrap, results_topic, expected=10 * per_request, timeout=60)
        process.send_signal(signal.SIGTERM)
        await asyncio.to_thread(process.wait, 30)
    finally:
        if process.poll() is None:
            process.kill()
        server.stop()
    judged = {
        record.result_id: record
        for record in (EvaluationRecord.model_validate_json(r.value) for r in after)
        if record.metric_name == "hallucinations_v1"
    }
    failed = {EvaluationRecord.model_validate_json(r.value).result_id for r in during} & set(judged)
    assert {judged[result_id].error_type for result_id in failed} == {JUDGE_SERVER_ERROR}
    assert {r.error_type for result_id, r in judged.items() if result_id not in failed} == {None}
    lines = log.read_text().splitlines()
    failing = [line for line in lines if "judge failing" in line]
    assert len(failing) == 1, lines  # once, not once per batch or per result
    assert "WARNING" in failing[0] and JUDGE_SERVER_ERROR in failing[0] and "hallucinations_v1" in failing[0]
    assert TEST_KEY not in log.read_text() and server.base_url not in log.read_text()
    back = [line for line in lines if "judge answering again" in line]
    assert len(back) == 1 and "INFO" in back[0] and "6 results were NOT_EVALUATED" in back[0], lines
