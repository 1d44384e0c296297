"""Fixtures of the processor tests: an in-memory OpenTelemetry pipeline, and no judge credentials."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider

from otel_eval.transport import InMemoryInvocationExporter
from tests.processor.telemetry import Telemetry


@pytest.fixture(autouse=True)
def _no_judge_credentials(clean_genai_env: None) -> None:
    """Judged metrics are off unless a test configures the loopback judge."""


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    pipeline = Telemetry()
    yield pipeline
    pipeline.shutdown()


@pytest.fixture
def exporter() -> InMemoryInvocationExporter:
    """Where the processor under test hands its requests (nothing is evaluated)."""
    return InMemoryInvocationExporter()


@pytest.fixture
def provider() -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider()
    yield tracer_provider
    tracer_provider.shutdown()
