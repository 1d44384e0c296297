"""``isolation="process"``: the agent's process and its evaluation process each report otel-eval's counters, and
each of the two cumulative streams must keep an identity of its own at the backend.

Both processes export with the SDK's real OTLP/HTTP exporters to loopback receivers (one each, so that every stream
is known to come from the process that sent it); a stream's identity is what an OTLP backend keys it by (resource,
scope, name, attributes) and what Prometheus' OTLP translation keeps of it (``job`` from ``service.name``,
``instance`` from ``service.instance.id``, the attributes as labels). The evaluation process is killed while a
trace is in flight, so that both processes count ``otel_eval.spans.dropped{otel_eval.drop.reason=transport_error}``
(the agent's process for the spans it could not hand on, the new evaluation process for the rest of that trace).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.demo import SCENARIOS, TravelAgent
from tests.deploy.conftest import RULE_FILES, promtool  # noqa: F401  (the fixture)
from tests.deploy.prometheus_names import prometheus_label_name, prometheus_metric_name
from tests.processor.telemetry import evaluation_process_pid, is_running
from tests.waiting import wait_until
from tests.worker._harness import OtlpSink, child_otlp_sink

pytestmark = pytest.mark.integration

JOB = "travel-agent"
MINUTES = 30
_TRANSPORT_ERROR = semconv.DROP_TRANSPORT_ERROR


@dataclass(frozen=True)
class Point:
    """One exported data point of a counter or gauge: where its stream is keyed and its value."""

    resource: tuple[tuple[str, str], ...]
    scope: str
    name: str
    unit: str
    counter: bool
    attributes: tuple[tuple[str, str], ...]
    start: int
    value: float

    @property
    def identity(self) -> tuple[Any, ...]:
        """What an OTLP backend keys the stream by (the Collector's cumulativetodelta, Prometheus' OTLP receiver)."""
        return self.resource, self.scope, self.name, self.attributes

    @property
    def series(self) -> str:
        """The Prometheus series it is written to (promtool's notation)."""
        resource = dict(self.resource)
        labels = {prometheus_label_name(key): value for key, value in self.attributes}
        labels.update(job=resource[SERVICE_NAME], instance=resource.get(SERVICE_INSTANCE_ID, ""))
        name = prometheus_metric_name(self.name, self.unit, "counter" if self.counter else "gauge")
        return name + "{" + ",".join(f'{key}="{value}"' for key, value in sorted(labels.items())) + "}"


def _text(value: Any) -> str:
    kind = value.WhichOneof("value")
    return str(getattr(value, kind)) if kind else ""


def _points(receiver: OtlpSink) -> list[Point]:
    """The counters' and gauges' points ``receiver`` got, in the order they arrived."""
    points = []
    for request in list(receiver.metric_requests):
        for resource_metrics in request.resource_metrics:
            resource = tuple(sorted((kv.key, _text(kv.value)) for kv in resource_metrics.resource.attributes))
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    kind = metric.WhichOneof("data")
                    if kind in ("sum", "gauge"):
                        stream = (resource, scope_metrics.scope.name, metric.name, metric.unit)
                        counter = kind == "sum" and metric.sum.is_monotonic
                        points.extend(_point(*stream, counter, point) for point in getattr(metric, kind).data_points)
    return points


def _point(resource: Any, scope: str, name: str, unit: str, counter: bool, point: Any) -> Point:
    attributes = tuple(sorted((kv.key, _text(kv.value)) for kv in point.attributes))
    value = point.as_int if point.WhichOneof("value") == "as_int" else point.as_double
    return Point(resource, scope, name, unit, counter, attributes, point.start_time_unix_nano, value)


@dataclass
class Run:
    agent: list[Point]
    child: list[Point]
    stats: dict[str, int]
    resource: Resource
    child_span_resources: list[dict[str, str]]


@pytest.fixture(scope="module")
def run() -> Iterator[Run]:
    """An agent whose meter provider exports over OTLP to its receiver, with the processor in process isolation
    exporting to another; its evaluation process killed while a trace is in flight, then replaced."""
    with pytest.MonkeyPatch.context() as monkeypatch, child_otlp_sink(monkeypatch) as child_receiver:
        monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
        monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "200")
        agent_receiver = OtlpSink().start()
        resource = Resource.create({SERVICE_NAME: JOB})  # the SDK's default service.instance.id (a UUID) included
        reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=f"{agent_receiver.endpoint}/v1/metrics"), export_interval_millis=200
        )
        meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
        tracer_provider = TracerProvider(resource=resource)
        try:
            stats = _killed_mid_trace(tracer_provider, meter_provider)
        finally:
            tracer_provider.shutdown()
            meter_provider.shutdown()
            agent_receiver.stop()
        span_resources = [
            {kv.key: _text(kv.value) for kv in resource_spans.resource.attributes}
            for request in child_receiver.trace_requests
            for resource_spans in request.resource_spans
        ]
        yield Run(_points(agent_receiver), _points(child_receiver), stats, resource, span_resources)


