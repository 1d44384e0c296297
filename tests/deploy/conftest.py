"""Shared paths and loaders for the deploy/ checks (static: no container engine runs here)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
PROMETHEUS_DIR = DEPLOY / "prometheus"
RULE_FILES = sorted((PROMETHEUS_DIR / "rules").glob("*.yaml"))
RULE_TEST_FILES = sorted((PROMETHEUS_DIR / "tests").glob("*.yaml"))
DASHBOARD_FILES = sorted((DEPLOY / "grafana" / "dashboards").glob("*.json"))
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "otel-eval.json"
COMPOSE_FILE = DEPLOY / "docker-compose.yaml"
K8S_DIR = DEPLOY / "k8s"

PROMTOOL_MISSING = (
    "promtool is not installed: the Prometheus rule tests need it. Install the Debian package: "
    "`apt-get update && apt-get install -y --no-install-recommends prometheus` (as .ci/run does)."
)


@pytest.fixture(scope="session")
def promtool() -> str:
    """Path of promtool; a missing promtool FAILS the test (never skips): the rules would go unchecked."""
    path = shutil.which("promtool")
    if path is None:
        pytest.fail(PROMTOOL_MISSING, pytrace=False)
    return path


def load_yaml_documents(path: Path) -> list[Any]:
    """Every non-empty YAML document of ``path``."""
    with path.open(encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc is not None]


def load_rules() -> list[dict[str, Any]]:
    """Every rule of every shipped rule file."""
    rules: list[dict[str, Any]] = []
    for path in RULE_FILES:
        for group in load_yaml_documents(path)[0]["groups"]:
            rules.extend(group["rules"])
    return rules


def load_dashboard() -> dict[str, Any]:
    """The shipped Grafana dashboard."""
    return dict(json.loads(DASHBOARD.read_text(encoding="utf-8")))


def dashboard_panels(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every panel, rows' nested panels included."""
    found: list[dict[str, Any]] = []
    for panel in panels:
        found.append(panel)
        found.extend(dashboard_panels(panel.get("panels", [])))
    return found


def dashboard_queries(dashboard: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target and every query variable (``label_values(expr, label)`` -> expr)."""
    dashboard = dashboard or load_dashboard()
    queries = [
        (f"panel {panel['title']!r} target {target.get('refId')}", target["expr"])
        for panel in dashboard_panels(dashboard["panels"])
        for target in panel.get("targets", [])
        if "expr" in target
    ]
    for variable in dashboard["templating"]["list"]:
        query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
        match = re.fullmatch(r"label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)", query.strip())
        assert match, f"variable {variable['name']}: expected label_values(<selector>, <label>), got {query!r}"
        queries.append((f"variable {variable['name']}", match.group(1)))
    return queries
