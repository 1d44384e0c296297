"""The README's PromQL examples: valid PromQL (promtool) over names and labels otel-eval emits."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from tests.deploy import prometheus_names
from tests.deploy.promql import selectors

README = Path(__file__).parents[2] / "README.md"


def test_the_readme_promql_is_valid_and_uses_emitted_names(promtool: str, tmp_path: Path) -> None:
    """The README's PromQL examples (```promql blocks) parse and read only names and labels otel-eval emits."""
    readme = README.read_text(encoding="utf-8")
    queries = re.findall(r"```promql\n(.*?)```", readme, re.DOTALL)
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
