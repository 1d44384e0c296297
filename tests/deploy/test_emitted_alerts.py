"""The shipped rules and alerts on series our emitters really wrote (not typed to match the rules).

An agent with the evaluation processor attached as the README says (criteria + ``meter_provider``, the default
judge) runs a batch in which 3 of 10 answers are unsupported by the tool results, and whose safety judge answers
HTTP 500 for those. Its metrics, read back as Prometheus stores them (OTLP translation, and the Python Prometheus
exporter's text), become the input of a generated ``promtool test rules`` file: one batch a minute for 90 minutes. The
hallucination-rate recording rule must show the known share and the hallucination and judge-error alerts must fire.
The hand-written promtool tests (which cover edge cases: resolving, low volume, baselines) may use only series
shapes these real emitters produce. A second batch runs with a judge budget that covers no ``hallucinations_v1``
evaluation: the budget alert must fire on its refusals, and they must not count as evaluation errors. A sessions
workload (a conversation-level metric, judged on each session's last turn) must raise no alert while the judge is
healthy, its earlier turns ``NOT_EVALUATED`` by design, and the evaluation-error alert once the judge is down.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricReader
from prometheus_client import CollectorRegistry

from tests.deploy import emitted, emitted_sessions
from tests.deploy.conftest import RULE_FILES, RULE_TEST_FILES, load_yaml_documents
from tests.deploy.emittable import emittable_label_values
from tests.deploy.emitted import AGENT_NAME, HALLUCINATION_SHARE, JOB, Sample
from tests.deploy.prometheus_names import emitted_label_names, emitted_prometheus_names
from tests.environment import clean_judge_environment, use_loopback_judge
from tests.judge.fake_gemini import FakeGemini, Responder

MINUTES = 90
BUDGET_ENVIRONMENT = {"OTEL_EVAL_JUDGE_BUDGET": "hallucinations_v1=0,*=100"}
"""hallucinations_v1 gets no budget (every evaluation refused); safety_v1 draws from a bucket that covers it."""
TRANSLATIONS = ("otlp", "prometheus_exporter")


@contextmanager
def _one_batch(
    judge: Responder,
    environment: dict[str, str],
    agent_type: Callable[[MeterProvider], emitted.Agent] = emitted.Agent,
    *readers: MetricReader,
) -> Iterator[InMemoryMetricReader]:
    """One batch of ``agent_type`` with the loopback judge answering ``judge`` and ``environment`` set; yields its
    metrics' in-memory reader (``readers`` read them too) before the agent stops."""
    with FakeGemini(judge) as server, pytest.MonkeyPatch.context() as monkeypatch, ExitStack() as stack:
        stack.enter_context(clean_judge_environment(monkeypatch))
        use_loopback_judge(monkeypatch, server.base_url, environment)
        in_memory = InMemoryMetricReader()
        meter_provider = MeterProvider(metric_readers=[in_memory, *readers])
        agent = agent_type(meter_provider)
        try:
            agent.run_batch()
            yield in_memory
        finally:
            agent.shutdown()
            meter_provider.shutdown()


@pytest.fixture(scope="module")
def samples() -> Iterator[dict[str, list[Sample]]]:
    """One batch's metrics, as each Prometheus set-up stores them (one process each: a process' first collection,
    whichever reader makes it, is the one that reports its new series at 0)."""
    with _one_batch(emitted.judge_answers, emitted.JUDGE_ENVIRONMENT, emitted.Agent) as in_memory:
        otlp = emitted.collected_otlp_samples(in_memory)
    registry = CollectorRegistry()
    exporter = PrometheusMetricReader(registry=registry)
    with _one_batch(emitted.judge_answers, emitted.JUDGE_ENVIRONMENT, emitted.Agent, exporter):
        yield {"otlp": otlp, "prometheus_exporter": emitted.scraped_exporter_samples(registry)}


@pytest.fixture
def budget_samples() -> Iterator[list[Sample]]:
    """One batch's metrics (OTLP translation) with a judge budget that covers no hallucinations_v1 evaluation."""
    with _one_batch(emitted.judge_answers, {**emitted.JUDGE_ENVIRONMENT, **BUDGET_ENVIRONMENT}) as in_memory:
        yield emitted.collected_otlp_samples(in_memory)


