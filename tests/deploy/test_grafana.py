"""The Grafana dashboard: every query is valid PromQL (promtool parses it) and names only metrics otel-eval emits
or the shipped recording rules record; the panels cover what operators need; provisioning matches compose."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.deploy import prometheus_names
from tests.deploy.conftest import (
    DASHBOARD,
    DASHBOARD_FILES,
    DEPLOY,
    dashboard_panels,
    dashboard_queries,
    load_dashboard,
    load_rules,
    load_yaml_documents,
)
from tests.deploy.emittable import check_label_values
from tests.deploy.promql import expand_grafana, selectors

PROVISIONING = DEPLOY / "grafana" / "provisioning"


def test_the_dashboard_is_the_only_one_and_has_a_stable_uid() -> None:
    assert DASHBOARD_FILES == [DASHBOARD]
    dashboard = load_dashboard()
    assert dashboard["uid"] == "otel-eval"
    assert len(dashboard_queries(dashboard)) >= 30


def test_every_query_names_only_metrics_otel_eval_emits() -> None:
    emitted = prometheus_names.emitted_prometheus_names()
    recorded = {rule["record"] for rule in load_rules() if "record" in rule}
    for where, expr in dashboard_queries():
        used = selectors(expand_grafana(expr)).metric_names
        assert used, f"{where}: no metric in {expr!r}"
        unknown = used - emitted - recorded
        assert not unknown, f"{where} reads {sorted(unknown)}, which otel-eval does not emit: {expr!r}"


def test_every_query_uses_emitted_labels_and_values() -> None:
    allowed = prometheus_names.emitted_label_names()
    for where, expr in dashboard_queries():
        expanded = expand_grafana(expr)
        unknown = selectors(expanded).label_names - allowed
        assert not unknown, f"{where} uses labels {sorted(unknown)}: {expr!r}"
        check_label_values(expanded, where)
    for variable in load_dashboard()["templating"]["list"]:
        label = re.search(r",\s*([a-zA-Z_][a-zA-Z0-9_]*)\)\s*$", variable["definition"])
        assert label and label.group(1) in allowed, variable["name"]


@pytest.mark.integration
def test_every_query_is_valid_promql(promtool: str, tmp_path: Path) -> None:
    """promtool parses each query as a recording rule (Grafana variables expanded to a duration and a name)."""
    rules = [
        {"record": f"dashboard:query_{index}", "expr": expand_grafana(expr)}
        for index, (_, expr) in enumerate(dashboard_queries())
    ]
    path = tmp_path / "dashboard_queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}), encoding="utf-8")
    process = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert process.returncode == 0, (
        f"promtool check rules on the dashboard's queries:\n{process.stdout}{process.stderr}"
    )


@pytest.mark.parametrize(
    ("topic", "required_metrics"),
    [
        ("scores per metric and agent", {"gen_ai_evaluation_score_sum", "gen_ai_evaluation_score_count"}),
        ("hallucination rate", {"job_agent:gen_ai_evaluation_hallucination_rate:ratio_rate5m"}),
        ("pass rates", {"job_agent_evaluation:gen_ai_evaluation_pass_rate:ratio_rate30m"}),
        ("evaluation throughput", {"job_agent_evaluation_label:gen_ai_evaluation_results:rate5m"}),
        ("judge latency", {"otel_eval_judge_duration_seconds_bucket"}),
        ("judge tokens", {"otel_eval_judge_tokens_total"}),
        ("judge cost", {"otel_eval_judge_cost_total"}),
        ("drops", {"otel_eval_invocations_dropped_total", "otel_eval_spans_dropped_total"}),
        ("consumer lag", {"otel_eval_worker_consumer_lag"}),
    ],
)
def test_the_dashboard_covers(topic: str, required_metrics: set[str]) -> None:
    used = set().union(*(selectors(expand_grafana(expr)).metric_names for _, expr in dashboard_queries()))
    assert required_metrics <= used, f"no panel shows {topic}: missing {sorted(required_metrics - used)}"


def test_scores_are_split_by_metric_and_agent() -> None:
    panel = next(
        p for p in dashboard_panels(load_dashboard()["panels"]) if p["title"] == "Mean score per metric and agent"
    )
    groups = selectors(expand_grafana(panel["targets"][0]["expr"])).label_names
    assert {"gen_ai_evaluation_name", "gen_ai_agent_name"} <= groups


def test_histograms_are_read_only_as_means_and_quantiles() -> None:
    """A histogram series' first sample already holds the observations its process made before it (docs/telemetry.md),
    which ``rate()`` and ``increase()`` leave out: a mean (``_sum`` / ``_count``) or a quantile of the buckets loses
    them from both sides alike, a count or a sum of observations would come out short."""
    histograms = {
        prometheus_names.prometheus_metric_name(spec.name, spec.unit, "histogram")
        for spec in prometheus_names.instrument_specs().values()
        if spec.kind == "histogram"
    }
    rules = [(f"rule {rule.get('alert') or rule.get('record')}", rule["expr"]) for rule in load_rules()]
    reads = 0
    for where, expr in [*dashboard_queries(), *rules]:
        used = selectors(expand_grafana(expr)).metric_names
        for base in histograms:
            if f"{base}_bucket" in used:
                reads += 1
                assert "histogram_quantile(" in expr, f"{where} reads {base}_bucket other than as a quantile: {expr!r}"
            if used & {f"{base}_sum", f"{base}_count"}:
                reads += 1
                mean = {f"{base}_sum", f"{base}_count"} <= used and "/" in expr
                assert mean, f"{where} reads {base}_sum or _count other than as their ratio: {expr!r}"
    assert reads >= 5  # the score, efficiency, judge latency and worker batch panels


def test_every_panel_uses_the_provisioned_prometheus_datasource() -> None:
    datasources = load_yaml_documents(PROVISIONING / "datasources" / "datasources.yaml")[0]["datasources"]
    prometheus = next(d for d in datasources if d["type"] == "prometheus")
    assert prometheus["url"] == "http://prometheus:9090"  # the compose service name and port
    for panel in dashboard_panels(load_dashboard()["panels"]):
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": prometheus["uid"]}, panel["title"]
            for target in panel["targets"]:
                assert target["datasource"]["uid"] == prometheus["uid"], panel["title"]


def test_panels_do_not_overlap() -> None:
    cells: set[tuple[int, int]] = set()
    for panel in dashboard_panels(load_dashboard()["panels"]):
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        area = {
            (x, y) for x in range(grid["x"], grid["x"] + grid["w"]) for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not cells & area, f"panel {panel['title']!r} overlaps another"
        cells |= area


def test_provisioning_points_at_the_mounted_dashboards() -> None:
    provider = load_yaml_documents(PROVISIONING / "dashboards" / "otel-eval.yaml")[0]["providers"][0]
    compose = load_yaml_documents(DEPLOY / "docker-compose.yaml")[0]
    mounts = dict(volume.rsplit(":", 2)[:2] for volume in compose["services"]["grafana"]["volumes"])
    assert mounts["./grafana/dashboards"] == provider["options"]["path"]
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"
