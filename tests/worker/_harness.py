"""Running workers in tests: in-memory telemetry, an in-process worker, a worker subprocess, an OTLP/HTTP sink."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import semconv
from otel_eval.emit import Emitters
from otel_eval.worker.service import Worker
from otel_eval.worker.settings import WorkerSettings
from otel_eval.worker.telemetry import WorkerTelemetry
from tests._kafka import producer
from tests.collected import settled

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Emitted:
    """One emitted ``gen_ai.evaluation.result`` event, reduced to what tests compare."""

    result_id: str
    trace_id: str
    span_id: str
    metric: str
    label: str
    score: float | None
    error_type: str | None


class MemoryTelemetry:
    """A worker's providers with in-memory exporters (synchronous processors: emitted = exported)."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.logs = InMemoryLogRecordExporter()
        self.reader = InMemoryMetricReader()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        self.providers = WorkerTelemetry(tracer_provider, logger_provider, MeterProvider(metric_readers=[self.reader]))

    def emitters(self) -> Emitters:
        """Emitters writing to these providers (for an ``EvaluationCore`` built in the test)."""
        providers = self.providers
        return Emitters.create(
            tracer_provider=providers.tracer_provider,
            logger_provider=providers.logger_provider,
            meter_provider=providers.meter_provider,
        )

    def events(self) -> list[Emitted]:
        found = []
        for data in self.logs.get_finished_logs():
            record = data.log_record
            if record.event_name != semconv.EVALUATION_RESULT_EVENT:
                continue
            attrs = record.attributes or {}
            found.append(
                Emitted(
                    result_id=str(attrs.get(semconv.OTEL_EVAL_RESULT_ID)),
                    trace_id=format(record.trace_id or 0, "032x"),
                    span_id=format(record.span_id or 0, "016x"),
                    metric=str(attrs[semconv.GEN_AI_EVALUATION_NAME]),
                    label=str(attrs[semconv.GEN_AI_EVALUATION_SCORE_LABEL]),
                    score=attrs.get(semconv.GEN_AI_EVALUATION_SCORE_VALUE),  # type: ignore[arg-type]
                    error_type=attrs.get(semconv.ERROR_TYPE),  # type: ignore[arg-type]
                )
            )
        return found

    def evaluation_spans(self) -> list[Any]:
        prefix = semconv.EVALUATION_SPAN_NAME_PREFIX + " "
        return [s for s in self.spans.get_finished_spans() if s.name.startswith(prefix)]

    def metric_points(self, name: str) -> list[Any]:
        data = settled(self.reader)
        points: list[Any] = []
        for resource_metrics in data.resource_metrics if data else ():
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    if metric.name == name:
                        points.extend(metric.data.data_points)
        return points

    def shutdown(self) -> None:
        self.providers.shutdown()


def worker_settings(bootstrap: str, **overrides: Any) -> WorkerSettings:
    """Settings for a test worker: short timeouts, no environment leakage beyond ``OTEL_EVAL_*`` unset here."""
    values: dict[str, Any] = {
        "kafka_bootstrap_servers": bootstrap,
        "kafka_session_timeout_ms": 6_000,
        "worker_shutdown_timeout": 10.0,
        "worker_telemetry": "none",
        "worker_max_batch_size": 8,
        "worker_metrics_port": 0,  # no HTTP endpoints: several test workers run in one process
    }
    values.update(overrides)
    return WorkerSettings(**values)


async def send_requests(bootstrap: str, topic: str, requests: Sequence[Any]) -> None:
    """Produces each request (an ``EvaluationRequest``) to ``topic`` keyed by its trace id, acknowledged by all."""
    async with producer(bootstrap, acks="all") as prod:
        for one in requests:
            await prod.send(topic, one.model_dump_json().encode(), key=one.trace_id.encode())
        await prod.flush()


@contextlib.asynccontextmanager
async def running_worker(worker: Worker) -> AsyncIterator[Worker]:
    """Serves ``worker`` as a task (uvicorn's ``run_server`` pattern); stops it gracefully on exit."""
    task = asyncio.create_task(worker.serve())
    try:
        await asyncio.wait_for(worker.started.wait(), timeout=30)
        yield worker
    finally:
        worker.request_exit()
        await asyncio.wait_for(task, timeout=60)


