"""The worker's HTTP endpoints: /healthz follows the event loop, /readyz the broker, group and telemetry, and
/metrics serves the worker's metrics for a Prometheus scrape (``--telemetry prometheus``), on a real broker."""

from __future__ import annotations

import asyncio
import signal
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.worker.health import LOOP_STALL_SECONDS, HealthServer, WorkerHealth
from tests._kafka import TansuBroker, TcpProxy, create_topics, free_port, producer, random_topic, read_topic
from tests.deploy.conftest import K8S_DIR, load_yaml_documents
from tests.transport._requests import request
from tests.waiting import wait_until_async
from tests.worker._harness import OtlpSink, send_requests, start_worker_process


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _batch_duration_quantile(text: str, q: float) -> float:
    """``histogram_quantile(q, ...)`` of the served batch durations, as Prometheus computes it (linear within the
    bucket holding the rank). Buckets that fit the durations put it within a bucket's width of the slowest batch,
    so below a few times the sum of all batches' durations."""
    buckets = sorted(
        (float(s.labels["le"]), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "otel_eval_worker_batch_duration_seconds_bucket"
    )
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            return bound if bound == float("inf") else lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    raise AssertionError(f"no bucket holds rank {rank}: {buckets}")


def test_liveness_fails_when_the_event_loop_stops_beating() -> None:
    clock = Clock()
    health = WorkerHealth(clock)
    assert health.liveness() == []
    clock.now += LOOP_STALL_SECONDS + 1
    assert health.liveness() == [f"event loop unresponsive for {LOOP_STALL_SECONDS + 1:.0f} s"]
    health.beat()
    assert health.liveness() == []


def test_readiness_names_every_failing_check() -> None:
    health = WorkerHealth()
    assert health.readiness() == ["not connected to the broker yet"]
    health.started = True
    assert health.readiness() == ["not a member of the consumer group (joining or rebalancing)"]
    health.group_member = True
    assert health.readiness() == []
    health.fetch_error = "Kafka broker unreachable: KafkaConnectionError: Unable connect to broker-7.internal:9093"
    health.telemetry_error = "telemetry_flush_timeout"
    assert health.readiness() == ["last fetch from the broker failed", "last telemetry export failed"]


def test_the_endpoints_answer_over_http() -> None:
    health = WorkerHealth()
    server = HealthServer(health, "127.0.0.1", 0).start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        assert _get(f"{base}/healthz") == (200, "ok\n")
        assert _get(f"{base}/readyz") == (503, "not connected to the broker yet\n")
        health.started = health.group_member = True
        assert _get(f"{base}/readyz") == (200, "ok\n")
        health.fetch_error = "Kafka broker unreachable: KafkaConnectionError: Unable connect to broker-7.internal:9093"
        status, text = _get(f"{base}/readyz")
        assert (status, text) == (503, "last fetch from the broker failed\n")
        assert "broker-7" not in text  # the broker's error text (addresses, TLS, SASL) stays in the log
        health.fetch_error = None
        assert _get(f"{base}/metrics")[0] == 404  # not in prometheus mode
    finally:
        server.stop()
    with_metrics = HealthServer(health, "127.0.0.1", 0, metrics_text=lambda: b"x_total 1\n").start()
    try:
        assert _get(f"http://127.0.0.1:{with_metrics.port}/metrics") == (200, "x_total 1\n")
    finally:
        with_metrics.stop()


@pytest.mark.kafka
@pytest.mark.integration
async def test_a_prometheus_mode_worker_serves_health_readiness_and_its_metrics(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    sent = [request(i) for i in range(3)]
    await create_topics(kafka_bootstrap, [requests_topic], partitions=2)
    async with producer(kafka_bootstrap, acks="all") as prod:
        for item in sent:  # all on partition 0: partition 1 stays empty
            await prod.send(requests_topic, value=item.model_dump_json().encode(), partition=0)
        await prod.flush()
    port = free_port()
    args = ["--bootstrap-servers", kafka_bootstrap, "--requests-topic", requests_topic]
    args += ["--results-topic", results_topic, "--group-id", random_topic("group"), "--telemetry", "prometheus"]
    args += ["--metrics-host", "127.0.0.1", "--metrics-port", str(port)]
    process = start_worker_process(args, {"OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000"}, tmp_path / "worker.log")
    base = f"http://127.0.0.1:{port}"
    try:
        await read_topic(kafka_bootstrap, results_topic, expected=len(sent) * len(EFFICIENCY_METRICS), timeout=60)
        assert await asyncio.to_thread(_get, f"{base}/healthz") == (200, "ok\n")
        assert await asyncio.to_thread(_get, f"{base}/readyz") == (200, "ok\n")
        status, first = await asyncio.to_thread(_get, f"{base}/metrics")
        assert status == 200
        firsts = {s.name: s for family in text_string_to_metric_families(first) for s in family.samples}
        assert firsts["otel_eval_invocations_evaluated_total"].value == 0  # a new series is 0 at its first scrape
        status, text = await asyncio.to_thread(_get, f"{base}/metrics")
        samples = {s.name: s for family in text_string_to_metric_families(text) for s in family.samples}
        assert samples["otel_eval_invocations_evaluated_total"].value == len(sent)
        assert samples["otel_eval_worker_results_published_total"].value == len(sent) * len(EFFICIENCY_METRICS)
        assert (
            _batch_duration_quantile(text, 0.95) <= 2.5 * samples["otel_eval_worker_batch_duration_seconds_sum"].value
        )
        lags = {
            s.labels["messaging_destination_partition_id"]: s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == "otel_eval_worker_consumer_lag"
        }
        assert lags == {"0": 0, "1": 0}  # the empty partition it owns too
        results = [s for f in text_string_to_metric_families(text) for s in f.samples]
        assert sum(s.value for s in results if s.name == "gen_ai_evaluation_results_total") == len(sent) * len(
            EFFICIENCY_METRICS
        )
        process.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(process.wait, 30) == -signal.SIGTERM  # drained, then SIGTERM again
    finally:
        if process.poll() is None:
            process.kill()
    log = (tmp_path / "worker.log").read_text()
    assert f"serving /healthz, /readyz, /metrics on port {port}" in log


def _shipped_probe_paths() -> dict[str, str]:
    (deployment,) = [d for d in load_yaml_documents(K8S_DIR / "deployment.yaml") if d.get("kind") == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {probe: container[probe]["httpGet"]["path"] for probe in ("startupProbe", "livenessProbe", "readinessProbe")}


@pytest.mark.kafka
@pytest.mark.integration
async def test_the_shipped_probes_take_a_worker_out_of_service_in_a_broker_outage_and_never_restart_it(
    tmp_path: Path,
) -> None:
    # The kubelet restarts a container whose startup or liveness probe keeps failing: a worker that started just
    # before (or during) a broker outage must answer both, else it is restarted and exits 1 (no broker at
    # start-up): a CrashLoopBackOff for an outage it would have ridden out. Only readiness follows the broker.
    probes = _shipped_probe_paths()
    proxy = TcpProxy(target_port=free_port())
    broker = TansuBroker(port=proxy.target_port, advertised_port=proxy.port, log_dir=tmp_path)
    broker.start()
    proxy.restore()
    port = free_port()
    requests_topic = random_topic("requests")
    args = ["--bootstrap-servers", broker.bootstrap, "--requests-topic", requests_topic, "--results-topic", ""]
    args += ["--group-id", random_topic("group"), "--telemetry", "none", "--metrics-host", "127.0.0.1"]
    args += ["--metrics-port", str(port)]
    env = {"OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000", "OTEL_EVAL_KAFKA_REQUEST_TIMEOUT_MS": "3000"}
    base = f"http://127.0.0.1:{port}"

    async def answers(probe: str) -> int:
        try:
            return (await asyncio.to_thread(_get, base + probes[probe]))[0]
        except OSError:
            return 0

    process = start_worker_process(args, env, tmp_path / "worker.log")
    try:
        await create_topics(broker.bootstrap, [requests_topic], partitions=1)
        await wait_until_async(lambda: _status(base + "/readyz") == 200, timeout=60, what="the worker ready")
        proxy.cut()
        await wait_until_async(lambda: _status(base + "/readyz") == 503, timeout=60, what="readiness to fail")
        for _ in range(3):  # the kubelet's failureThreshold: probes a few seconds apart, all must pass
            assert await answers("readinessProbe") == 503
            assert await answers("startupProbe") == 200
            assert await answers("livenessProbe") == 200
            await asyncio.sleep(1)
        proxy.restore()
        await wait_until_async(lambda: _status(base + "/readyz") == 200, timeout=60, what="ready again")
        process.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(process.wait, 30) == -signal.SIGTERM
    finally:
        if process.poll() is None:
            process.kill()
        proxy.stop()
        broker.stop()


def _status(url: str) -> int:
    try:
        return _get(url)[0]
    except OSError:
        return 0


@pytest.mark.kafka
@pytest.mark.integration
async def test_a_collector_outage_fails_readiness_in_a_few_log_lines_until_exports_succeed_again(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    collector_port, port = free_port(), free_port()  # nothing listens on the Collector's port yet
    env = {
        "OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector_port}",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_METRIC_EXPORT_INTERVAL": "1000",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2",
    }
    args = _otlp_worker_args(kafka_bootstrap, requests_topic, results_topic, port)
    log = tmp_path / "worker.log"
    process = start_worker_process(args, env, log)
    base = f"http://127.0.0.1:{port}"
    sent = [request(i) for i in range(3)]
    collector: OtlpSink | None = None
    try:
        await send_requests(kafka_bootstrap, requests_topic, sent)
        per_request = len(EFFICIENCY_METRICS)
        await read_topic(kafka_bootstrap, results_topic, expected=len(sent) * per_request, timeout=90)
        await wait_until_async(lambda: _status(f"{base}/readyz") == 503, timeout=30, what="readiness to fail")
        assert await asyncio.to_thread(_get, f"{base}/readyz") == (503, "last telemetry export failed\n")
        assert _status(f"{base}/healthz") == 200  # not restarted for it
        await wait_until_async(
            lambda: "telemetry export of metrics" in log.read_text(), timeout=30, what="a failed metrics export"
        )
        collector = OtlpSink(port=collector_port).start()
        await wait_until_async(lambda: _status(f"{base}/readyz") == 200, timeout=60, what="ready again")
        process.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(process.wait, 30) == -signal.SIGTERM
    finally:
        if process.poll() is None:
            process.kill()
        if collector is not None:
            collector.stop()
    lines = log.read_text().splitlines()
    failing = [line for line in lines if "telemetry export of" in line and "failing" in line]
    assert {line.split("telemetry export of ")[1].split()[0] for line in failing} == {"spans", "logs", "metrics"}
    assert len(failing) == 3 and all("WARNING" in line for line in failing), lines  # one per signal
    # ready again at the next metrics export, with no new traffic to export spans and events for
    assert any("telemetry export of metrics" in line and "succeeded again" in line for line in lines), lines
    sdk = [line for line in lines if "opentelemetry.exporter" in line]
    assert len(sdk) <= 2 * 3, sdk  # a line a minute per exporter at most, not one per retry


def _otlp_worker_args(bootstrap: str, requests_topic: str, results_topic: str, port: int) -> list[str]:
    """A worker exporting its telemetry over OTLP, one request a batch, its health endpoints on ``port``."""
    args = ["--bootstrap-servers", bootstrap, "--requests-topic", requests_topic, "--results-topic", results_topic]
    args += ["--group-id", random_topic("group"), "--telemetry", "otlp", "--max-batch-size", "1"]
    return [*args, "--metrics-host", "127.0.0.1", "--metrics-port", str(port)]


@pytest.mark.kafka
@pytest.mark.integration
async def test_one_signals_dead_endpoint_keeps_readiness_failing_while_the_others_export_until_it_is_back(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    # The logs endpoint refuses, the spans' and metrics' Collector accepts: every export of those succeeds between
    # two failed exports of the events, and /readyz must not turn ok at each of them.
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    sink, logs_port, port = OtlpSink().start(), free_port(), free_port()
    env = {
        "OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000",
        "OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint,
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": f"http://127.0.0.1:{logs_port}/v1/logs",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_METRIC_EXPORT_INTERVAL": "300",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
    }
    args = _otlp_worker_args(kafka_bootstrap, requests_topic, results_topic, port)
    log = tmp_path / "worker.log"
    process = start_worker_process(args, env, log)
    base = f"http://127.0.0.1:{port}"
    per_request = len(EFFICIENCY_METRICS)
    logs_collector: OtlpSink | None = None

    async def evaluate(n: int) -> None:
        async with producer(kafka_bootstrap, acks="all") as prod:
            await prod.send(requests_topic, request(n).model_dump_json().encode())
            await prod.flush()
        await read_topic(kafka_bootstrap, results_topic, expected=(n + 1) * per_request, timeout=90)

    try:
        await evaluate(0)
        await wait_until_async(lambda: _status(f"{base}/readyz") == 503, timeout=30, what="readiness to fail")
        metric_exports, span_exports = sink.metric_exports, len(sink.trace_requests)
        for n in range(1, 4):
            await evaluate(n)
            for _ in range(10):  # a few metrics exports apart
                assert await asyncio.to_thread(_get, f"{base}/readyz") == (503, "last telemetry export failed\n")
                await asyncio.sleep(0.15)
        assert sink.metric_exports >= metric_exports + 5 and len(sink.trace_requests) >= span_exports + 3
        assert not sink.log_requests
        logs_collector = OtlpSink(port=logs_port).start()
        await evaluate(4)
        await wait_until_async(lambda: _status(f"{base}/readyz") == 200, timeout=30, what="ready again")
        assert logs_collector.events()
        process.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(process.wait, 30) == -signal.SIGTERM
    finally:
        if process.poll() is None:
            process.kill()
        sink.stop()
        if logs_collector is not None:
            logs_collector.stop()
    lines = log.read_text().splitlines()
    failing = [line for line in lines if "telemetry export of" in line and "failing" in line]
    assert len(failing) == 1 and "telemetry export of logs" in failing[0] and "WARNING" in failing[0], lines
    assert any("telemetry export of logs" in line and "succeeded again" in line for line in lines), lines
