"""Plain requests (:class:`~otel_eval.reconstruct.plain.PlainRequest`): the span processor hands the embedded core the
plain views of the invocations when its metrics read no more than they hold, and the core scores them without making a
model. Proven here on the demo workload and every recorded and hostile trace, with 1 and with the 4 efficiency
metrics: the same records (result ids included) and the same exported telemetry (evaluation spans, result events,
score metrics on the real OpenTelemetry SDK) as the full requests of the same invocations; and a transport that ships
them gets the full request, byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval.demo.workload import SCENARIOS, TravelAgent
from otel_eval.emit import Emitters
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.model import EvalSet
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.processor._request_builder import RequestBuilder
from otel_eval.processor._selection import InvocationFilters
from otel_eval.reconstruct import rebuild_traces
from otel_eval.reconstruct.plain import PLAIN_READS, PlainRequest
from otel_eval.traces import Span
from otel_eval.transport.in_memory import InMemoryInvocationExporter
from tests.processor.telemetry import Telemetry
from tests.reconstruct.recorded import ALL_TRACE_FILES, demo_spans, file_spans

TRACE_FILES = ALL_TRACE_FILES
SETUPS = ("1 metric", "4 efficiency metrics")


def _core(setup: str, telemetry: Telemetry) -> EvaluationCore:
    """The embedded core of ``setup`` (as the processor makes it: no criteria, no judge), emitting on the real SDK."""
    metric_names = ("tool_call_count_v1",) if setup == "1 metric" else ()  # ProcessorSettings.metrics, as benchmarked
    emitters = Emitters.create(**telemetry.providers())
    return EvaluationCore(metric_names=metric_names, judge_configured=False, emitters=emitters)


def _traces() -> Iterator[tuple[str, list[Span]]]:
    for path in TRACE_FILES:
        yield str(path), file_spans(path)
    yield from ((f"demo:{key}", spans) for key, spans in demo_spans())


def _records(records: list[EvaluationRecord]) -> list[dict[str, Any]]:
    return [record.model_dump(exclude={"evaluated_at"}) for record in records]


def _exported(telemetry: Telemetry) -> dict[str, list[str]]:
    """Everything the SDK exported, but the times and the evaluation spans' own ids (new at every run)."""
    spans = [
        repr((s.name, dict(s.attributes or {}), s.context.trace_id, s.parent.span_id if s.parent else None))
        + repr([(link.context.trace_id, link.context.span_id) for link in s.links])
        for s in telemetry.finished_spans()
    ]
    events = [
        repr((r.log_record.event_name, r.log_record.body, dict(r.log_record.attributes or {}), r.log_record.trace_id,
              r.log_record.span_id))
        for r in telemetry.logs.get_finished_logs()
    ]  # fmt: skip
    data = telemetry.metric_reader.get_metrics_data()
    metrics = [
        f"{metric.name} {json.dumps(_timeless(json.loads(point.to_json())), sort_keys=True)}"
        for resource_metrics in (data.resource_metrics if data is not None else [])
        for scope in resource_metrics.scope_metrics
        for metric in scope.metrics
        for point in metric.data.data_points
    ]
    return {"spans": spans, "events": events, "metrics": sorted(metrics)}


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if "time" not in k}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


