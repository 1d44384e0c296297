"""Metrics: one module per metric, named as ADK names it, and an explicit registry."""

from otel_eval.metrics.base import Evaluator, MetricInfo
from otel_eval.metrics.registry import MetricRegistry, default_registry

__all__ = ["Evaluator", "MetricInfo", "MetricRegistry", "default_registry"]
