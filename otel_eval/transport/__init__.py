"""Transports of evaluation requests: the embedded in-process worker (default), Kafka, and in-memory for tests."""

from otel_eval.transport.base import ExportResult, InvocationExporter
from otel_eval.transport.in_memory import InMemoryInvocationExporter

__all__ = ["ExportResult", "InMemoryInvocationExporter", "InvocationExporter"]
