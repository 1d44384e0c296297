"""The judge's own instruments: calls, tokens, cost and latency, by metric, judge model and outcome.

Prometheus names (after the OTLP translation): ``otel_eval_judge_calls_total``, ``otel_eval_judge_tokens_total``,
``otel_eval_judge_cost_total`` (USD), ``otel_eval_judge_duration_seconds`` and
``otel_eval_judge_budget_refusals_total`` (evaluations the judge budget refused); the shipped alert rules and dashboard
query these.
"""

from __future__ import annotations

from opentelemetry.metrics import MeterProvider

from otel_eval import semconv
from otel_eval.instruments import InstrumentHolder

OUTCOME_OK = "ok"
OUTCOME_CACHED = "cached"
OUTCOME_ERROR = "error"


class JudgeInstruments(InstrumentHolder):
    """Records one judge request's outcome (after its retries) on ``meter_provider`` (the global one when None)."""

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        super().__init__(meter_provider)
        meter = self.meter
        self._calls = self._counter(
            semconv.METRIC_JUDGE_CALLS, "{call}", "Judge requests by metric, model and outcome."
        )
        self._tokens = self._counter(
            semconv.METRIC_JUDGE_TOKENS, "{token}", "Judge tokens by metric, model and token type."
        )
        # Braces keep the unit out of the Prometheus name: otel_eval_judge_cost_total, not ..._USD_total.
        self._cost = self._counter(semconv.METRIC_JUDGE_COST, "{USD}", "Judge cost in US dollars (priced models only).")
        self._refusals = self._counter(
            semconv.METRIC_JUDGE_BUDGET_REFUSALS,
            "{evaluation}",
            "Judged evaluations the judge budget refused (no call made), by metric and model.",
        )
        self._duration = meter.create_histogram(
            semconv.METRIC_JUDGE_DURATION,
            unit="s",
            description="Judge request latency, retries and back-off included.",
            explicit_bucket_boundaries_advisory=semconv.JUDGE_DURATION_BUCKETS,
        )

    def record(
        self,
        *,
        metric: str,
        model: str,
        outcome: str,
        seconds: float,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost_usd: float | None = None,
    ) -> None:
        """One judge request: its outcome (ok, cached or error), latency, tokens and cost."""
        attributes = {semconv.GEN_AI_EVALUATION_NAME: metric, semconv.OTEL_EVAL_JUDGE_MODEL: model}
        self._calls.add(1, {**attributes, semconv.OTEL_EVAL_OUTCOME: outcome})
        if outcome == OUTCOME_CACHED:
            return  # a cache hit costs no tokens and no judge time
        self._duration.record(seconds, {**attributes, semconv.OTEL_EVAL_OUTCOME: outcome})
        if input_tokens:
            self._tokens.add(input_tokens, {**attributes, semconv.OTEL_EVAL_TOKEN_TYPE: "input"})
        if output_tokens:
            self._tokens.add(output_tokens, {**attributes, semconv.OTEL_EVAL_TOKEN_TYPE: "output"})
        if cost_usd:
            self._cost.add(cost_usd, attributes)

    def refused(self, *, metric: str, model: str) -> None:
        """One evaluation (all its calls) the judge budget refused."""
        self._refusals.add(1, {semconv.GEN_AI_EVALUATION_NAME: metric, semconv.OTEL_EVAL_JUDGE_MODEL: model})
