"""Metrics: one module per metric, named as ADK names it, and an explicit registry."""

from otel_eval.metrics._llm_judge import INVALID_INPUT
from otel_eval.metrics._reference import NO_REFERENCE, SCENARIO_WITHOUT_CONVERSATION
from otel_eval.metrics.base import Evaluator, MetricInfo
from otel_eval.metrics.custom_metric import conversation_level
from otel_eval.metrics.registry import (
    EFFICIENCY_METRICS,
    REFERENCE_FREE_JUDGE_METRICS,
    MetricRegistry,
    default_registry,
    register,
)

__all__ = [
    "EFFICIENCY_METRICS",
    "INVALID_INPUT",
    "NO_REFERENCE",
    "REFERENCE_FREE_JUDGE_METRICS",
    "SCENARIO_WITHOUT_CONVERSATION",
    "Evaluator",
    "MetricInfo",
    "MetricRegistry",
    "conversation_level",
    "default_registry",
    "register",
]
