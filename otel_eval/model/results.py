"""Evaluation results, wire-compatible with ADK 2.13's ``evaluator`` / ``eval_metrics`` / ``eval_result``."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, alias_generators

from otel_eval.model._base import EvalBaseModel
from otel_eval.model.criteria import BaseCriterion
from otel_eval.model.eval_case import Invocation, RubricScore


class EvalStatus(Enum):
    """Outcome of a metric. Serialised as its integer, as ADK does."""

    PASSED = 1
    FAILED = 2
    NOT_EVALUATED = 3
    INFORMATIONAL = 4


class TokenUsageDetails(EvalBaseModel):
    """Token counts behind a ``token_usage_v1`` score (None = not reported)."""

    total_tokens: float | None = None
    input_tokens: float | None = None
    prompt_tokens: float | None = None
    cached_tokens: float | None = None
    tool_use_tokens: float | None = None
    output_tokens: float | None = None
    candidates_tokens: float | None = None
    reasoning_tokens: float | None = None


class DurationDetails(EvalBaseModel):
    """Where the seconds behind an ``invocation_duration_v1`` score went."""

    total_seconds: float | None = None
    model_seconds: float | None = None
    tool_seconds: float | None = None
    framework_seconds: float | None = None


@dataclass(slots=True, kw_only=True)
class PerInvocationResult:
    """A metric's result on one invocation.

    A plain slotted dataclass, not a pydantic model: metrics build one per invocation on the hot path and it is never
    validated or serialised directly (the ADK wire form is :class:`EvalMetricResultPerInvocation`).
    """

    score: float | None = None
    eval_status: EvalStatus = EvalStatus.NOT_EVALUATED
    explanation: str | None = None
    """Why: judge rationale, mismatch or skip reason."""
    error_type: str | None = None
    """Set when the invocation could not be evaluated."""
    rubric_scores: list[RubricScore] | None = None
    token_usage_details: TokenUsageDetails | None = None
    duration_details: DurationDetails | None = None
    details: dict[str, Any] | None = None
    """Metric-specific data (e.g. expected/actual)."""


@dataclass(slots=True, kw_only=True)
class EvaluationResult:
    """A metric's result on a conversation: the overall score and each invocation's (a slotted dataclass, like
    :class:`PerInvocationResult`)."""

    overall_score: float | None = None
    overall_eval_status: EvalStatus = EvalStatus.NOT_EVALUATED
    per_invocation_results: list[PerInvocationResult] = field(default_factory=list)
    overall_rubric_scores: list[RubricScore] | None = None
    explanation: str | None = None
    """Reason for NOT_EVALUATED, or a summary."""
    error_type: str | None = None


class EvalMetric(EvalBaseModel):
    """A metric name and its criterion."""

    metric_name: str
    threshold: float | None = None
    criterion: SerializeAsAny[BaseCriterion] | None = None
    custom_function_path: str | None = None


class EvalMetricResultDetails(EvalBaseModel):
    """Extra details of a metric result."""

    rubric_scores: list[RubricScore] | None = None
    token_usage_details: TokenUsageDetails | None = None
    duration_details: DurationDetails | None = None


class EvalMetricResult(EvalMetric):
    """The computed score of an :class:`EvalMetric`."""

    score: float | None = None
    eval_status: EvalStatus
    details: EvalMetricResultDetails = Field(default_factory=EvalMetricResultDetails)


class EvalMetricResultPerInvocation(EvalBaseModel):
    """All metric results for one invocation."""

    actual_invocation: Invocation
    expected_invocation: Invocation | None = None
    eval_metric_results: list[EvalMetricResult] = Field(default_factory=list)


class EvalCaseResult(BaseModel):
    """Results of one eval case (ADK's ``.evalset_result.json`` entry)."""

    model_config = ConfigDict(alias_generator=alias_generators.to_camel, populate_by_name=True)

    eval_set_file: str | None = None
    eval_set_id: str = ""
    eval_id: str = ""
    final_eval_status: EvalStatus
    eval_metric_results: list[Any] | None = None
    overall_eval_metric_results: list[EvalMetricResult]
    eval_metric_result_per_invocation: list[EvalMetricResultPerInvocation]
    session_id: str
    session_details: dict[str, Any] | None = None
    user_id: str | None = None


class EvalSetResult(BaseModel):
    """Results of an eval set run."""

    model_config = ConfigDict(alias_generator=alias_generators.to_camel, populate_by_name=True)

    eval_set_result_id: str
    eval_set_result_name: str | None = None
    eval_set_id: str
    eval_case_results: list[EvalCaseResult] = Field(default_factory=list)
    creation_timestamp: float = 0.0


def case_status(statuses: list[EvalStatus]) -> EvalStatus:
    """ADK's case rule: any FAILED -> FAILED, else any PASSED -> PASSED, else NOT_EVALUATED."""
    if EvalStatus.FAILED in statuses:
        return EvalStatus.FAILED
    if EvalStatus.PASSED in statuses:
        return EvalStatus.PASSED
    return EvalStatus.NOT_EVALUATED
