"""The site shows the shipped files as they are: docs/_hooks/shipped_files.py replaces each marker with the file it
names, read at build time, and the pages that show deploy/, the Prometheus rules and the Collector configurations
hold the markers of every such file (a new manifest or configuration without its page fails here)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from tests.docs.recipes import REPO

PAGES = {
    "docs/reference/deploy.md": ("deploy/README.md", "deploy/docker-compose.yaml", *(
        str(p.relative_to(REPO)) for p in sorted((REPO / "deploy" / "k8s").rglob("*.yaml")))),
    "docs/reference/prometheus-rules.md": (
        "deploy/prometheus/README.md", "deploy/prometheus/rules/otel-eval.rules.yaml", "deploy/prometheus/prometheus.yml"),
    "docs/reference/collector.md": ("collector_config/README.md", *(
        str(p.relative_to(REPO)) for p in sorted((REPO / "collector_config").rglob("*")) if p.is_file()
        and p.name != "README.md")),
}  # fmt: skip


def _hook() -> ModuleType:
    path = REPO / "docs" / "_hooks" / "shipped_files.py"
    spec = importlib.util.spec_from_file_location("docs_shipped_files", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


HOOK = _hook()


@pytest.mark.parametrize("page", sorted(PAGES))
def test_each_page_shows_every_shipped_file_of_its_folder(page: str) -> None:
    markdown = (REPO / page).read_text(encoding="utf-8")
    shown = {path for _, path in HOOK.MARKER.findall(markdown)}
    assert shown == set(PAGES[page])
    rendered = HOOK.render(markdown)
    assert "<!-- shipped" not in rendered
    for path in PAGES[page]:
        text = (REPO / path).read_text(encoding="utf-8")
        if path.endswith("README.md"):
            first_paragraph = text.split("\n\n")[1].split("\n")[0]
            assert first_paragraph.split("](")[0] in rendered, path
        else:
            assert text.rstrip("\n") in rendered, path  # the file verbatim, in a code block titled with its path
            assert f'title="{path}"' in rendered


def test_the_alert_expression_is_on_the_site_as_the_file_has_it() -> None:
    rendered = HOOK.render((REPO / "docs/reference/prometheus-rules.md").read_text(encoding="utf-8"))
    assert "- alert: OtelEvalHallucinationRateHigh" in rendered
    assert "job_agent:gen_ai_evaluation_hallucination_rate:ratio_rate5m > 0.05" in rendered
    assert "| `OtelEvalHallucinationRateHigh` |" in rendered  # the alert table


def test_a_marker_naming_a_missing_file_fails_the_build() -> None:
    with pytest.raises(FileNotFoundError, match=r"no/such\.yaml"):
        HOOK.render("<!-- shipped: no/such.yaml -->")


def test_a_readme_is_inlined_with_its_headings_one_level_down_and_its_file_links_as_text() -> None:
    rendered = HOOK.render("<!-- shipped-readme: deploy/README.md -->")
    assert rendered.startswith("## ")
    assert "](../examples/weather_agent.py)" not in rendered and "`examples/weather_agent.py`" in rendered
