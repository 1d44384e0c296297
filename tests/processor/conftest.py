"""Fixtures of the processor tests: an in-memory OpenTelemetry pipeline, and no judge credentials."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.processor.telemetry import Telemetry


@pytest.fixture(autouse=True)
def _no_judge_credentials(clean_genai_env: None) -> None:
    """Judged metrics are off unless a test configures the loopback judge."""


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    pipeline = Telemetry()
    yield pipeline
    pipeline.shutdown()
