"""The dashboard's score panels on series our emitters really wrote, run by promtool.

The agent runs with its default metric set: the judged metrics of its criteria and ADK's efficiency metrics, which
report a token count, a duration or a call count as their score (``informational``). The score histogram's buckets
hold 0-1 and 1-5 scores, so a quantile of a token count would read as the top bucket's bound (5): the score panels
must show the metrics with a verdict only, and the efficiency panel each efficiency metric's true mean.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otel_eval.metrics import EFFICIENCY_METRICS
from tests.deploy import emitted
from tests.deploy.conftest import RULE_FILES, dashboard_panels, load_dashboard
from tests.deploy.emitted import AGENT_NAME, JOB, Sample
from tests.deploy.promql import expand_grafana
from tests.environment import clean_judge_environment, use_loopback_judge
from tests.judge.fake_gemini import FakeGemini

pytestmark = pytest.mark.integration

MINUTES = 30
VERDICT_METRICS = set(emitted.CRITERIA)
ALL_VARIABLES = {"$job": ".*", "$agent": ".*", "$metric": ".*"}


@pytest.fixture(scope="module")
def samples() -> Iterator[list[Sample]]:
    """One batch's metrics (OTLP translation), the default metric set scored."""
    with (
        FakeGemini(emitted.judge_answers) as server,
        pytest.MonkeyPatch.context() as monkeypatch,
        clean_judge_environment(monkeypatch),
    ):
        use_loopback_judge(monkeypatch, server.base_url, emitted.JUDGE_ENVIRONMENT)
        reader = InMemoryMetricReader()
        meter_provider = MeterProvider(metric_readers=[reader])
        agent = emitted.Agent(meter_provider)
        try:
            agent.run_batch()
            yield emitted.collected_otlp_samples(reader)
        finally:
            agent.shutdown()
            meter_provider.shutdown()


def _query(expr: str, **variables: str) -> str:
    """``expr`` with the dashboard's variables set: every job, agent and metric unless ``variables`` says otherwise."""
    for variable, value in {**ALL_VARIABLES, **{f"${k}": v for k, v in variables.items()}}.items():
        expr = expr.replace(variable, value)
    return expand_grafana(expr)


def _panel_queries(title: str, metric: str = ".*", agent: str = ".*") -> list[str]:
    """The panel's queries with the dashboard's variables set: every job, ``agent`` and ``metric``."""
    panel = next(p for p in dashboard_panels(load_dashboard()["panels"]) if p["title"] == title)
    return [_query(target["expr"], metric=metric, agent=agent) for target in panel["targets"]]


def _relabelled(samples: list[Sample], label: str, value: str, scale: float = 1) -> list[Sample]:
    """``samples`` with ``label`` set to ``value`` (the cumulative ones ``scale`` times as large)."""
    moved = []
    for sample in samples:
        labels = tuple(sorted({**dict(sample.labels), label: value}.items()))
        cumulative = re.search(r"_(total|bucket|sum|count)$", sample.name) is not None
        factor = scale if cumulative else 1
        first = None if sample.first is None else sample.first * factor
        moved.append(replace(sample, labels=labels, value=sample.value * factor, first=first))
    return moved


def _promtool(promtool: str, samples: list[Sample], tests: list[dict[str, Any]], tmp_path: Path) -> None:
    """``tests`` (promql_expr_test items) on one batch a minute of ``samples``, with the shipped rules."""
    series = [{"series": s.series, "values": emitted.input_values(s, MINUTES)} for s in samples]
    test = {
        "rule_files": [str(path) for path in RULE_FILES],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": tests}],
    }
    path = tmp_path / "panels_test.yaml"
    path.write_text(yaml.safe_dump(test, sort_keys=False), encoding="utf-8")
    process = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert process.returncode == 0, f"promtool on the panels' queries:\n{process.stdout}{process.stderr}"


def test_the_emitted_scores_include_efficiency_values_the_score_buckets_cannot_hold(samples: list[Sample]) -> None:
    sums = emitted.named(samples, "gen_ai_evaluation_score_sum")
    scored = {s.label("gen_ai_evaluation_name"): s for s in sums}
    assert set(EFFICIENCY_METRICS) | VERDICT_METRICS <= set(scored)
    for name in EFFICIENCY_METRICS:
        assert scored[name].label("gen_ai_evaluation_score_label") == "informational", name
    assert scored["token_usage_v1"].value / len(emitted.BATCH) > 5  # past the top bucket


