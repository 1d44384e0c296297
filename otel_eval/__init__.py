"""otel-eval: online evaluation of AI agents from their OpenTelemetry traces."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from otel_eval.version import __version__

if TYPE_CHECKING:
    from otel_eval.processor import EvaluationSpanProcessor, ProcessorSettings, attach_to_global_providers

__all__ = ["EvaluationSpanProcessor", "ProcessorSettings", "__version__", "attach_to_global_providers"]


def __getattr__(name: str) -> Any:
    # Imported on first use so that ``import otel_eval`` (and the CLI) stay cheap.
    if name in ("EvaluationSpanProcessor", "ProcessorSettings", "attach_to_global_providers"):
        import otel_eval.processor

        return getattr(otel_eval.processor, name)
    raise AttributeError(f"module 'otel_eval' has no attribute {name!r}")
