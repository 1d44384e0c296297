"""Shared paths and loaders for the deploy/ checks (static: no container engine runs here)."""

from __future__ import annotations

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