@pytest.mark.parametrize("title", ["Mean score per metric and agent", "Score median and p10 per metric"])
def test_the_score_panels_show_only_metrics_with_a_verdict_on_their_scale(
    samples: list[Sample], title: str, promtool: str, tmp_path: Path
) -> None:
    tests = []
    for query in _panel_queries(title):
        tests.append(
            {
                "expr": f"count by (gen_ai_evaluation_name) ({query})",
                "eval_time": "20m",
                "exp_samples": [
                    {"labels": f'{{gen_ai_evaluation_name="{m}"}}', "value": 1} for m in sorted(VERDICT_METRICS)
                ],
            }
        )
        tests.append({"expr": f"({query}) > 1", "eval_time": "20m", "exp_samples": []})  # 0-1 metrics stay in 0-1
    _promtool(promtool, samples, tests, tmp_path)


def test_the_efficiency_panel_shows_each_efficiency_metrics_mean_per_invocation(
    samples: list[Sample], promtool: str, tmp_path: Path
) -> None:
    sums = {s.label("gen_ai_evaluation_name"): s.value for s in emitted.named(samples, "gen_ai_evaluation_score_sum")}
    counts = {
        s.label("gen_ai_evaluation_name"): s.value for s in emitted.named(samples, "gen_ai_evaluation_score_count")
    }
    tests = []
    for name in sorted(EFFICIENCY_METRICS):
        (query,) = _panel_queries("Efficiency per invocation (mean)", metric=name)
        tests.append(
            {
                "expr": f"round({query}, 0.001)",
                "eval_time": "20m",
                "exp_samples": [
                    {
                        "labels": f'{{gen_ai_evaluation_name="{name}",gen_ai_agent_name="{AGENT_NAME}"}}',
                        "value": round(sums[name] / counts[name], 3),
                    }
                ],
            }
        )
    assert sums["token_usage_v1"] / counts["token_usage_v1"] > 5
    _promtool(promtool, samples, tests, tmp_path)


def test_every_legend_tells_apart_the_series_of_two_jobs_running_the_same_agent(
    samples: list[Sample], promtool: str, tmp_path: Path
) -> None:
    """Two services (jobs) run an agent of the same name with the same judge model (its results some rescued by
    priority sampling, some refused by the judge budget): no panel shows two of its lines under one legend."""
    results = emitted.named(samples, "gen_ai_evaluation_results_total")
    errors = emitted.named(samples, "otel_eval_evaluation_errors_total")
    rescued = _relabelled(results, "otel_eval_priority_reason", "error")
    refused = _relabelled(errors, "error_type", "budget_exhausted")
    one_job = [*samples, *rescued, *refused]
    both_jobs = [*one_job, *_relabelled(one_job, "job", f"{JOB}-canary")]
    tests = []
    for panel in dashboard_panels(load_dashboard()["panels"]):
        for target in panel.get("targets", []):
            legend = ", ".join(re.findall(r"\{\{\s*(\w+)\s*\}\}", target.get("legendFormat", "")))
            query = _query(target["expr"])
            tests.append({"expr": f"count by ({legend}) ({query}) > 1", "eval_time": "20m", "exp_samples": []})
    for title in (
        "Hallucination rate (failed / hallucinations_v1 verdicts)",
        "Judge error rate (10m)",
        "Judge budget: share of evaluations refused (15m)",
        "Rescued results: fail rate per metric and reason",
    ):
        for query in _panel_queries(title, metric="hallucinations_v1"):
            tests.append(  # the check above had lines to compare
                {"expr": f"count({query}) > bool 0", "eval_time": "20m", "exp_samples": [{"labels": "{}", "value": 1}]}
            )
    _promtool(promtool, both_jobs, tests, tmp_path)


def test_the_throughput_panel_shows_the_selected_agents_results_only(
    samples: list[Sample], promtool: str, tmp_path: Path
) -> None:
    """Another agent of the same job evaluated twice as much: selecting ``AGENT_NAME`` shows its results alone."""
    results = emitted.named(samples, "gen_ai_evaluation_results_total")
    per_batch: dict[str, float] = {}
    for sample in results:
        name = str(sample.label("gen_ai_evaluation_name"))
        per_batch[name] = per_batch.get(name, 0) + sample.value
    (query,) = _panel_queries("Evaluation throughput per metric", agent=AGENT_NAME)
    tests = [
        {
            "expr": f"round(60 * ({query}), 0.001)",
            "eval_time": "20m",
            "exp_samples": [
                {"labels": f'{{gen_ai_evaluation_name="{name}"}}', "value": count}
                for name, count in sorted(per_batch.items())
            ],
        }
    ]
    billing = _relabelled(samples, "gen_ai_agent_name", "billing_assistant", scale=2)
    _promtool(promtool, [*samples, *billing], tests, tmp_path)
