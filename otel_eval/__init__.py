"""otel-eval: online evaluation of AI agents from their OpenTelemetry traces."""

from otel_eval.version import __version__

__all__ = ["__version__"]
