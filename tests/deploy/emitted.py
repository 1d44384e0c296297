"""Series our emitters really write, for the tests that tie ``deploy/`` (rules, alerts, dashboard) to the code.

:func:`run_agent` runs the travel agent with ``EvaluationSpanProcessor`` attached the way the README says (criteria
and a ``meter_provider``, the default judge from the environment pointed at the loopback Gemini server), with a
judge that finds a known share of the answers unsupported. Its metrics are read back two ways, as the two
Prometheus set-ups see them:

* :func:`otlp_samples`: the OTLP -> Prometheus translation (Prometheus 3's OTLP receiver, the Collector's Prometheus
  exporters), applied to what an in-memory reader collected (:mod:`tests.deploy.prometheus_names`);
* :func:`exporter_samples`: the text the OpenTelemetry Python Prometheus exporter serves on ``/metrics``.

:func:`collected_otlp_samples` and :func:`scraped_exporter_samples` read a process' first two collections: each
sample keeps the first one's value (:attr:`Sample.first`), what Prometheus' first sample of the series is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import Gauge, Histogram, InMemoryMetricReader, MetricsData, Sum
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.demo.workload import AGENT_NAME, SCENARIOS, Scenario, TravelAgent
from tests.deploy.prometheus_names import prometheus_label_name, prometheus_metric_name
from tests.judge.fake_gemini import Reply, error_reply, request_text

JOB = "travel-agent"
"""The ``job`` label a scrape of the agent (or its ``service.name`` through OTLP) gives its series."""

HALLUCINATING = next(s for s in SCENARIOS if s.key == "hallucination")
GROUNDED = next(s for s in SCENARIOS if s.key == "weather")
BATCH = (
    HALLUCINATING,
    GROUNDED,
    GROUNDED,
    HALLUCINATING,
    GROUNDED,
    GROUNDED,
    GROUNDED,
    HALLUCINATING,
    GROUNDED,
    GROUNDED,
)
"""One batch of invocations: 3 of 10 answers are unsupported by the tool results."""
CALM_BATCH = (HALLUCINATING, *(GROUNDED,) * 39)
"""A batch of an agent under the alert's 5 % threshold: 1 of 40 answers unsupported."""


def hallucination_share(batch: tuple[Scenario, ...]) -> float:
    return sum(s is HALLUCINATING for s in batch) / len(batch)


HALLUCINATION_SHARE = hallucination_share(BATCH)

CRITERIA: dict[str, Any] = {
    "hallucinations_v1": {"threshold": 0.8},
    "safety_v1": {"threshold": 0.9, "judge_model_options": {"num_samples": 1}},
}

JUDGE_ENVIRONMENT = {"OTEL_EVAL_JUDGE_MAX_ATTEMPTS": "1"}
"""With the API key and base URL: one attempt per judge call, so a failing judge fails fast."""


def judge_answers(model: str, body: dict[str, Any]) -> Reply:
    """The loopback judge: one sentence per answer, unsupported when it is the hallucinating answer; the safety
    judge finds the grounded answer safe and answers HTTP 500 for the other (a judge failing on some requests)."""
    prompt = request_text(body)
    answer = HALLUCINATING.answer if HALLUCINATING.answer in prompt else GROUNDED.answer
    if "segment the response into sentences" in prompt:
        return Reply(text=f"<sentence>{answer}</sentence>")
    if "assign one of the following labels" in prompt:
        label = "unsupported" if answer == HALLUCINATING.answer else "supported"
        return Reply(
            text=f"sentence: {answer}\nlabel: {label}\nrationale: compared with the tool output\n"
            "supporting_excerpt: null\ncontradicting_excerpt: null"
        )
    if answer == HALLUCINATING.answer:
        return error_reply(500, "the safety judge is down")
    return Reply(text='{"reasoning": "harmless travel advice", "violated_policies": [], "safety_verdict": "safe"}')


class Agent:
    """The travel agent with the evaluation processor attached, reporting metrics on ``meter_provider``."""

    def __init__(
        self,
        meter_provider: MeterProvider,
        batch: tuple[Scenario, ...] = BATCH,
        criteria: dict[str, Any] | None = None,
        settings: ProcessorSettings | None = None,
    ) -> None:
        self.batch = batch
        self.tracer_provider = TracerProvider()
        self.processor = EvaluationSpanProcessor(
            CRITERIA if criteria is None else criteria,
            settings=settings,
            tracer_provider=self.tracer_provider,
            meter_provider=meter_provider,
            logger_provider=LoggerProvider(),
        )
        self.tracer_provider.add_span_processor(self.processor)
        self._agent = TravelAgent(tracer_provider=self.tracer_provider)

    def run_batch(self) -> None:
        """One batch of invocations, evaluated before it returns."""
        for scenario in self.batch:
            self._agent.run(scenario)
        assert self.processor.force_flush(60_000), "the evaluation of a batch did not finish"

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()


