"""The span processor that evaluates agent invocations online: :class:`EvaluationSpanProcessor`."""

from otel_eval.processor.processor import EvaluationSpanProcessor

__all__ = ["EvaluationSpanProcessor"]