class OtlpSink:
    """A loopback OTLP/HTTP (protobuf) receiver: /v1/traces, /v1/logs, /v1/metrics.

    ``hang_traces_after``: answer that many trace exports, then hold every further request open without answering
    (a stuck backend); those requests are not counted as received. ``port``: 0 for any free one.
    """

    def __init__(self, hang_traces_after: int | None = None, port: int = 0) -> None:
        self.hang_traces_after = hang_traces_after
        self.trace_requests: list[ExportTraceServiceRequest] = []
        self.log_requests: list[ExportLogsServiceRequest] = []
        self.metric_exports = 0
        self.metric_requests: list[ExportMetricsServiceRequest] = []
        self.hanging = threading.Event()
        self._release = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> OtlpSink:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def events(self) -> list[Emitted]:
        found = []
        with self._lock:
            requests = list(self.log_requests)
        for request in requests:
            for resource_logs in request.resource_logs:
                for scope_logs in resource_logs.scope_logs:
                    for record in scope_logs.log_records:
                        attrs = {kv.key: _any_value(kv.value) for kv in record.attributes}
                        if record.event_name != semconv.EVALUATION_RESULT_EVENT:
                            continue
                        found.append(
                            Emitted(
                                result_id=str(attrs.get(semconv.OTEL_EVAL_RESULT_ID)),
                                trace_id=record.trace_id.hex(),
                                span_id=record.span_id.hex(),
                                metric=str(attrs[semconv.GEN_AI_EVALUATION_NAME]),
                                label=str(attrs[semconv.GEN_AI_EVALUATION_SCORE_LABEL]),
                                score=attrs.get(semconv.GEN_AI_EVALUATION_SCORE_VALUE),
                                error_type=attrs.get(semconv.ERROR_TYPE),
                            )
                        )
        return found

    def evaluation_span_count(self) -> int:
        prefix = semconv.EVALUATION_SPAN_NAME_PREFIX + " "
        with self._lock:
            requests = list(self.trace_requests)
        return sum(
            1
            for request in requests
            for rs in request.resource_spans
            for ss in rs.scope_spans
            for span in ss.spans
            if span.name.startswith(prefix)
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path == "/v1/traces":
                    with sink._lock:
                        stuck = (
                            sink.hang_traces_after is not None and len(sink.trace_requests) >= sink.hang_traces_after
                        )
                        if not stuck:
                            sink.trace_requests.append(ExportTraceServiceRequest.FromString(body))
                    if stuck:
                        sink.hanging.set()
                        sink._release.wait(120)
                        return
                elif self.path == "/v1/logs":
                    with sink._lock:
                        sink.log_requests.append(ExportLogsServiceRequest.FromString(body))
                elif self.path == "/v1/metrics":
                    with sink._lock:
                        sink.metric_exports += 1
                        sink.metric_requests.append(ExportMetricsServiceRequest.FromString(body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler


@contextlib.contextmanager
def child_otlp_sink(monkeypatch: pytest.MonkeyPatch, *, traces: bool = True) -> Iterator[OtlpSink]:
    """A loopback OTLP receiver, and an evaluation process's exporters pointed at it by the SDK's own variables
    (logs always; traces unless ``traces`` is False)."""
    receiver = OtlpSink().start()
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp" if traces else "none")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    try:
        yield receiver
    finally:
        receiver.stop()


def _any_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def start_worker_process(
    args: list[str], env: dict[str, str], log_path: Path, *, prelude: str = ""
) -> subprocess.Popen[bytes]:
    """``otel-eval worker ARGS`` in a new Python process (its output goes to ``log_path``); ``prelude``: Python
    statements run in that process first (e.g. to inject a fault)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOOGLE_", "GEMINI_"))}
    full_env["OTEL_EVAL_WORKER_METRICS_PORT"] = "0"  # several test workers run on one machine
    full_env.update(env)
    full_env["PYTHONPATH"] = str(REPO)
    with log_path.open("wb") as log:  # the child writes to its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, "-c", f"{prelude}\nfrom otel_eval.cli import main; main()", "worker", *args],
            env=full_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )


@dataclass
class Produced:
    """What a test produced to the requests topic."""

    keys: list[tuple[str, str]] = field(default_factory=list)
    """(trace id, span id) of every valid request."""
