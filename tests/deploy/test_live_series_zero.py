"""A short-lived agent process (a serverless instance, a restarted replica) as a real Prometheus sees it.

The agent's request is evaluated before Prometheus first scrapes it (the OpenTelemetry Python Prometheus exporter on
its own ``/metrics``), then Prometheus scrapes it a few times. ``increase()`` over the process' lifetime must count
every count of every counter it exposes, its first results and its first hallucinations_v1 fail included: Prometheus
counts nothing of a series' first sample, so each series must be 0 there.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry, start_http_server

from tests._kafka import free_port
from tests.deploy import emitted
from tests.deploy.test_live_prometheus import Prometheus, _get, _wait_for
from tests.environment import clean_judge_environment, use_loopback_judge
from tests.judge.fake_gemini import FakeGemini

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a Prometheus server

JOB = "short-lived-agent"
COUNTERS = f'{{job="{JOB}",__name__=~".+_total"}}'
SAMPLES = 4
"""Scrapes of the process before it is read: its first sample and a few after."""


def _query(prometheus: Prometheus, expr: str, at: float) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode({"query": expr, "time": repr(at)})
    return list(_get(f"{prometheus.url}/api/v1/query?{query}")["data"]["result"])


def _by_labels(result: list[dict[str, Any]]) -> dict[frozenset[tuple[str, str]], float]:
    return {frozenset((k, v) for k, v in r["metric"].items() if k != "__name__"): float(r["value"][1]) for r in result}


@pytest.fixture
def scraped(tmp_path: Path) -> Iterator[tuple[Prometheus, float]]:
    """Prometheus, and the time of its last scrape of the process: one batch evaluated before the first scrape."""
    with FakeGemini(emitted.judge_answers) as server, pytest.MonkeyPatch.context() as monkeypatch, ExitStack() as stack:
        stack.enter_context(clean_judge_environment(monkeypatch))
        use_loopback_judge(monkeypatch, server.base_url, emitted.JUDGE_ENVIRONMENT)
        port = free_port()
        prometheus = Prometheus(tmp_path, {JOB: f"127.0.0.1:{port}"})
        stack.callback(prometheus.stop)
        registry = CollectorRegistry()
        meter_provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
        stack.callback(meter_provider.shutdown)
        agent = emitted.Agent(meter_provider)
        stack.callback(agent.shutdown)
        agent.run_batch()
        http_server, _ = start_http_server(port, addr="127.0.0.1", registry=registry)
        stack.callback(http_server.server_close)
        stack.callback(http_server.shutdown)
        scrapes = f'min(count_over_time(gen_ai_evaluation_results_total{{job="{JOB}"}}[10m])) >= {SAMPLES}'
        _wait_for(f"{SAMPLES} scrapes of the process", lambda: prometheus.query(scrapes))
        (last,) = prometheus.query(f'max(timestamp(gen_ai_evaluation_results_total{{job="{JOB}"}}))')
        yield prometheus, float(last["value"][1])


def test_increase_over_a_short_lived_process_counts_its_first_results(scraped: tuple[Prometheus, float]) -> None:
    prometheus, at = scraped
    names = {r["metric"]["__name__"] for r in _query(prometheus, f"group by (__name__) ({COUNTERS})", at)}
    assert {
        "gen_ai_evaluation_results_total",
        "otel_eval_judge_calls_total",
        "otel_eval_evaluation_errors_total",
        "otel_eval_invocations_sampled_total",
        "otel_eval_invocations_evaluated_total",
    } <= names
    for name in sorted(names):
        # At the last sample's time increase() does not extrapolate past it, nor before a first sample of 0.
        totals = _by_labels(_query(prometheus, f'{name}{{job="{JOB}"}}', at))
        counted = _by_labels(_query(prometheus, f'increase({name}{{job="{JOB}"}}[10m])', at))
        assert counted == pytest.approx(totals), f"{name}: increase() over the process' life vs its totals"
    fails = _query(
        prometheus,
        f'increase(gen_ai_evaluation_results_total{{job="{JOB}",gen_ai_evaluation_name="hallucinations_v1",'
        'gen_ai_evaluation_score_label="fail"}[10m])',
        at,
    )
    hallucinating = round(emitted.HALLUCINATION_SHARE * len(emitted.BATCH))
    assert [round(float(r["value"][1])) for r in fails] == [hallucinating]
