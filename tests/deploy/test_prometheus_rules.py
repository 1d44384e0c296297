"""The shipped Prometheus rules: promtool accepts and unit-tests them, every alert is tested three ways, and every
expression reads only metrics otel-eval emits (under their Prometheus names) with labels and values it sets."""

from __future__ import annotations

import itertools
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from otel_eval import semconv
from tests.deploy import prometheus_names
from tests.deploy.conftest import PROMETHEUS_DIR, REPO, RULE_FILES, RULE_TEST_FILES, load_rules, load_yaml_documents
from tests.deploy.emittable import check_label_values
from tests.deploy.promql import selectors


def _run(promtool: str, *args: str | Path, cwd: Path) -> None:
    process = subprocess.run([promtool, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120)
    if process.returncode != 0:
        pytest.fail(
            f"promtool {' '.join(map(str, args))} failed (exit {process.returncode}):\n{process.stdout}{process.stderr}",
            pytrace=False,
        )


def test_rule_files_exist() -> None:
    assert [p.name for p in RULE_FILES] == ["otel-eval.rules.yaml"]
    assert len(RULE_TEST_FILES) >= 5


@pytest.mark.integration
def test_promtool_check_rules(promtool: str) -> None:
    _run(promtool, "check", "rules", *RULE_FILES, cwd=PROMETHEUS_DIR)


@pytest.mark.integration
def test_promtool_check_config_of_the_compose_prometheus(promtool: str) -> None:
    _run(promtool, "check", "config", "prometheus.yml", cwd=PROMETHEUS_DIR)


@pytest.mark.integration
@pytest.mark.parametrize("test_file", RULE_TEST_FILES, ids=lambda p: p.name)
def test_promtool_test_rules(promtool: str, test_file: Path) -> None:
    _run(promtool, "test", "rules", test_file.name, cwd=test_file.parent)


def _test_cases() -> list[dict[str, Any]]:
    return [case for path in RULE_TEST_FILES for case in load_yaml_documents(path)[0]["tests"]]


def _alert_checks(case: dict[str, Any], alert: str) -> list[tuple[int, bool]]:
    """(eval time in seconds, expects a firing alert) for every check of ``alert`` in ``case``, in time order."""
    checks = [
        (_seconds(check["eval_time"]), bool(check.get("exp_alerts")))
        for check in case.get("alert_rule_test", [])
        if check["alertname"] == alert
    ]
    return sorted(checks)


def _seconds(duration: str) -> int:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    total, number = 0, ""
    for char in str(duration):
        if char.isdigit():
            number += char
        else:
            total, number = total + int(number) * units[char], ""
    return total


def _fires_then_resolves(checks: list[tuple[int, bool]]) -> bool:
    firing = [expected for _, expected in checks]
    return any(earlier and not later for earlier, later in itertools.pairwise(firing))


@pytest.mark.parametrize("alert", [r["alert"] for r in load_rules() if "alert" in r])
def test_every_alert_is_tested_to_fire_to_resolve_and_to_stay_silent_on_low_volume(alert: str) -> None:
    cases = _test_cases()
    fires = [c["name"] for c in cases if any(firing for _, firing in _alert_checks(c, alert))]
    resolves = [c["name"] for c in cases if _fires_then_resolves(_alert_checks(c, alert))]
    silent_low_volume = [
        c["name"]
        for c in cases
        if "low" in c["name"] and _alert_checks(c, alert) and not any(firing for _, firing in _alert_checks(c, alert))
    ]
    assert fires, f"no promtool test expects {alert} to fire"
    assert resolves, f"no promtool test expects {alert} to resolve (firing, then no alert later in the same test)"
    assert silent_low_volume, f"no promtool test named '... low ...' expects {alert} to stay silent"


def test_every_alert_has_severity_summary_and_description() -> None:
    for rule in load_rules():
        if "alert" in rule:
            assert rule["labels"]["severity"] in ("page", "warning"), rule["alert"]
            assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]


def _doc_anchors(path: Path) -> set[str]:
    """The anchors MkDocs gives the headings of ``path`` (its default slugify)."""
    headings = re.findall(r"^#+\s+(.+?)\s*$", path.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", heading).strip().lower()) for heading in headings}


@pytest.mark.parametrize("alert", [r for r in load_rules() if "alert" in r], ids=lambda r: r["alert"])
def test_every_alert_names_its_runbook_section(alert: dict[str, Any]) -> None:
    """On-call gets from the page to what to check and how to open the offending traces."""
    runbook = alert["annotations"].get("runbook", "")
    page, _, anchor = runbook.partition("#")
    assert page == "docs/deploying.md" and anchor == alert["alert"].lower(), f"{alert['alert']}: runbook {runbook!r}"
    assert anchor in _doc_anchors(REPO / page), f"{alert['alert']}: {page} has no section #{anchor}"


def test_the_hallucination_alert_is_multi_window_with_a_volume_guard_and_for() -> None:
    rule = next(r for r in load_rules() if r.get("alert") == "OtelEvalHallucinationRateHigh")
    expr = rule["expr"]
    assert "ratio_rate5m" in expr and "ratio_rate1h" in expr and "increase1h" in expr
    assert _seconds(rule["for"]) >= 300
    recorded = {r["record"]: r["expr"] for r in load_rules() if "record" in r}
    ratio = recorded["job_agent:gen_ai_evaluation_hallucination_rate:ratio_rate5m"]
    assert 'gen_ai_evaluation_name="hallucinations_v1"' in ratio
    assert f'gen_ai_evaluation_score_label="{semconv.LABEL_FAIL}"' in ratio


def test_rules_read_only_emitted_metrics_and_recorded_series() -> None:
    emitted = prometheus_names.emitted_prometheus_names()
    recorded = {r["record"] for r in load_rules() if "record" in r}
    for rule in load_rules():
        used = selectors(rule["expr"]).metric_names
        unknown = used - emitted - recorded
        assert not unknown, (
            f"{rule.get('alert') or rule.get('record')} reads {sorted(unknown)}, which otel-eval does not emit"
        )


def test_rules_use_only_labels_the_emitted_series_carry() -> None:
    allowed = prometheus_names.emitted_label_names()
    for rule in load_rules():
        unknown = selectors(rule["expr"]).label_names - allowed
        assert not unknown, f"{rule.get('alert') or rule.get('record')} uses labels {sorted(unknown)}"


def test_rules_match_only_label_values_otel_eval_sets() -> None:
    for rule in load_rules():
        check_label_values(rule["expr"], rule.get("alert") or rule.get("record", "?"))


def test_a_typo_in_a_rule_would_be_caught() -> None:
    """The checks above are not vacuous: misspelt names, labels and values are reported."""
    assert "gen_ai_evaluation_result_total" not in prometheus_names.emitted_prometheus_names()
    assert "gen_ai_evaluation_label" not in prometheus_names.emitted_label_names()
    with pytest.raises(AssertionError, match="never set"):
        check_label_values('x{gen_ai_evaluation_name="hallucination_v1"}', "probe")
    with pytest.raises(AssertionError, match="never set"):
        check_label_values('x{gen_ai_evaluation_score_label=~"pass|failed"}', "probe")
