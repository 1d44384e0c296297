"""Reading otel_eval's counters from an in-memory metric reader."""

from __future__ import annotations

from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricsData


def settled(reader: InMemoryMetricReader) -> MetricsData | None:
    """The reader's second collection from now: otel_eval's counters report a new series at 0 in the first
    collection that sees it and at its total from the next one on (tests/deploy/test_live_series_zero.py)."""
    reader.get_metrics_data()
    return reader.get_metrics_data()
