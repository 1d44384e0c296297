"""Transports of evaluation requests: Kafka, and in-memory for tests (the embedded worker is in :mod:`otel_eval.evaluation`)."""

from otel_eval.transport._aiokafka import is_retriable, probe_broker, stop_client
from otel_eval.transport._kafka_config import KafkaSecurity, check_compression, split_servers
from otel_eval.transport._kafka_outage import BROKER, OutageMonitor, quiet_client_logs, release_client_logs
from otel_eval.transport.base import ExportResult, InvocationExporter, RequestEvaluator
from otel_eval.transport.in_memory import InMemoryInvocationExporter

__all__ = [
    "BROKER",
    "ExportResult",
    "InMemoryInvocationExporter",
    "InvocationExporter",
    "KafkaSecurity",
    "OutageMonitor",
    "RequestEvaluator",
    "check_compression",
    "is_retriable",
    "probe_broker",
    "quiet_client_logs",
    "release_client_logs",
    "split_servers",
    "stop_client",
]
