"""The PromQL examples of the README and the documentation: valid PromQL (promtool) over names and labels otel-eval
emits."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.deploy import prometheus_names
from tests.deploy.promql import selectors

REPO = Path(__file__).parents[2]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

pytestmark = pytest.mark.integration  # promtool


def test_the_readme_promql_is_valid_and_uses_emitted_names(promtool: str, tmp_path: Path) -> None:
    """The PromQL examples (```promql blocks) parse and read only names and labels otel-eval emits."""
    text = "".join(path.read_text(encoding="utf-8") for path in DOCUMENTS)
    queries = re.findall(r"```promql\n(.*?)```", text, re.DOTALL)
    assert queries
    emitted, labels = prometheus_names.emitted_prometheus_names(), prometheus_names.emitted_label_names()
    for query in queries:
        found = selectors(query)
        assert found.metric_names <= emitted and found.label_names <= labels, query
    rules = [{"record": f"readme:query_{i}", "expr": query} for i, query in enumerate(queries)]
    path = tmp_path / "readme_queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "readme", "rules": rules}]}), encoding="utf-8")
    process = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert process.returncode == 0, f"{process.stdout}{process.stderr}"
