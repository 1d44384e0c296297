"""The path a user runs, end to end: the agent's scores -> the OpenTelemetry Python Prometheus exporter -> a real
Prometheus server (Debian's ``prometheus``) scraping it with the shipped rules -> the alerts.

Only the rule group's interval and the scrape interval are shortened (to 1 s). Two agents hallucinate in known
shares of their answers (one above the alert's 5 %, one below) and their safety judge fails on the unsupported ones: the
hallucination-rate recording rule must show each share, the hallucination alert must go pending for the first and
stay absent for the second (its ``for:`` is minutes, so pending, not firing), the judge-error alert must go pending,
and every Grafana panel query must run (with data, for the panels an embedded agent feeds).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry, start_http_server

from otel_eval.demo.workload import Scenario
from tests._kafka import TansuBroker, free_port, producer, random_topic
from tests.deploy import emitted
from tests.deploy.conftest import RULE_FILES, dashboard_queries, load_yaml_documents
from tests.environment import clean_judge_environment, use_loopback_judge
from tests.judge.fake_gemini import FakeGemini
from tests.transport._requests import request
from tests.worker._harness import start_worker_process

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # Prometheus, the tansu broker and a worker process

T = TypeVar("T")
PROMETHEUS_MISSING = (
    "prometheus is not installed: the live alerting test needs it. Install the Debian package: "
    "`apt-get install -y --no-install-recommends prometheus` (as .ci/run does)."
)


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


def _wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60.0) -> T:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except OSError as exc:
            last = exc
        if last and not isinstance(last, OSError):
            return last
        time.sleep(0.25)
    pytest.fail(f"timed out waiting for {what}; last: {last!r}", pytrace=False)


class Prometheus:
    """A Prometheus server on loopback scraping ``targets`` (job -> host:port) every second with the shipped rules."""

    def __init__(self, directory: Path, targets: dict[str, str]) -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            pytest.fail(PROMETHEUS_MISSING, pytrace=False)
        rules = load_yaml_documents(RULE_FILES[0])[0]
        for group in rules["groups"]:
            group["interval"] = "1s"
        (directory / "rules.yaml").write_text(yaml.safe_dump(rules, sort_keys=False))
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": ["rules.yaml"],
            "scrape_configs": [
                {"job_name": job, "static_configs": [{"targets": [address]}]} for job, address in targets.items()
            ],
        }
        (directory / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.url = f"http://127.0.0.1:{free_port()}"
        self._log = (directory / "prometheus.log").open("w")
        self._process = subprocess.Popen(
            [
                binary,
                f"--config.file={directory / 'prometheus.yml'}",
                f"--storage.tsdb.path={directory / 'data'}",
                f"--web.listen-address={self.url.removeprefix('http://')}",
                "--log.level=warn",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        _wait_for("Prometheus to be ready", lambda: urllib.request.urlopen(f"{self.url}/-/ready", timeout=2))

    def query(self, expr: str) -> list[dict[str, Any]]:
        result = _get(f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}")
        return list(result["data"]["result"])

    def alert_states(self, job: str) -> dict[str, str]:
        """Alert name -> state (pending or firing) of ``job``'s alerts."""
        alerts = _get(f"{self.url}/api/v1/alerts")["data"]["alerts"]
        return {a["labels"]["alertname"]: a["state"] for a in alerts if a["labels"].get("job") == job}

    def stop(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
        self._log.close()


@dataclass
class Target:
    """One agent process as Prometheus sees it: its own /metrics endpoint and scrape job."""

    job: str
    agent: emitted.Agent
    server: Any
    meter_provider: MeterProvider
    address: str

    @classmethod
    def start(cls, job: str, batch: tuple[Scenario, ...]) -> Target:
        registry = CollectorRegistry()
        meter_provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
        port = free_port()
        server, _ = start_http_server(port, addr="127.0.0.1", registry=registry)
        return cls(job, emitted.Agent(meter_provider, batch), server, meter_provider, f"127.0.0.1:{port}")

    def stop(self) -> None:
        self.agent.shutdown()
        self.server.shutdown()
        self.server.server_close()  # shutdown() only stops serving: the listening socket stays open
        self.meter_provider.shutdown()


@dataclass
class Live:
    prometheus: Prometheus
    loud: Target
    calm: Target


LOUD_JOB, CALM_JOB, WORKER_JOB = emitted.JOB, "calm-agent", "otel-eval-worker"


def _start_worker(bootstrap: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A Kafka worker in ``prometheus`` telemetry mode with a few requests and one unreadable message to consume; its
    judge budget is zero, so every judged evaluation is refused (the budget panels' data)."""
    requests_topic = random_topic("requests")

    async def produce() -> None:
        async with producer(bootstrap, acks="all") as prod:
            for item in [request(i) for i in range(5)]:
                await prod.send(requests_topic, value=item.model_dump_json().encode(), key=item.trace_id.encode())
            await prod.send(requests_topic, value=b"not an evaluation request", key=b"poison")
            await prod.flush()

    asyncio.run(produce())
    port = free_port()
    args = ["--bootstrap-servers", bootstrap, "--requests-topic", requests_topic, "--group-id", random_topic("g")]
    args += ["--results-topic", random_topic("results"), "--dead-letter-topic", random_topic("dead")]
    args += ["--telemetry", "prometheus", "--metrics-host", "127.0.0.1", "--metrics-port", str(port)]
    judge = {k: v for k, v in os.environ.items() if k.startswith(("GOOGLE_", "GEMINI_", "OTEL_EVAL_JUDGE_"))}
    environment = {**judge, "OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000", "OTEL_EVAL_JUDGE_BUDGET": "0"}
    return start_worker_process(args, environment, log), f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, kafka_broker: TansuBroker) -> Iterator[Live]:
    """Two agents (30 % and 2.5 % of answers unsupported; the safety judge failing on their unsupported answers) and
    a Kafka worker scraped by a live Prometheus; the agents keep working until both agents' series are recorded, the
    loud agent's alerts are pending and the worker's batches are scraped."""
    with FakeGemini(emitted.judge_answers) as server, pytest.MonkeyPatch.context() as monkeypatch, ExitStack() as stack:
        stack.enter_context(clean_judge_environment(monkeypatch))
        use_loopback_judge(monkeypatch, server.base_url, emitted.JUDGE_ENVIRONMENT)
        directory = tmp_path_factory.mktemp("prometheus")
        worker, worker_address = _start_worker(kafka_broker.bootstrap, directory / "worker.log")
        loud, calm = Target.start(LOUD_JOB, emitted.BATCH), Target.start(CALM_JOB, emitted.CALM_BATCH)
        targets = {loud.job: loud.address, calm.job: calm.address, WORKER_JOB: worker_address}
        prometheus = Prometheus(directory, targets)
        try:
            _wait_for("the first scrapes", lambda: len(prometheus.query("up == 1")) == 3)
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:  # the agents keep working while Prometheus scrapes and evaluates
                loud.agent.run_batch()
                calm.agent.run_batch()
                time.sleep(0.3)
                states = prometheus.alert_states(LOUD_JOB)
                recorded = prometheus.query("job_agent:gen_ai_evaluation_hallucination_rate:ratio_rate5m")
                # Twice the alerts' volume guards: increase() estimates decay once the agents stop.
                volume = prometheus.query(
                    f'job_model:otel_eval_judge_calls:increase10m{{job="{LOUD_JOB}"}} >= 40'
                    " and on (job) job_agent:gen_ai_evaluation_hallucination_results:increase1h >= 60"
                )
                alerts = {"OtelEvalHallucinationRateHigh", "OtelEvalJudgeErrorRateHigh"} <= set(states)
                worked = prometheus.query("otel_eval_worker_dead_letters_total > 0") and prometheus.query(
                    "otel_eval_judge_budget_refusals_total > 0"
                )
                if alerts and volume and worked and len(recorded) == 2:
                    break
            time.sleep(1)  # a few more rule evaluations of the calm agent's settled rate
            yield Live(prometheus, loud, calm)
        finally:
            prometheus.stop()
            loud.stop()
            calm.stop()
            worker.terminate()
            worker.wait(timeout=30)


def _rate(live: Live, job: str) -> float:
    (sample,) = live.prometheus.query(f'job_agent:gen_ai_evaluation_hallucination_rate:ratio_rate5m{{job="{job}"}}')
    assert sample["metric"] == {
        "__name__": "job_agent:gen_ai_evaluation_hallucination_rate:ratio_rate5m",
        "job": job,
        "gen_ai_agent_name": emitted.AGENT_NAME,
    }
    return float(sample["value"][1])


def test_the_hallucination_rate_is_the_share_of_unsupported_answers(live: Live) -> None:
    assert _rate(live, LOUD_JOB) == pytest.approx(emitted.HALLUCINATION_SHARE, abs=0.02)
    assert _rate(live, CALM_JOB) == pytest.approx(emitted.hallucination_share(emitted.CALM_BATCH), abs=0.01)


def test_the_alerts_go_pending_above_the_threshold_and_stay_absent_below(live: Live) -> None:
    loud = live.prometheus.alert_states(LOUD_JOB)
    assert loud.get("OtelEvalHallucinationRateHigh") == "pending", loud
    # safety_v1 judge calls on the unsupported answers get HTTP 500
    assert loud.get("OtelEvalJudgeErrorRateHigh") == "pending", loud
    calm = live.prometheus.alert_states(CALM_JOB)
    assert "OtelEvalHallucinationRateHigh" not in calm, calm


def test_the_raw_counters_carry_the_contract_labels(live: Live) -> None:
    series = live.prometheus.query(f'gen_ai_evaluation_results_total{{job="{LOUD_JOB}"}}')
    by_metric: dict[str, set[str]] = {}
    for sample in series:
        labels = sample["metric"]
        assert labels["gen_ai_agent_name"] == emitted.AGENT_NAME
        by_metric.setdefault(labels["gen_ai_evaluation_name"], set()).add(labels["gen_ai_evaluation_score_label"])
    assert by_metric["hallucinations_v1"] == {"pass", "fail"}
    assert by_metric["safety_v1"] == {"pass", "not_evaluated"}
    assert by_metric["tool_call_count_v1"] == {"informational"}


NO_DATA_PANELS = frozenset(
    {
        "Dropped invocations by reason",
        "Dropped share of invocations (10m)",
        "Dropped spans by reason",
        "Rescued results: fail rate per metric and reason",
    }
)
"""Nothing is dropped in this workload, and every invocation is in the sample (the drop counters are covered by
tests/processor and tests/deploy's promtool tests, rescued results by tests/deploy/test_rescued_alerts.py)."""


def _grafana_to_promql(expr: str) -> str:
    expr = re.sub(r"\$\{?__(?:rate_interval|interval)\}?", "1m", expr)
    expr = re.sub(r"\$\{?__range\}?", "10m", expr)
    return re.sub(r"\$\{?[a-zA-Z_][a-zA-Z0-9_]*\}?", ".*", expr)


def test_every_dashboard_query_runs_and_every_panel_has_data(live: Live) -> None:
    """Agents and a Kafka worker feed every panel (the worker's lag, batches, dead letters and results included)."""
    with_data: dict[str, bool] = {}
    for where, expr in dashboard_queries():
        result = live.prometheus.query(_grafana_to_promql(expr))  # raises on a query Prometheus rejects
        panel = re.sub(r"^panel '(.*)' target \w+$", r"\1", where)
        with_data[panel] = with_data.get(panel, False) or bool(result)
    empty = sorted(panel for panel, data in with_data.items() if not data)
    assert empty == sorted(NO_DATA_PANELS), f"panels without data: {empty}"
