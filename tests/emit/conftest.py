"""The emit tests share the processor tests' in-memory OpenTelemetry pipeline."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.processor.telemetry import Telemetry


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    pipeline = Telemetry()
    pipeline.add_exporting_processor()
    yield pipeline
    pipeline.shutdown()
