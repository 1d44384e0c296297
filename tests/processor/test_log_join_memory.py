"""The processor remembers the spans it handed on (to count a content log record arriving after its span as late)
only once content log records flow: without ``EVENT_ONLY`` content none ever comes, and every span handed on filled
that memory to its bound for nothing."""

from __future__ import annotations

from opentelemetry._logs import LogRecord
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import semconv
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.processor._logs import EvaluationLogRecordProcessor, LogJoin


def test_handed_on_spans_are_remembered_only_once_content_records_flow() -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = tracer_provider.get_tracer("tests.log_join")
    companion = EvaluationLogRecordProcessor(max_pending=100, sample_bound=None)
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(companion)
    join = LogJoin(companion, PipelineMetrics(MeterProvider()), max_traces=10, max_bytes=1 << 20)
    for index in range(100):
        tracer.start_span(f"invoke_agent {index}").end()
    join.take(exporter.get_finished_spans())
    assert len(join._handed_on) == 0  # no content record ever came

    with tracer.start_as_current_span("invoke_agent with content"):
        logger_provider.get_logger("tests.log_join").emit(
            LogRecord(event_name=semconv.GEN_AI_OPERATION_DETAILS_EVENT, attributes={"gen_ai.input.messages": "[]"})
        )
    join.ingest(0.0)
    (last,) = exporter.get_finished_spans()[-1:]
    assert len(join.take([last])) == 1 and len(join._handed_on) == 1
