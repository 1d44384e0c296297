"""Every instrument the processor creates (scores, pipeline, judge, enrichment) lands on the provider the user
passed, never on the global one: one process per provider argument, since global providers can be set only once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from otel_eval import semconv

REPO = Path(__file__).resolve().parents[2]
SIGNAL = {"tracer": "spans", "meter": "metrics", "logger": "logs"}

pytestmark = pytest.mark.integration  # each test starts another Python process


@pytest.mark.parametrize("kind", sorted(SIGNAL))
def test_nothing_reaches_the_global_provider_of_a_kind_that_was_passed(kind: str) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "tests.processor.global_providers_probe", kind],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert process.returncode == 0, process.stderr
    report = json.loads(process.stdout.splitlines()[-1])
    assert report["flushed"]
    signal = SIGNAL[kind]
    assert not report["global"][signal], f"with {kind}_provider= passed, the global one got {report['global']}"
    assert report["own"][signal]
    for other in set(SIGNAL.values()) - {signal}:  # not passed: those go to the globals, so the probe sees them
        assert report["global"][other], f"the probe saw no {other} on the global provider: {report}"
    if kind == "meter":
        assert {
            semconv.METRIC_EVALUATION_RESULTS,
            semconv.METRIC_EVALUATION_SCORE,
            semconv.METRIC_INVOCATIONS_SAMPLED,
            semconv.METRIC_JUDGE_CALLS,  # the default judge, too
            semconv.METRIC_JUDGE_DURATION,
        } <= set(report["own"]["metrics"])
    if kind == "tracer":
        assert {"evaluate hallucinations_v1", "generate_content gemini-2.5-flash"} <= set(report["own"]["spans"])
