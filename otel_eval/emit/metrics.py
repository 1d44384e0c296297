"""Score metrics: the ``gen_ai.evaluation.score`` histogram and the ``gen_ai.evaluation.results`` counter.

"Hallucination rate" is then a ratio of counter rates, e.g. in PromQL
``sum(rate(gen_ai_evaluation_results_total{gen_ai_evaluation_name="hallucinations_v1",
gen_ai_evaluation_score_label="fail"}[10m])) / sum(rate(gen_ai_evaluation_results_total{gen_ai_evaluation_name=
"hallucinations_v1", gen_ai_evaluation_score_label=~"pass|fail"}[10m]))``.
"""

from __future__ import annotations

import os

from opentelemetry import metrics
from opentelemetry.metrics import MeterProvider
from opentelemetry.util.types import AttributeValue

from otel_eval import environment_variables as env
from otel_eval import semconv
from otel_eval.emit._context import invocation_context
from otel_eval.emit.attributes import BoundedLabel, metric_attributes
from otel_eval.instruments import CountedSeries, SeriesCounts
from otel_eval.model.messages import EvaluationRecord
from otel_eval.version import __version__

_CACHED_LABEL_SETS = 1024
"""Attribute dicts kept, by metric, label, agent name, evaluator version and priority reason (the agent name comes
from spans)."""


class ScoreMetricsEmitter:
    """Records each result's score and counts it by metric name, label and agent name.

    A result of an invocation priority sampling rescued (sampled out, but errored or disliked) is counted under its
    ``otel_eval.priority.reason``; results without it are an unbiased sample of the traffic.

    Measurements carry the invocation's context, so an exemplar links a histogram bucket to the evaluated trace.
    The histogram's explicit buckets (:data:`~otel_eval.semconv.SCORE_HISTOGRAM_BUCKETS`) suit 0-1 and 1-5 scores;
    they are given as the advisory boundaries, so a user View still wins.

    The agent name comes from the spans: past ``OTEL_EVAL_METRIC_AGENT_NAMES`` distinct names, later ones are
    counted as ``other``.

    Args:
        meter_provider: Provider to create instruments with; the global one (resolved lazily) when None.

    Raises:
        ConfigurationError: ``OTEL_EVAL_METRIC_AGENT_NAMES`` is not an integer >= 0.
    """

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        self._agent_names = BoundedLabel(
            env.number_setting(
                os.environ,
                env.OTEL_EVAL_METRIC_AGENT_NAMES,
                env.DEFAULT_METRIC_AGENT_NAMES,
                valid=lambda n: n >= 0,
                expected="an integer >= 0",
            )
        )
        self._series: dict[
            tuple[str, str, str | None, str | None, str | None], tuple[dict[str, AttributeValue], CountedSeries]
        ] = {}
        meter = metrics.get_meter(semconv.INSTRUMENTATION_SCOPE, __version__, meter_provider=meter_provider)
        self._score = meter.create_histogram(
            semconv.METRIC_EVALUATION_SCORE,
            unit="1",
            description="Evaluation scores of agent invocations, by metric.",
            explicit_bucket_boundaries_advisory=list(semconv.SCORE_HISTOGRAM_BUCKETS),
        )
        # Added to once per result: counted in plain ints and observed at collection (the same series; each one's
        # exemplar is its latest result's invocation).
        self._results = SeriesCounts(
            meter_provider,
            semconv.METRIC_EVALUATION_RESULTS,
            "{result}",
            "Evaluation results, by metric, label (pass, fail, not_evaluated, informational) and agent.",
        )

    def emit(self, record: EvaluationRecord) -> None:
        """Counts ``record`` and records its score (when it has one)."""
        key = (record.metric_name, record.label, record.agent_name, record.evaluator_version, record.priority_reason)
        series = self._series.get(key)
        if series is None:
            # One dict per label set, made once (the agent name's fold is decided once, too: a name seen is kept).
            if len(self._series) >= _CACHED_LABEL_SETS:
                self._series.clear()
            attributes = metric_attributes(record, self._agent_names)
            series = self._series[key] = (attributes, self._results.series(attributes))
        attributes, counted = series
        context = invocation_context(record.trace_id, record.span_id)
        self._results.add(counted, context)
        if record.score is not None:
            self._score.record(record.score, attributes, context=context)
