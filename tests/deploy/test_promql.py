"""The PromQL reader the name checks rely on: it must find every metric name and no false ones."""

from __future__ import annotations

import pytest

from tests.deploy.promql import Matcher, PromQLSyntaxError, expand_grafana, matched_values, selectors


def test_metric_names_skip_functions_keywords_labels_and_durations() -> None:
    found = selectors(
        'sum by (job, le) (rate(a_total{x="1", y=~"p|q"}[5m] offset 1h)) / on (job) group_left (z) '
        "max without (instance) (b_gauge) > bool 0.5 and c:recorded:rate5m unless absent(d_total) or vector(1)"
    )
    assert found.metric_names == {"a_total", "b_gauge", "c:recorded:rate5m", "d_total"}
    assert found.label_names == {"job", "le", "x", "y", "z", "instance"}
    assert Matcher("y", "=~", "p|q") in found.matchers


def test_name_matcher_counts_as_a_metric_name_and_strings_are_not_names() -> None:
    found = selectors('{__name__="e_total", job="a"} + label_replace(f, "dst", "$1", "src", "(.*)")')
    assert found.metric_names == {"e_total", "f"}


def test_name_regex_is_rejected() -> None:
    with pytest.raises(PromQLSyntaxError):
        selectors('{__name__=~"otel_eval_.*"}')


def test_keywords_are_case_insensitive_and_inf_is_a_number() -> None:
    assert selectors("x AND y == bool +Inf").metric_names == {"x", "y"}


def test_grafana_variables_expand() -> None:
    expr = expand_grafana('rate(a_total{job=~"$job", agent=~"${agent}"}[$__rate_interval]) * $__range_s')
    assert "[5m]" in expr
    assert selectors(expr).metric_names == {"a_total"}


def test_matched_values() -> None:
    assert matched_values(Matcher("l", "=", "pass")) == ["pass"]
    assert matched_values(Matcher("l", "=~", "pass|fail")) == ["pass", "fail"]
    assert matched_values(Matcher("l", "=~", "p.*")) == []  # a real pattern names no value
