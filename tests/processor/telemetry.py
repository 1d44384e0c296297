"""A real OpenTelemetry SDK pipeline (traces, metrics, logs) with in-memory exporters, for processor and emit tests."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import EvaluationSpanProcessor, semconv
from otel_eval.transport import InvocationExporter
from tests.collected import settled


@dataclass
class Telemetry:
    """Tracer, meter and logger providers whose output stays in memory."""

    spans: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    logs: InMemoryLogRecordExporter = field(default_factory=InMemoryLogRecordExporter)
    metric_reader: InMemoryMetricReader = field(default_factory=InMemoryMetricReader)
    tracer_provider: TracerProvider = field(default_factory=TracerProvider)

    def __post_init__(self) -> None:
        self.meter_provider = MeterProvider(metric_readers=[self.metric_reader])
        self.logger_provider = LoggerProvider()
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))

    def providers(self) -> dict[str, Any]:
        """Keyword arguments for EvaluationSpanProcessor / Emitters.create."""
        return {
            "tracer_provider": self.tracer_provider,
            "meter_provider": self.meter_provider,
            "logger_provider": self.logger_provider,
        }

    def add_exporting_processor(self) -> None:
        """The user's exporting processor, added after the evaluation processor as documented."""
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))

    def finished_spans(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def evaluation_spans(self) -> list[ReadableSpan]:
        return [s for s in self.finished_spans() if s.name.startswith(semconv.EVALUATION_SPAN_NAME_PREFIX + " ")]

    def result_events(self) -> list[ReadableLogRecord]:
        return [r for r in self.logs.get_finished_logs() if r.log_record.event_name == semconv.EVALUATION_RESULT_EVENT]

    def metric_points(self, name: str, *, settle: bool = True) -> list[Any]:
        """Data points of instrument ``name``: from two fresh collections (a counter's new series are at 0 in the
        first), or from one with ``settle=False`` (a synchronous instrument's exemplars are only in the first)."""
        data = settled(self.metric_reader) if settle else self.metric_reader.get_metrics_data()
        return list(_points(data, name))

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
        self.logger_provider.shutdown()


def _points(data: Any, name: str) -> Iterator[Any]:
    if data is None:
        return
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name == name:
                    yield from metric.data.data_points


def hex_id(value: int, digits: int) -> str:
    return format(value, f"0{digits}x")


def attach(provider: TracerProvider, exporter: InvocationExporter, **options: object) -> EvaluationSpanProcessor:
    """An ``EvaluationSpanProcessor`` handing its requests to ``exporter``, added to ``provider``."""
    processor = EvaluationSpanProcessor(exporter=exporter, **options)  # type: ignore[arg-type]
    provider.add_span_processor(processor)
    return processor


def evaluation_process_pids() -> list[int]:
    """The live evaluation processes (``isolation="process"``) this process started, read from ``/proc``."""
    from otel_eval.processor._process.lifecycle import CHILD_MODULE

    pids: list[int] = []
    for children in Path("/proc/self/task").glob("*/children"):
        for pid in map(int, children.read_text().split()):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue  # ended meanwhile
            if CHILD_MODULE.encode() in cmdline:
                pids.append(pid)
    return sorted(set(pids))


def evaluation_process_pid() -> int | None:
    """The one live evaluation process this process started (None when there is none)."""
    pids = evaluation_process_pids()
    assert len(pids) <= 1, f"more than one evaluation process: {pids}"
    return pids[0] if pids else None


def is_running(pid: int) -> bool:
    """Whether ``pid`` exists and has not exited (a zombie has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