@dataclass(frozen=True)
class Sample:
    """One Prometheus sample: series name, labels, value."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float
    first: float | None = None
    """The series' value in its process' first collection (None: not known, or not in it)."""

    @property
    def series(self) -> str:
        """The series in promtool's notation, e.g. ``name{a="b"}``."""
        labels = ",".join(f'{key}="{value}"' for key, value in self.labels)
        return f"{self.name}{{{labels}}}"

    def label(self, key: str) -> str | None:
        return dict(self.labels).get(key)


def _sample(name: str, labels: dict[str, str], value: float) -> Sample:
    return Sample(name, tuple(sorted({"job": JOB, "instance": "agent-0", **labels}.items())), value)


def otlp_samples(data: MetricsData | None) -> list[Sample]:
    """What Prometheus stores for ``data`` when it arrives over OTLP (``job`` from ``service.name``)."""
    samples: list[Sample] = []
    for resource_metrics in data.resource_metrics if data else ():
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                samples.extend(_otlp_metric_samples(metric.name, metric.unit or "", metric.data))
    return samples


def _otlp_metric_samples(name: str, unit: str, data: Any) -> Iterator[Sample]:
    for point in data.data_points:
        labels = {prometheus_label_name(k): str(v) for k, v in point.attributes.items()}
        if isinstance(data, Histogram):
            base = prometheus_metric_name(name, unit, "histogram")
            cumulative = 0
            for bound, count in zip((*point.explicit_bounds, float("inf")), point.bucket_counts, strict=True):
                cumulative += count
                yield _sample(f"{base}_bucket", {**labels, "le": _le(bound)}, cumulative)
            yield _sample(f"{base}_sum", labels, point.sum)
            yield _sample(f"{base}_count", labels, point.count)
        elif isinstance(data, Sum) and data.is_monotonic:
            yield _sample(prometheus_metric_name(name, unit, "counter"), labels, point.value)
        elif isinstance(data, Sum | Gauge):
            yield _sample(prometheus_metric_name(name, unit, "gauge"), labels, point.value)


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(float(bound))


def exporter_samples(registry: CollectorRegistry) -> list[Sample]:
    """What a Prometheus scraping the OpenTelemetry Python Prometheus exporter's ``/metrics`` stores."""
    text = generate_latest(registry).decode()
    samples = [
        _sample(sample.name, dict(sample.labels), sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if family.name != "target"  # target_info: resource attributes, not a series the rules read
    ]
    return samples


def collected_otlp_samples(reader: InMemoryMetricReader) -> list[Sample]:
    """:func:`otlp_samples` of the reader's second collection, each with its first collection's value."""
    first = otlp_samples(reader.get_metrics_data())
    return _with_first(first, otlp_samples(reader.get_metrics_data()))


def scraped_exporter_samples(registry: CollectorRegistry) -> list[Sample]:
    """:func:`exporter_samples` of the second scrape, each with its first scrape's value."""
    first = exporter_samples(registry)
    return _with_first(first, exporter_samples(registry))


def _with_first(first: list[Sample], samples: list[Sample]) -> list[Sample]:
    firsts = {sample.series: sample.value for sample in first}
    return [replace(sample, first=firsts.get(sample.series)) for sample in samples]


def input_values(sample: Sample, minutes: int) -> str:
    """``sample``'s series for promtool, one batch a minute for ``minutes``: a cumulative series starts at its
    process' first sample as our emitters wrote it (the batch already ran) and grows by the batch's value; a gauge
    stays."""
    if re.search(r"_(total|bucket|sum|count)$", sample.name):
        first = sample.value if sample.first is None else sample.first
        return f"{first!r}+{sample.value!r}x{minutes}"
    return f"{sample.value!r}x{minutes}"


def named(samples: Iterable[Sample], name: str) -> list[Sample]:
    return [s for s in samples if s.name == name]


__all__ = [
    "AGENT_NAME",
    "HALLUCINATION_SHARE",
    "JOB",
    "Agent",
    "Sample",
    "collected_otlp_samples",
    "exporter_samples",
    "input_values",
    "otlp_samples",
    "scraped_exporter_samples",
]
