"""The path a user runs, end to end: the agent's scores -> the OpenTelemetry Python Prometheus exporter -> a real
Prometheus server (Debian's ``prometheus``) scraping it with the shipped rules -> the alerts.

Only the rule group's interval and the scrape interval are shortened (to 1 s). The agent hallucinates in a known
share of its answers and its safety judge fails every call: the hallucination-rate recording rule must show that
share, and the hallucination and judge-error alerts must go pending (their ``for:`` is minutes, so not firing).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry, start_http_server

from tests.deploy import emitted
from tests.deploy.conftest import RULE_FILES, load_yaml_documents
from tests.judge.fake_gemini import FakeGemini
from tests.judge.helpers import TEST_KEY

pytestmark = pytest.mark.slow

T = TypeVar("T")
PROMETHEUS_MISSING = (
    "prometheus is not installed: the live alerting test needs it. Install the Debian package: "
    "`apt-get install -y --no-install-recommends prometheus` (as .ci/run does)."
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
    """A Prometheus server on loopback scraping ``target`` every second with the shipped rules."""

    def __init__(self, directory: Path, target: str) -> None:
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
            "scrape_configs": [{"job_name": emitted.JOB, "static_configs": [{"targets": [target]}]}],
        }
        (directory / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.url = f"http://127.0.0.1:{_free_port()}"
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

    def alert_states(self) -> dict[str, str]:
        return {a["labels"]["alertname"]: a["state"] for a in _get(f"{self.url}/api/v1/alerts")["data"]["alerts"]}

    def stop(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
        self._log.close()


@pytest.fixture
def judge_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGemini]:
    with FakeGemini(emitted.judge_answers) as server:
        for name in ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        for name, value in emitted.JUDGE_ENVIRONMENT.items():
            monkeypatch.setenv(name, value)
        yield server


def test_a_live_prometheus_sees_the_hallucination_share_and_the_alerts_go_pending(
    judge_environment: FakeGemini, tmp_path: Path
) -> None:
    registry = CollectorRegistry()
    meter_provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    port = _free_port()
    server, _ = start_http_server(port, addr="127.0.0.1", registry=registry)
    agent = emitted.Agent(meter_provider)
    prometheus = Prometheus(tmp_path, f"127.0.0.1:{port}")
    try:
        _wait_for("the first scrape", lambda: prometheus.query(f'up{{job="{emitted.JOB}"}} == 1'))
        deadline = time.monotonic() + 90
        states: dict[str, str] = {}
        rate: list[dict[str, Any]] = []
        while time.monotonic() < deadline:  # the agent keeps working while Prometheus scrapes and evaluates
            agent.run_batch()
            time.sleep(0.3)
            states = prometheus.alert_states()
            rate = prometheus.query("job_agent:gen_ai_evaluation_hallucination_rate:ratio_rate5m")
            if {"OtelEvalHallucinationRateHigh", "OtelEvalJudgeErrorRateHigh"} <= set(states) and rate:
                break
        assert states.get("OtelEvalHallucinationRateHigh") == "pending", states
        assert states.get("OtelEvalJudgeErrorRateHigh") == "pending", states
        (sample,) = rate
        assert sample["metric"] == {
            "__name__": "job_agent:gen_ai_evaluation_hallucination_rate:ratio_rate5m",
            "job": emitted.JOB,
            "gen_ai_agent_name": emitted.AGENT_NAME,
        }
        assert float(sample["value"][1]) == pytest.approx(emitted.HALLUCINATION_SHARE, abs=0.02)
    finally:
        prometheus.stop()
        agent.shutdown()
        server.shutdown()
        meter_provider.shutdown()
