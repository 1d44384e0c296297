"""The pipeline's per-invocation counters (``otel_eval.invocations.sampled`` and ``.evaluated``) on the real SDK:
counted in-process and observed at collection time, they export the same monotonic sum a synchronous counter
would, summed over every holder of one meter provider (the SDK keeps the first callbacks of a name only), kept
after a holder is gone, and registered on the global provider once it is set."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from otel_eval import semconv
from otel_eval.emit.pipeline import PipelineMetrics
from tests.collected import settled
from tests.processor.telemetry import Telemetry

REPO = Path(__file__).resolve().parents[2]


def _sum(telemetry: Telemetry, name: str) -> tuple[Any, Any]:
    data: Any = settled(telemetry.metric_reader)
    for resource_metrics in data.resource_metrics if data is not None else ():
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name == name:
                    (point,) = metric.data.data_points
                    assert dict(point.attributes or {}) == {}
                    return point.value, metric.data.is_monotonic
    return None, None


def test_every_holder_of_a_provider_adds_to_one_monotonic_series_which_outlives_the_holders() -> None:
    telemetry = Telemetry()
    first, second = PipelineMetrics(telemetry.meter_provider), PipelineMetrics(telemetry.meter_provider)
    assert _sum(telemetry, semconv.METRIC_INVOCATIONS_EVALUATED) == (0, True)  # at 0 before its first count
    first.evaluated(3)
    second.evaluated(4)
    first.sampled(2)
    assert _sum(telemetry, semconv.METRIC_INVOCATIONS_EVALUATED) == (7, True)
    assert _sum(telemetry, semconv.METRIC_INVOCATIONS_SAMPLED) == (2, True)
    assert (first.snapshot()["invocations.evaluated"], second.snapshot()["invocations.evaluated"]) == (3, 4)
    del first
    gc.collect()
    second.evaluated(1)
    assert _sum(telemetry, semconv.METRIC_INVOCATIONS_EVALUATED) == (8, True)
    other = Telemetry()  # another provider: its own series
    PipelineMetrics(other.meter_provider).evaluated(5)
    assert _sum(other, semconv.METRIC_INVOCATIONS_EVALUATED) == (5, True)
    assert _sum(telemetry, semconv.METRIC_INVOCATIONS_EVALUATED) == (8, True)


def test_holders_made_before_the_global_provider_is_set_report_through_it_once_set() -> None:
    script = textwrap.dedent(
        """
        import json
        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from otel_eval.emit.pipeline import PipelineMetrics

        early, also_early = PipelineMetrics(), PipelineMetrics()
        early.evaluated(2)  # counted before any provider: reported once one is set
        reader = InMemoryMetricReader()
        provider = MeterProvider(metric_readers=[reader])
        metrics.set_meter_provider(provider)
        also_early.evaluated(3)
        PipelineMetrics(provider).evaluated(4)  # the global provider passed explicitly: the same series
        early.evaluated(1)
        collections = [{}, {}]  # each new series at 0 first, its total from the next collection on
        for values in collections:
            for rm in reader.get_metrics_data().resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        values[m.name] = [p.value for p in m.data.data_points]
        print(json.dumps(collections))
        """
    )
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=environment, timeout=120
    )
    first, values = json.loads(out.stdout.strip().splitlines()[-1])
    assert first[semconv.METRIC_INVOCATIONS_EVALUATED] == [0]
    assert values[semconv.METRIC_INVOCATIONS_EVALUATED] == [10]