def _session_samples(judge: Responder) -> list[Sample]:
    """One batch of the sessions workload's metrics (OTLP translation), judged by ``judge``."""
    with _one_batch(judge, emitted.JUDGE_ENVIRONMENT, emitted_sessions.SessionAgent) as in_memory:
        return emitted.collected_otlp_samples(in_memory)


def _judge_error_share(samples: list[Sample]) -> float:
    calls = emitted.named(samples, "otel_eval_judge_calls_total")
    errors = sum(s.value for s in calls if s.label("otel_eval_outcome") == "error")
    requests = sum(s.value for s in calls if s.label("otel_eval_outcome") != "cached")
    return errors / requests


def _promtool_test(samples: list[Sample]) -> dict[str, Any]:
    agent = f'{{job="{JOB}",gen_ai_agent_name="{AGENT_NAME}"}}'
    return {
        "rule_files": [str(path) for path in RULE_FILES],
        "evaluation_interval": "1m",
        "tests": [
            {
                "name": "a batch of real emitted series a minute",
                "interval": "1m",
                "input_series": [
                    {"series": s.series, "values": emitted.input_values(s, MINUTES)}
                    for s in samples
                    if s.name != "target_info"  # resource attributes, not a series the rules read
                ],
                "promql_expr_test": [
                    {
                        "expr": "round(job_agent:gen_ai_evaluation_hallucination_rate:ratio_rate5m, 0.001)",
                        "eval_time": "30m",
                        "exp_samples": [{"labels": agent, "value": HALLUCINATION_SHARE}],
                    },
                    {
                        "expr": "round(job_model:otel_eval_judge_error_rate:ratio_rate10m, 0.001)",
                        "eval_time": "30m",
                        "exp_samples": [
                            {
                                "labels": f'{{job="{JOB}",otel_eval_judge_model="gemini-2.5-flash"}}',
                                "value": round(_judge_error_share(samples), 3),
                            }
                        ],
                    },
                    {
                        "expr": 'count by (alertname) (ALERTS{alertstate="firing"})',
                        "eval_time": "30m",
                        "exp_samples": [
                            {"labels": f'{{alertname="{name}"}}', "value": 1}
                            for name in (
                                "OtelEvalHallucinationRateHigh",
                                "OtelEvalJudgeErrorRateHigh",
                                "OtelEvalEvaluationErrorRateHigh",  # safety_v1 ends NOT_EVALUATED for 3 in 10
                            )
                        ],
                    },
                ],
            }
        ],
    }