@pytest.mark.parametrize("setup", SETUPS)
def test_plain_requests_give_the_full_requests_records_and_telemetry(setup: str) -> None:
    """Every trace rebuilt twice for the core's reads: one core scores the plain views (no model made), the other the
    full requests of the models; the records, spans, events and metric points are the same."""
    plain_telemetry, full_telemetry = Telemetry(), Telemetry()
    plain_core, full_core = _core(setup, plain_telemetry), _core(setup, full_telemetry)
    plain_telemetry.add_exporting_processor()
    full_telemetry.add_exporting_processor()
    reads = plain_core.reads()
    assert reads in PLAIN_READS
    plain_records: list[EvaluationRecord] = []
    full_records: list[EvaluationRecord] = []
    count = 0
    for name, spans in _traces():
        for plain_trace, full_trace in zip(
            rebuild_traces(spans, reads=reads), rebuild_traces(spans, reads=reads), strict=True
        ):
            if plain_trace.plain is None:  # the ADK conventions, a trace of no convention, a malformed root id
                continue
            for view, traced in zip(plain_trace.plain, full_trace.invocations, strict=True):
                started = plain_core.start(PlainRequest([view]))
                assert started.on_loop is None and not started.holds_session, name
                assert view._traced is None, name  # no model was made
                plain_records += started.records
                full_records += full_core.start(EvaluationRequest(invocations=[traced])).records
                count += 1
    assert count > 150 and len(plain_records) == count * (1 if setup == "1 metric" else 4)
    assert _records(plain_records) == _records(full_records)
    plain_exported, full_exported = _exported(plain_telemetry), _exported(full_telemetry)
    assert len(plain_exported["spans"]) == len(plain_records) and len(plain_exported["events"]) == len(plain_records)
    assert plain_exported["metrics"]
    assert plain_exported == full_exported


@pytest.mark.parametrize("setup", SETUPS)
def test_the_request_builder_hands_the_embedded_core_plain_requests_of_the_same_records(setup: str) -> None:
    """The processor's builder, on the demo workload's SDK spans: for the embedded core's reads it makes plain
    requests; the same spans rebuilt in full (an eval set no case of which pairs: pairing reads the user message)
    give full requests; the core's records of both are the same."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = TravelAgent(provider)
    telemetry = Telemetry()
    core = _core(setup, telemetry)
    filters = InvocationFilters.create()
    plain_builder = RequestBuilder(filters=filters, reads=core.reads)
    no_case = EvalSet(eval_set_id="none", eval_cases=[])
    full_builder = RequestBuilder(filters=filters, eval_set=no_case, reads=core.reads)
    plain_records: list[EvaluationRecord] = []
    full_records: list[EvaluationRecord] = []
    for scenario in SCENARIOS:
        exporter.clear()
        agent.run(scenario)
        spans = exporter.get_finished_spans()
        plain_requests, full_requests = plain_builder.build(spans), full_builder.build(spans)
        assert plain_requests and all(isinstance(r, PlainRequest) for r in plain_requests), scenario.key
        assert all(isinstance(r, EvaluationRequest) for r in full_requests), scenario.key
        assert [r.trace_id for r in plain_requests] == [r.trace_id for r in full_requests]
        assert [r.record_key for r in plain_requests] == [r.record_key for r in full_requests]
        for request in plain_requests:
            assert isinstance(request, PlainRequest)
            plain_records += core.start(request).records
            assert all(view._traced is None for view in request.plain)  # scored without a model
        for request in full_requests:
            full_records += core.start(request).records
    assert plain_records and _records(plain_records) == _records(full_records)


def test_a_transport_ships_the_full_request_of_a_plain_one() -> None:
    """``export_rebuilt`` of a transport (here the in-memory one) makes each plain request the full request the
    builder made before: the same JSON on the wire, byte for byte (but the creation time, the request's own)."""
    spans = next(spans for key, spans in demo_spans() if key == "two_tools")
    reads = _core("4 efficiency metrics", Telemetry()).reads()
    views = [view for trace in rebuild_traces(spans, reads=reads) for view in trace.plain or []]
    models = [inv for trace in rebuild_traces(spans, reads=reads) for inv in trace.invocations]
    assert views and len(views) == len(models)
    exporter = InMemoryInvocationExporter()
    plain = [PlainRequest([view], {"tool_call_count_v1": {"threshold": 1.0}}) for view in views]
    exporter.export_rebuilt(plain)
    shipped = exporter.get_finished_requests()
    assert all(type(r) is EvaluationRequest for r in shipped)
    built = [
        EvaluationRequest(
            invocations=[model], criteria={"tool_call_count_v1": {"threshold": 1.0}}, created_at=p.created_at
        )
        for model, p in zip(models, plain, strict=True)
    ]
    assert [r.to_wire() for r in shipped] == [r.to_wire() for r in built]
    assert [EvaluationRequest.model_validate_json(r.to_wire()) for r in shipped] == built