def _killed_mid_trace(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> dict[str, int]:
    """Runs the scenarios, a trace during which the evaluation process is killed, and the scenarios again; the
    processor's stats as of its last flush."""
    processor = EvaluationSpanProcessor(settings=ProcessorSettings(isolation="process"), meter_provider=meter_provider)
    tracer_provider.add_span_processor(processor)
    agent, tracer = TravelAgent(tracer_provider), tracer_provider.get_tracer("travel")
    for scenario in SCENARIOS:
        agent.run(scenario)
    assert processor.force_flush(60_000)
    first = evaluation_process_pid()
    assert first is not None
    lost = f"spans.dropped.{_TRANSPORT_ERROR}"
    with tracer.start_as_current_span("invoke_agent travel"):
        with tracer.start_as_current_span("call_llm"):
            pass
        assert processor.force_flush(60_000)  # its first span is in the evaluation process
        os.kill(first, signal.SIGKILL)
        assert wait_until(lambda: not is_running(first), timeout=30)
        for _ in range(5):  # its next spans have no process to go to for 1 s: lost in the agent's process
            with tracer.start_as_current_span("execute_tool"):
                pass
            if wait_until(lambda: processor.stats().get(lost, 0) > 0, timeout=2):
                break
        time.sleep(1.2)  # the next evaluation process starts 1 s after the loss: it gets the rest of the trace
        with tracer.start_as_current_span("call_llm"):
            pass
    for scenario in SCENARIOS:
        agent.run(scenario)
    assert not processor.force_flush(60_000)  # once, for the spans lost with the killed process
    assert evaluation_process_pid() not in (None, first)
    return processor.stats()


def test_the_two_processes_report_no_stream_with_one_identity(run: Run) -> None:
    """Before each evaluation process had an instance of its own, the agent's always-0
    ``otel_eval.invocations.{sampled,evaluated}`` and both processes' ``otel_eval.spans.dropped{transport_error}``
    arrived as one stream from two processes: Prometheus saw each series jump between two counters."""
    assert run.stats[f"spans.dropped.{_TRANSPORT_ERROR}"] > 0  # both really count the same drop reason
    assert run.stats[f"evaluation_process.spans.dropped.{_TRANSPORT_ERROR}"] > 0
    agent_identities = {point.identity for point in run.agent}
    shared = sorted({(p.name, p.attributes) for p in run.child if p.identity in agent_identities})
    assert shared == []
    assert not {p.series for p in run.agent} & {p.series for p in run.child}  # Prometheus' job/instance too


def test_the_evaluation_process_is_an_instance_of_the_agents_service(run: Run) -> None:
    agent_resource = dict(run.resource.attributes)
    agent_instance = str(agent_resource[SERVICE_INSTANCE_ID])
    child_resources = {point.resource for point in run.child}
    assert child_resources == {
        tuple(sorted({**agent_resource, SERVICE_INSTANCE_ID: f"{agent_instance}/evaluation"}.items()))
    }  # the replaced evaluation process continues the same series, as a restarted process does
    # The scores stay the agent's: the evaluation spans carry the agent's resource as it is.
    assert run.child_span_resources
    assert all(resource == agent_resource for resource in run.child_span_resources)


def _final(points: list[Point]) -> dict[str, float]:
    """Each counter series' value as Prometheus holds it at the end: the last value its latest stream wrote."""
    latest: dict[str, Point] = {}
    for point in points:
        if point.counter and (point.series not in latest or point.start >= latest[point.series].start):
            latest[point.series] = point
    return {series: point.value for series, point in latest.items()}


def test_the_shipped_rules_sum_both_processes_series(run: Run, promtool: str, tmp_path: Path) -> None:  # noqa: F811
    agent, child = _final(run.agent), _final(run.child)
    assert not agent.keys() & child.keys()
    stats = run.stats
    lost = stats[f"spans.dropped.{_TRANSPORT_ERROR}"] + stats[f"evaluation_process.spans.dropped.{_TRANSPORT_ERROR}"]
    dropped = stats[f"evaluation_process.invocations.dropped.{_TRANSPORT_ERROR}"]
    sampled = stats["evaluation_process.invocations.sampled"]
    test = {
        "rule_files": [str(path) for path in RULE_FILES],
        "evaluation_interval": "1m",
        "tests": [
            {
                "name": "the agent's and its evaluation process' series, each run once a minute",
                "interval": "1m",
                "input_series": [
                    {"series": series, "values": f"0+{value!r}x{MINUTES}"}
                    for series, value in {**agent, **child}.items()
                ],
                "promql_expr_test": [
                    {
                        "expr": "sum by (job, otel_eval_drop_reason) (increase(otel_eval_spans_dropped_total[10m])) / 10",
                        "eval_time": "20m",
                        "exp_samples": [
                            {"labels": f'{{job="{JOB}",otel_eval_drop_reason="{_TRANSPORT_ERROR}"}}', "value": lost}
                        ],
                    },
                    {
                        "expr": "round(job:otel_eval_invocations_dropped:ratio_rate10m, 0.0001)",
                        "eval_time": "20m",
                        "exp_samples": [{"labels": f'{{job="{JOB}"}}', "value": round(dropped / sampled, 4)}],
                    },
                    {
                        "expr": "round(job:otel_eval_invocations_seen:increase30m)",
                        "eval_time": "30m",
                        "exp_samples": [{"labels": f'{{job="{JOB}"}}', "value": (dropped + sampled) * 30}],
                    },
                ],
            }
        ],
    }
    test_file = tmp_path / "both_processes_test.yaml"
    test_file.write_text(yaml.safe_dump(test, sort_keys=False))
    result = subprocess.run(
        [promtool, "test", "rules", str(test_file)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