def _run_promtool(promtool: str, test: dict[str, Any], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    test_file = tmp_path / "emitted_test.yaml"
    test_file.write_text(yaml.safe_dump(test, sort_keys=False))
    return subprocess.run(
        [promtool, "test", "rules", str(test_file)], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.integration
def test_the_budget_alert_fires_on_real_refusals_and_they_are_not_evaluation_errors(
    budget_samples: list[Sample], promtool: str, tmp_path: Path
) -> None:
    errors = emitted.named(budget_samples, "otel_eval_evaluation_errors_total")
    assert {(s.label("gen_ai_evaluation_name"), s.label("error_type")) for s in errors} == {
        ("hallucinations_v1", "budget_exhausted"),
        ("safety_v1", "judge_server_error"),
    }
    refusals = emitted.named(budget_samples, "otel_eval_judge_budget_refusals_total")
    assert sum(s.value for s in refusals) == len(emitted.BATCH)
    test = _promtool_test(budget_samples)
    case = test["tests"][0]
    case["promql_expr_test"] = [
        {
            "expr": "job_evaluation:otel_eval_judge_budget_exhausted:ratio_rate15m",
            "eval_time": "30m",
            "exp_samples": [
                {
                    "labels": "job_evaluation:otel_eval_judge_budget_exhausted:ratio_rate15m"
                    f'{{job="{JOB}",gen_ai_evaluation_name="hallucinations_v1"}}',
                    "value": 1,
                }
            ],
        },
        {
            # Refused hallucinations_v1 results are not "evaluations without a score": only safety_v1 (HTTP 500s) is.
            "expr": 'count by (alertname, gen_ai_evaluation_name) (ALERTS{alertstate="firing",alertname=~".*Evaluation.*|.*Budget.*"})',
            "eval_time": "30m",
            "exp_samples": [
                {
                    "labels": '{alertname="OtelEvalJudgeBudgetExhausted",gen_ai_evaluation_name="hallucinations_v1"}',
                    "value": 1,
                },
                {
                    "labels": '{alertname="OtelEvalEvaluationErrorRateHigh",gen_ai_evaluation_name="safety_v1"}',
                    "value": 1,
                },
            ],
        },
    ]
    process = _run_promtool(promtool, test, tmp_path)
    assert process.returncode == 0, f"promtool on budget series:\n{process.stdout}{process.stderr}"


def _results_by_label(samples: list[Sample], metric: str) -> dict[str | None, float]:
    results = emitted.named(samples, "gen_ai_evaluation_results_total")
    by_label: dict[str | None, float] = {}
    for sample in results:
        if sample.label("gen_ai_evaluation_name") == metric:
            label = sample.label("gen_ai_evaluation_score_label")
            by_label[label] = by_label.get(label, 0) + sample.value
    return by_label


@pytest.mark.integration
def test_healthy_sessions_raise_no_alert_and_their_pass_rate_counts_one_verdict_per_session(
    promtool: str, tmp_path: Path
) -> None:
    samples = _session_samples(emitted_sessions.judge_answers)
    sessions, turns = len(emitted_sessions.SESSIONS), emitted_sessions.TURNS
    # ADK's layout, as emitted: a verdict on each session's last turn, its earlier turns NOT_EVALUATED by design
    assert _results_by_label(samples, emitted_sessions.MULTI_TURN) == {
        "pass": sessions * emitted_sessions.PASS_SHARE,
        "fail": sessions * (1 - emitted_sessions.PASS_SHARE),
        "not_evaluated": sessions * (turns - 1),
    }
    assert not emitted.named(samples, "otel_eval_evaluation_errors_total")
    metric = f'gen_ai_evaluation_name="{emitted_sessions.MULTI_TURN}"'
    test = _promtool_test(samples)
    test["tests"][0]["promql_expr_test"] = [
        {
            "expr": f"job_agent_evaluation:gen_ai_evaluation_pass_rate:ratio_rate30m{{{metric}}}",
            "eval_time": "30m",
            "exp_samples": [
                {
                    "labels": "job_agent_evaluation:gen_ai_evaluation_pass_rate:ratio_rate30m"
                    f'{{job="{JOB}",gen_ai_agent_name="{AGENT_NAME}",{metric}}}',
                    "value": emitted_sessions.PASS_SHARE,
                }
            ],
        },
        {  # the volume guard is met (the alert is not kept quiet by a low count): the error ratio is 0
            "expr": f"job_evaluation:gen_ai_evaluation_results:increase15m{{{metric}}} >= 20",
            "eval_time": "30m",
            "exp_samples": [
                {
                    "labels": f'job_evaluation:gen_ai_evaluation_results:increase15m{{job="{JOB}",{metric}}}',
                    "value": 15 * sessions * turns,
                }
            ],
        },
        {"expr": "ALERTS", "eval_time": "30m", "exp_samples": []},
    ]
    process = _run_promtool(promtool, test, tmp_path)
    assert process.returncode == 0, f"promtool on healthy session series:\n{process.stdout}{process.stderr}"


@pytest.mark.integration
def test_sessions_whose_judge_is_down_raise_the_evaluation_error_alert(promtool: str, tmp_path: Path) -> None:
    samples = _session_samples(emitted_sessions.judge_down)
    sessions, turns = len(emitted_sessions.SESSIONS), emitted_sessions.TURNS
    assert _results_by_label(samples, emitted_sessions.MULTI_TURN) == {"not_evaluated": sessions * turns}
    test = _promtool_test(samples)
    test["tests"][0]["promql_expr_test"] = [
        {  # every turn of a window the judge could not score counts: the ratio is the share of sessions unscored
            "expr": "job_evaluation:otel_eval_evaluation_errors:ratio_rate15m",
            "eval_time": "30m",
            "exp_samples": [
                {
                    "labels": "job_evaluation:otel_eval_evaluation_errors:ratio_rate15m"
                    f'{{job="{JOB}",gen_ai_evaluation_name="{emitted_sessions.MULTI_TURN}"}}',
                    "value": 1,
                }
            ],
        },
        {
            "expr": 'count by (alertname, gen_ai_evaluation_name) (ALERTS{alertstate="firing"})',
            "eval_time": "30m",
            "exp_samples": [
                {
                    "labels": '{alertname="OtelEvalEvaluationErrorRateHigh",'
                    f'gen_ai_evaluation_name="{emitted_sessions.MULTI_TURN}"}}',
                    "value": 1,
                },
                {"labels": '{alertname="OtelEvalJudgeErrorRateHigh"}', "value": 1},
            ],
        },
    ]
    process = _run_promtool(promtool, test, tmp_path)
    assert process.returncode == 0, f"promtool on session series, judge down:\n{process.stdout}{process.stderr}"


@pytest.mark.integration
@pytest.mark.parametrize("translation", TRANSLATIONS)
def test_the_alerts_fire_on_real_emitted_series(
    samples: dict[str, list[Sample]], translation: str, promtool: str, tmp_path: Path
) -> None:
    series = samples[translation]
    assert _judge_error_share(series) > 0.10  # the judge-error alert's threshold: it must fire
    test_file = tmp_path / "emitted_test.yaml"
    test_file.write_text(yaml.safe_dump(_promtool_test(series), sort_keys=False))
    process = subprocess.run(
        [promtool, "test", "rules", str(test_file)], capture_output=True, text=True, timeout=120, check=False
    )
    assert process.returncode == 0, f"promtool on {translation} series:\n{process.stdout}{process.stderr}"


def test_both_translations_give_the_series_the_rules_read_the_same_names(samples: dict[str, list[Sample]]) -> None:
    """Prometheus 3 (OTLP) and the Python exporter name every series the rules and dashboard read alike."""
    read = emitted_prometheus_names()
    names = {t: {s.name for s in samples[t]} & read for t in TRANSLATIONS}
    assert names["otlp"] == names["prometheus_exporter"]
    assert {"gen_ai_evaluation_results_total", "otel_eval_judge_calls_total"} <= names["otlp"]


def test_emitted_label_values_are_the_contract(samples: dict[str, list[Sample]]) -> None:
    """The score label on the metrics is the uniform pass/fail word, never a metric's own verdict."""
    results = emitted.named(samples["otlp"], "gen_ai_evaluation_results_total")
    by_metric: dict[str | None, set[str | None]] = {}
    for sample in results:
        by_metric.setdefault(sample.label("gen_ai_evaluation_name"), set()).add(
            sample.label("gen_ai_evaluation_score_label")
        )
    assert by_metric["hallucinations_v1"] == {"pass", "fail"}
    assert by_metric["safety_v1"] == {"pass", "not_evaluated"}
    known = emittable_label_values()
    for sample in samples["otlp"]:
        for key, value in sample.labels:
            assert value in known.get(key, {value}), f"{sample.series}: {key}={value!r} is not emittable"


def _input_series() -> Iterator[tuple[str, str]]:
    for path in RULE_TEST_FILES:
        for case in load_yaml_documents(path)[0]["tests"]:
            for item in case.get("input_series", []):
                yield f"{path.name}: {case['name']}", item["series"]


def _parse_series(series: str) -> tuple[str, dict[str, str]]:
    name, _, rest = series.partition("{")
    return name, dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:\\.|[^"\\])*)"', rest))


def test_hand_written_promtool_inputs_use_only_series_shapes_the_emitters_write(
    samples: dict[str, list[Sample]],
) -> None:
    """A hand-typed series with a label value or a label set the code never writes would test nothing real."""
    names, label_names, known = emitted_prometheus_names(), emitted_label_names(), emittable_label_values()
    real_label_sets: dict[str, set[frozenset[str]]] = {}
    for sample in samples["otlp"]:
        real_label_sets.setdefault(sample.name, set()).add(frozenset(k for k, _ in sample.labels))
    checked = 0
    for where, series in _input_series():
        name, labels = _parse_series(series)
        assert name in names, f"{where}: {name} is not a series otel-eval emits"
        assert set(labels) <= label_names, f"{where}: {series} has labels otel-eval never sets"
        for key, value in labels.items():
            assert value in known.get(key, {value}), f"{where}: {key}={value!r} is never set by otel-eval"
        if name in real_label_sets:
            keys = frozenset(labels) | {"job", "instance"}
            assert any(keys <= real for real in real_label_sets[name]), (
                f"{where}: {series} has labels {sorted(keys)}; the emitters write {name} with "
                f"{sorted(sorted(real) for real in real_label_sets[name])}"
            )
            checked += 1
    assert checked >= 10
