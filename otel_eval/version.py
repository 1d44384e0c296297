"""The otel-eval version."""

__version__ = "0.1.0"
