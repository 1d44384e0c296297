"""Trace and span ids from Kafka are validated where they enter: a request or a sessions-topic record whose ids are
not hex of the right length is dead-lettered with a clear error and counted, never evaluated; and ids leave in URL
paths quoted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest

from otel_eval import semconv
from otel_eval.emit.sinks.mlflow import MlflowBackend
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, producer, random_topic, read_topic
from tests.loopback import LoopbackServer
from tests.transport._requests import request
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings

HOSTILE_TRACE_IDS = ["0af7651916cd43dd8448eb211c80/?#", "../../experiments/1/delete" + "0" * 6, "A" * 32, "ab" * 17]
HOSTILE_SPAN_IDS = ["b7ad6b71/?#90331", "b7ad6b7169203331\n"]


def _tampered(field: str, value: str, n: int) -> bytes:
    data: dict[str, Any] = json.loads(request(n).model_dump_json())
    data["invocations"][0][field] = value
    return json.dumps(data).encode()


@pytest.mark.kafka
@pytest.mark.integration
async def test_ids_with_url_characters_are_dead_lettered_and_counted_on_requests_and_sessions(
    kafka_bootstrap: str,
) -> None:
    requests_topic, sessions_topic = random_topic("requests"), random_topic("sessions")
    dead_topic = random_topic("dead")
    await create_topics(kafka_bootstrap, [requests_topic, sessions_topic, dead_topic])
    telemetry = MemoryTelemetry()
    worker = Worker(
        worker_settings(
            kafka_bootstrap,
            kafka_requests_topic=requests_topic,
            kafka_sessions_topic=sessions_topic,
            kafka_dead_letter_topic=dead_topic,
            kafka_results_topic="",
            kafka_group_id=random_topic("group"),
            worker_sources="requests,sessions",
        ),
        core=EvaluationCore(emitters=telemetry.emitters(), judge_configured=False),
        telemetry=telemetry.providers,
    )
    bad = [_tampered("trace_id", value, n) for n, value in enumerate(HOSTILE_TRACE_IDS)]
    bad += [_tampered("span_id", value, 10 + n) for n, value in enumerate(HOSTILE_SPAN_IDS)]
    good = request(99)
    try:
        async with running_worker(worker):
            async with producer(kafka_bootstrap) as prod:
                for value in bad:
                    await prod.send_and_wait(requests_topic, value, key=b"k")
                await prod.send_and_wait(sessions_topic, bad[0], key=b"session")
                await prod.send_and_wait(requests_topic, good.model_dump_json().encode(), key=b"k")
            total = len(bad) + 1
            await wait_until_async(
                lambda: worker.metrics.snapshot().get("dead_letters", 0) >= total, timeout=60, what="dead letters"
            )
            await wait_until_async(
                lambda: len(telemetry.events()) >= len(EFFICIENCY_METRICS), timeout=60, what="the good request"
            )
        dead = await read_topic(kafka_bootstrap, dead_topic, expected=total)
        assert len(dead) == total
        errors = [dict(d.headers)[semconv.HEADER_DEAD_LETTER_ERROR].decode() for d in dead]
        assert sum("trace_id" in e for e in errors) == len(HOSTILE_TRACE_IDS) + 1, errors
        assert sum("span_id" in e for e in errors) == len(HOSTILE_SPAN_IDS), errors
        assert {dict(d.headers)[semconv.HEADER_DEAD_LETTER_TOPIC].decode() for d in dead} == {
            requests_topic,
            sessions_topic,
        }
        assert worker.metrics.snapshot()["dead_letters.unreadable"] == total
        assert {e.trace_id for e in telemetry.events()} == {good.trace_id}  # nothing of the bad ones evaluated
    finally:
        telemetry.shutdown()


class _Recorder(BaseHTTPRequestHandler):
    paths: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.paths.append(self.path)
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[str]]]:
    paths: ClassVar[list[str]] = []
    _Recorder.paths = paths
    with LoopbackServer(_Recorder) as server:
        yield server.url, paths


def test_mlflow_quotes_ids_in_url_paths(recorder: tuple[str, list[str]]) -> None:
    url, paths = recorder
    backend = MlflowBackend(url)
    record = EvaluationRecord(  # a record's ids are not re-validated: the sink quotes what it sends
        result_id="r",
        trace_id="ab/../../experiments?x=1#",
        span_id="b" * 16,
        metric_name="safety_v1",
        eval_status=EvalStatus.PASSED,
        label="pass",
    )
    with backend.client() as client:
        backend.send(client, [record])
    assert paths == ["/api/3.0/mlflow/traces/tr-ab%2F..%2F..%2Fexperiments%3Fx%3D1%23"]
