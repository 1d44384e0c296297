"""Running the demo: the travel assistant on a real TracerProvider with the EvaluationSpanProcessor attached.

Everything the processor emits stays in memory (in-memory span/log exporters and metric reader) so it can be shown,
and is written as OTLP JSON to an output directory.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricsData
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import semconv
from otel_eval.demo.golden import golden_eval_set
from otel_eval.demo.workload import AGENT_NAME, SCENARIOS, Scenario, TravelAgent
from otel_eval.metrics import default_registry
from otel_eval.model.messages import EvaluationRecord
from otel_eval.processor import EvaluationSpanProcessor, ProcessorSettings

SERVICE = "travel-assistant-demo"
JUDGED_METRICS = {"hallucinations_v1": 0.8, "safety_v1": 0.8}
DETERMINISTIC_CRITERIA: dict[str, Any] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
"""ADK's default criteria (``AgentEvaluator``'s thresholds), so the demo scores as ``otel-eval run`` does by default."""
_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})


@dataclass(frozen=True, slots=True)
class DemoInvocation:
    """One agent run: its scenario and the ids of its ``invoke_agent`` span."""

    scenario: Scenario
    trace_id: str
    span_id: str


@dataclass(slots=True)
class DemoRun:
    """What the demo produced."""

    invocations: list[DemoInvocation]
    records: list[EvaluationRecord]
    spans: list[ReadableSpan]
    events: list[ReadableLogRecord]
    metrics: MetricsData | None
    stats: dict[str, int]
    flushed: bool
    files: list[Path] = field(default_factory=list)

    def records_of(self, invocation: DemoInvocation) -> list[EvaluationRecord]:
        """The records of one invocation, in metric order."""
        return [r for r in self.records if r.trace_id == invocation.trace_id and r.span_id == invocation.span_id]

    @property
    def evaluation_spans(self) -> list[ReadableSpan]:
        """The ``evaluate {metric}`` spans."""
        return [s for s in self.spans if s.name.startswith(semconv.EVALUATION_SPAN_NAME_PREFIX + " ")]

    def metric_points(self, name: str) -> list[Any]:
        """Data points of the instrument ``name``."""
        if self.metrics is None:
            return []
        return [
            point
            for resource_metrics in self.metrics.resource_metrics
            for scope_metrics in resource_metrics.scope_metrics
            for metric in scope_metrics.metrics
            if metric.name == name
            for point in metric.data.data_points
        ]


def demo_criteria(judge_model: str | None = None) -> dict[str, Any]:
    """Deterministic reference metrics (on golden-matched invocations) plus the judged reference-free ones, judged
    by ``judge_model`` when given (else the criteria's default model)."""
    registry = default_registry()
    criteria = dict(DETERMINISTIC_CRITERIA)
    for name, threshold in JUDGED_METRICS.items():
        if name in registry:
            criteria[name] = (
                threshold
                if judge_model is None
                else {"threshold": threshold, "judge_model_options": {"judge_model": judge_model}}
            )
    return criteria


def run_demo(
    output_dir: Path | None = None,
    *,
    judge: Any = None,
    judge_model: str | None = None,
    flush_timeout_millis: int = 120_000,
) -> DemoRun:
    """Runs every scenario once with the processor attached, then collects (and optionally writes) the telemetry.

    ``judge_model`` names the judge model of the judged metrics (recorded as ``otel_eval.judge.model``).
    """
    resource = Resource.create({SERVICE_NAME: SERVICE})
    span_exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    metric_reader = InMemoryMetricReader()
    meter_provider = MeterProvider(resource=resource, metric_readers=[metric_reader], shutdown_on_exit=False)
    log_exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]  # SDK __init__ is unannotated
    logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))

    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(
        demo_criteria(judge_model),
        settings=ProcessorSettings(eval_set=golden_eval_set()),
        judge=judge,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
        sinks=[records.extend],
    )
    tracer_provider.add_span_processor(processor)  # first, so evaluation spans emitted while it drains are exported
    tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))

    agent = TravelAgent(tracer_provider)
    for index, scenario in enumerate(SCENARIOS):
        agent.run(scenario, conversation_id=f"demo-conversation-{index + 1}")
    flushed = processor.force_flush(flush_timeout_millis)
    stats = processor.stats()
    tracer_provider.shutdown()
    meter_provider.shutdown()
    metrics = metric_reader.get_metrics_data()  # the last collection: every counter at its total
    logger_provider.shutdown()

    spans = list(span_exporter.get_finished_spans())
    run = DemoRun(
        invocations=_invocations(spans),
        records=records,
        spans=spans,
        events=[
            e for e in log_exporter.get_finished_logs() if e.log_record.event_name == semconv.EVALUATION_RESULT_EVENT
        ],
        metrics=metrics,
        stats=stats,
        flushed=flushed,
    )
    if output_dir is not None:
        run.files = write_output(run, output_dir)
    return run


def _invocations(spans: list[ReadableSpan]) -> list[DemoInvocation]:
    found = []
    for span in spans:
        if span.name != f"invoke_agent {AGENT_NAME}" or span.context is None:
            continue
        messages = str((span.attributes or {}).get(semconv.GEN_AI_INPUT_MESSAGES, ""))
        scenario = next(s for s in SCENARIOS if json.dumps(s.user_text, ensure_ascii=False) in messages)
        found.append(
            DemoInvocation(scenario, format(span.context.trace_id, "032x"), format(span.context.span_id, "016x"))
        )
    order = {scenario.key: index for index, scenario in enumerate(SCENARIOS)}
    return sorted(found, key=lambda inv: order[inv.scenario.key])


def write_output(run: DemoRun, directory: Path) -> list[Path]:
    """Writes the spans, events and metrics as OTLP JSON, and the results as JSON lines. Returns the files."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "traces.otlp.json": _otlp_json(encode_spans(run.spans)),
        "events.otlp.json": _otlp_json(encode_logs(run.events)),
        "metrics.otlp.json": _otlp_json(encode_metrics(run.metrics) if run.metrics is not None else None),
    }
    written = []
    for name, content in files.items():
        path = directory / name
        path.write_text(content, encoding="utf-8")
        written.append(path)
    results = directory / "results.jsonl"
    results.write_text("".join(record.model_dump_json() + "\n" for record in run.records), encoding="utf-8")
    written.append(results)
    return written


def _otlp_json(message: Any) -> str:
    """OTLP/JSON: protobuf JSON mapping, except that trace and span ids are hex (not base64), as the spec says."""
    if message is None:
        return "{}\n"
    data = MessageToDict(message)
    return json.dumps(_hex_ids(data), indent=2, ensure_ascii=False) + "\n"


def _hex_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: base64.b64decode(item).hex() if key in _ID_KEYS and isinstance(item, str) else _hex_ids(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(item) for item in value]
    return value
