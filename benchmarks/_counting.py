"""What both sides of ``bench_processor`` share: counting exporters, the providers they sit in, pacing, CPU readings.

This module imports only the standard library and the OpenTelemetry SDK, so that the Splunk peer's runner
(``benchmarks._bench_peer``, in its own virtualenv) and ours (``benchmarks._bench_ours``) use the same code, and so
that the evaluation process of ``isolation="process"`` can load the exporters through the SDK's entry points
(:func:`entry_point_dir`). Each exporter keeps its counts in memory and, when shut down, writes them as JSON into
``$BENCH_COUNTS_DIR`` (when set), where the runner collects them, whichever process they were made in.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry import _logs, metrics, trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    MetricExporter,
    MetricExportResult,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

COUNTS_DIR = "BENCH_COUNTS_DIR"
RESULT_EVENT = "gen_ai.evaluation.result"
EXPORTER_NAME = "bench_counting"
"""The exporters' entry-point name in each signal's group: ``OTEL_{TRACES,LOGS,METRICS}_EXPORTER=bench_counting``."""


def _write(exporter: object, signal: str, payload: dict[str, Any]) -> None:
    directory = os.environ.get(COUNTS_DIR)
    if directory:
        payload["otel_eval"] = getattr(sys.modules.get("otel_eval"), "__file__", None)
        Path(directory, f"{os.getpid()}-{signal}-{id(exporter)}.json").write_text(json.dumps(payload))


class CountingSpanExporter(SpanExporter):
    """Counts spans; keeps each local root's end time (ns) by trace id (the agent's invocation spans)."""

    def __init__(self) -> None:
        self.spans = 0
        self.root_ends: dict[int, int] = {}

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        for span in spans:
            if span.parent is None and span.context is not None and span.end_time:
                self.root_ends[span.context.trace_id] = span.end_time
        return SpanExportResult.SUCCESS

    def summary(self) -> dict[str, Any]:
        return {"spans": self.spans, "root_ends": {str(t): end for t, end in self.root_ends.items()}}

    def shutdown(self) -> None:
        _write(self, "traces", self.summary())


class CountingLogExporter(LogRecordExporter):
    """Counts log records and ``gen_ai.evaluation.result`` events; keeps each trace's first event time (ns).

    The time is the record's timestamp (both sides set it when the result is emitted), else its observed time.
    """

    def __init__(self) -> None:
        self.records = 0
        self.results = 0
        self.first_result: dict[int, int] = {}

    def export(self, batch: Sequence[Any]) -> LogRecordExportResult:
        self.records += len(batch)
        for item in batch:
            record = getattr(item, "log_record", item)
            if getattr(record, "event_name", None) != RESULT_EVENT:
                continue
            self.results += 1
            trace_id = getattr(record, "trace_id", None)
            stamp = getattr(record, "timestamp", None) or getattr(record, "observed_timestamp", None)
            if trace_id and stamp:
                known = self.first_result.get(trace_id)
                self.first_result[trace_id] = stamp if known is None else min(known, stamp)
        return LogRecordExportResult.SUCCESS

    def summary(self) -> dict[str, Any]:
        first = {str(t): stamp for t, stamp in self.first_result.items()}
        return {"records": self.records, "results": self.results, "first_result": first}

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        _write(self, "logs", self.summary())


class CountingMetricExporter(MetricExporter):
    """Counts measurements per instrument: a histogram's point counts, one per point of the other kinds (cumulative
    temporality, so the largest export of each instrument is its total)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.measurements: dict[str, int] = {}

    def export(self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
        for resource_metrics in metrics_data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    points = metric.data.data_points
                    total = sum(p.count if isinstance(p, HistogramDataPoint) else 1 for p in points)
                    self.measurements[metric.name] = max(total, self.measurements.get(metric.name, 0))
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        _write(self, "metrics", {"measurements": self.measurements})


class CountingProviders:
    """A tracer, logger and meter provider, each exporting to a counting exporter the SDK's standard way (batch span
    and log processors, a periodic metric reader), installed as the global providers."""

    def __init__(self, *, span_processors: bool = True) -> None:
        self.spans, self.logs, self.metrics = CountingSpanExporter(), CountingLogExporter(), CountingMetricExporter()
        self.tracer_provider = TracerProvider()
        if span_processors:
            self.tracer_provider.add_span_processor(BatchSpanProcessor(self.spans))
        self.logger_provider = LoggerProvider()
        self.logger_provider.add_log_record_processor(BatchLogRecordProcessor(self.logs))
        self.meter_provider = MeterProvider(metric_readers=[PeriodicExportingMetricReader(self.metrics)])
        trace.set_tracer_provider(self.tracer_provider)
        _logs.set_logger_provider(self.logger_provider)
        metrics.set_meter_provider(self.meter_provider)

    def force_flush(self) -> None:
        self.tracer_provider.force_flush()
        self.logger_provider.force_flush()
        self.meter_provider.force_flush()

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.logger_provider.shutdown()
        self.meter_provider.shutdown()


def entry_point_dir(directory: Path) -> Path:
    """Writes a distribution's metadata into ``directory`` that registers the counting exporters under the SDK's
    entry-point groups as ``bench_counting``; with ``directory`` on ``sys.path`` (``PYTHONPATH`` for a child) the
    SDK resolves ``OTEL_*_EXPORTER=bench_counting`` to them. Nothing is installed into any environment."""
    info = directory / "otel_eval_bench_counting-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: otel-eval-bench-counting\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        f"[opentelemetry_traces_exporter]\n{EXPORTER_NAME} = benchmarks._counting:CountingSpanExporter\n\n"
        f"[opentelemetry_logs_exporter]\n{EXPORTER_NAME} = benchmarks._counting:CountingLogExporter\n\n"
        f"[opentelemetry_metrics_exporter]\n{EXPORTER_NAME} = benchmarks._counting:CountingMetricExporter\n"
    )
    return directory


