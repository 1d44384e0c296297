"""The OTLP -> Prometheus name translation, and that semconv, the code and the documented names agree."""

from __future__ import annotations

import pytest

from otel_eval import semconv
from tests.deploy import prometheus_names as names


@pytest.mark.parametrize(
    ("otel_name", "unit", "kind", "expected"),
    [
        # The cases prometheus/otlptranslator documents, and ours.
        ("gen_ai.evaluation.score", "1", "histogram", "gen_ai_evaluation_score"),
        ("gen_ai.evaluation.results", "{result}", "counter", "gen_ai_evaluation_results_total"),
        ("otel_eval.judge.duration", "s", "histogram", "otel_eval_judge_duration_seconds"),
        ("otel_eval.worker.consumer_lag", "{message}", "gauge", "otel_eval_worker_consumer_lag"),
        ("system.cpu.utilization", "1", "gauge", "system_cpu_utilization_ratio"),
        ("http.server.request.size", "By", "histogram", "http_server_request_size_bytes"),
        ("vehicle.speed", "m/s", "gauge", "vehicle_speed_meters_per_second"),
        ("queue.duration.seconds", "s", "histogram", "queue_duration_seconds"),  # unit word not repeated
        ("requests.total", "", "counter", "requests_total"),  # _total not repeated
        ("my-app..latency", "ms", "gauge", "my_app_latency_milliseconds"),
        ("2xx.responses", "", "counter", "_2xx_responses_total"),
        ("cost", "USD", "counter", "cost_USD_total"),  # an unknown unit is kept as a word
    ],
)
def test_prometheus_metric_name_follows_the_otlp_translation(otel_name: str, unit: str, kind, expected: str) -> None:
    assert names.prometheus_metric_name(otel_name, unit, kind) == expected


def test_histograms_are_three_series_counters_one() -> None:
    assert names.prometheus_series_names("a.b", "s", "histogram") == {
        "a_b_seconds_bucket",
        "a_b_seconds_sum",
        "a_b_seconds_count",
    }
    assert names.prometheus_series_names("a.b", "{x}", "counter") == {"a_b_total"}


def test_label_names_replace_dots() -> None:
    assert names.prometheus_label_name(semconv.GEN_AI_EVALUATION_SCORE_LABEL) == "gen_ai_evaluation_score_label"
    assert names.prometheus_label_name(semconv.ERROR_TYPE) == "error_type"
    assert names.prometheus_label_name("1st.key") == "key_1st_key"


def test_every_metric_constant_has_an_instrument_spec() -> None:
    specs = names.instrument_specs()
    assert set(specs) == set(names.metric_constants())
    assert {"METRIC_EVALUATION_SCORE", "METRIC_EVALUATION_RESULTS", "METRIC_CONSUMER_LAG"} <= set(specs)


def test_every_creation_of_an_instrument_exports_the_same_prometheus_name() -> None:
    """Two modules creating the same instrument with another kind or unit word would split it in two names."""
    for constant, sites in names.creation_sites().items():
        name = names.metric_constants()[constant]
        exported = {(kind, names.prometheus_metric_name(name, unit, kind)) for kind, unit, _ in sites}
        assert len(exported) == 1, f"{constant} is created differently: {sites}"


def test_derived_names_match_the_names_documented_in_semconv() -> None:
    """The ``prom:`` comments in semconv.py are what users read; the code's instruments must produce them."""
    specs = names.instrument_specs()
    documented = names.documented_prometheus_names()
    assert len(documented) >= 10
    for constant, prometheus_name in documented.items():
        spec = specs[constant]
        derived = names.prometheus_series_names(spec.name, spec.unit, spec.kind)
        origin = "code" if spec.from_code else "semconv comment"
        assert prometheus_name in derived, (
            f"semconv.{constant} documents {prometheus_name!r}, but {spec.name!r} ({spec.kind}, unit {spec.unit!r}, "
            f"from {origin}) exports {sorted(derived)}"
        )


def test_score_and_results_come_from_the_emitter_code() -> None:
    specs = names.instrument_specs()
    assert specs["METRIC_EVALUATION_SCORE"].from_code and specs["METRIC_EVALUATION_SCORE"].kind == "histogram"
    assert specs["METRIC_EVALUATION_RESULTS"].from_code and specs["METRIC_EVALUATION_RESULTS"].kind == "counter"
    emitted = names.emitted_prometheus_names()
    assert {"gen_ai_evaluation_score_bucket", "gen_ai_evaluation_results_total"} <= emitted
