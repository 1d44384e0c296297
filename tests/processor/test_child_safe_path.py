"""The evaluation process runs where the agent runs (its working directory, possibly writable by others) and holds
the judge's key: a module there named like one of its dependencies must not be imported by it (``-P``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.processor._process.lifecycle import child_command
from tests.worker._harness import OtlpSink, child_otlp_sink

pytestmark = pytest.mark.integration

SHADOW = """
import pathlib
pathlib.Path({marker!r}).write_text("imported from the working directory")
raise ImportError("a module of the working directory shadowed a dependency")
"""


@pytest.fixture
def sink(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpSink]:
    with child_otlp_sink(monkeypatch, traces=False) as receiver:
        yield receiver


def _shadowing(directory: Path, *modules: str) -> Path:
    """``directory`` with a module of each name in ``modules`` that, imported, writes the marker it returns."""
    marker = directory / "shadow-imported"
    for name in modules:
        (directory / f"{name}.py").write_text(SHADOW.format(marker=str(marker)))
    return marker


def test_the_evaluation_process_does_not_import_modules_of_the_working_directory(
    sink: OtlpSink, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = _shadowing(tmp_path, "pydantic", "google", "opentelemetry")
    monkeypatch.chdir(tmp_path)
    processor = EvaluationSpanProcessor(settings=ProcessorSettings(isolation="process"))
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider()
    provider.add_span_processor(processor)
    TravelAgent(provider).run(SCENARIOS[0])
    try:
        assert processor.force_flush(60_000)
        assert sink.events(), "the evaluation process scored the invocation"
    finally:
        provider.shutdown()
    assert not marker.exists()


def test_the_command_line_keeps_the_working_directory_off_the_path(tmp_path: Path) -> None:
    marker = _shadowing(tmp_path, "json")
    safe = subprocess.run(child_command("json.tool", "--help"), cwd=tmp_path, capture_output=True, timeout=60)
    assert safe.returncode == 0 and b"usage" in safe.stdout and not marker.exists()
    unsafe = subprocess.run(
        [sys.executable, "-m", "json.tool", "--help"], cwd=tmp_path, capture_output=True, timeout=60
    )
    assert unsafe.returncode != 0 and marker.exists()  # what the child was exposed to before