def collect(directory: Path) -> dict[str, Any]:
    """The counts the exporters of every process wrote into ``directory``, merged."""
    merged: dict[str, Any] = {"spans": 0, "root_ends": {}, "records": 0, "results": 0, "first_result": {}}
    merged["measurements"] = {}
    merged["otel_eval"] = set()
    for path in sorted(directory.glob("*.json")):
        _, signal, _ = path.stem.split("-")
        data = json.loads(path.read_text())
        if data.get("otel_eval"):
            merged["otel_eval"].add(data["otel_eval"])
        if signal == "traces":
            merged["spans"] += data["spans"]
            merged["root_ends"].update(data["root_ends"])
        elif signal == "logs":
            merged["records"] += data["records"]
            merged["results"] += data["results"]
            for trace_id, stamp in data["first_result"].items():
                known = merged["first_result"].get(trace_id)
                merged["first_result"][trace_id] = stamp if known is None else min(known, stamp)
        else:
            for name, count in data["measurements"].items():
                merged["measurements"][name] = merged["measurements"].get(name, 0) + count
    merged["otel_eval"] = sorted(merged["otel_eval"])
    return merged


# --- the workload's pace and the CPU it costs --------------------------------------------------------------------


def drive(invoke: Callable[[int], None], invocations: int, rate: float | None) -> None:
    """Calls ``invoke(index)`` ``invocations`` times: back to back (``rate`` None: a burst), or starting one every
    ``1 / rate`` seconds (an invocation that starts late does not shift the ones after it)."""
    if rate is None:
        for index in range(invocations):
            invoke(index)
        return
    interval = 1.0 / rate
    due = time.perf_counter()
    for index in range(invocations):
        invoke(index)
        due += interval
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)


def settle() -> None:
    """Before the measured window, on both sides: a pause for background threads, then the heap so far (imports,
    warm-up) moved out of the collector's reach, so that a full collection, which scans the whole heap, costs what
    the workload's objects cost and not what the imported packages' do."""
    time.sleep(0.2)
    gc.collect()
    gc.freeze()


def _children_of(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def descendants_cpu() -> dict[int, float]:
    """CPU seconds (user + system, with their reaped children's) of each live descendant process of this one, read
    from Linux ``/proc``: the evaluation process of ``isolation="process"``, found without the processor's
    internals."""
    cpu: dict[int, float] = {}
    pending = _children_of(os.getpid())
    while pending:
        pid = pending.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            pending += _children_of(pid)
        except OSError:
            continue
        cpu[pid] = sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return cpu


def proc_cpu(stat_path: str) -> float:
    """CPU seconds (user + system) so far of the process or thread whose Linux ``stat`` file is ``stat_path``
    (``/proc/<pid>/stat``, ``/proc/self/task/<tid>/stat``). Raises ``OSError`` once it has ended."""
    fields = Path(stat_path).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def reaped_children_cpu() -> float:
    """CPU seconds of every child process this one has waited for (``RUSAGE_CHILDREN``)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def freshness_ms(root_ends: dict[str, int], first_result: dict[str, int]) -> list[float]:
    """Milliseconds from each evaluated invocation's root end to its first result."""
    return sorted((first_result[t] - end) / 1e6 for t, end in root_ends.items() if t in first_result)
