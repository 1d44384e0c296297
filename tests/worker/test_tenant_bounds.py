"""Tenancy's bounds and keys, without a broker: the tenant of a record (header, resource attribute), traces and session
windows keyed by (tenant, id), each tenant's share of open traces and open sessions, and late spans."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource as Resource_
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import ValidationError

from otel_eval import semconv
from otel_eval.evaluation.sessions import SessionLimits, SessionWindows
from otel_eval.traces import Span, spans_from_readable
from otel_eval.worker import settings as settings_module
from otel_eval.worker._tenancy import MAX_TENANT_CHARS, Tenancy
from otel_eval.worker.collector_path import TraceAssembler, parse_otlp_logs_by_resource, parse_otlp_spans
from otel_eval.worker.settings import WorkerSettings, in_container
from tests.transport._requests import traced_invocation
from tests.worker._collector import agent_spans

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
TRACE_HEX = format(TRACE_ID, "032x")


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Message:
    """What the worker reads of a Kafka record here: its headers."""

    def __init__(self, headers: list[tuple[str, bytes]]) -> None:
        self.headers = headers


def _spans_of(tenant: str, names: tuple[str, ...]) -> list[ReadableSpan]:
    """Real SDK spans of a provider whose resource names ``tenant``, all in trace :data:`TRACE_ID`."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"tenant.id": tenant, "service.name": f"agent-{tenant}"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    parent = trace.set_span_in_context(
        trace.NonRecordingSpan(trace.SpanContext(TRACE_ID, 0x1111, is_remote=True, trace_flags=trace.TraceFlags(1)))
    )
    for name in names:
        with provider.get_tracer("agent").start_as_current_span(name, context=parent):
            pass
    provider.shutdown()
    return list(exporter.get_finished_spans())


def test_the_tenant_comes_from_the_header_alone_when_one_is_configured() -> None:
    by_header = Tenancy(header="x-tenant", attribute="tenant.id")
    assert by_header.attribute is None  # the header decides: the content is never consulted
    assert by_header.of_message(_Message([("x-tenant", b"acme")])) == "acme"
    assert by_header.of_message(_Message([])) == ""  # no header: the default tenant
    assert by_header.of_request(_Message([("other", b"x"), ("x-tenant", b"globex")])) == "globex"
    long = by_header.of_message(_Message([("x-tenant", b"t" * (MAX_TENANT_CHARS + 1))]))
    assert long is not None and long.startswith("sha256:") and len(long) == len("sha256:") + 64
    by_attribute = Tenancy(attribute="tenant.id")
    assert by_attribute.of_message(_Message([("x-tenant", b"acme")])) is None  # each span's resource says
    assert by_attribute.of_request(_Message([])) == ""  # requests carry no resource
    assert by_attribute.of_resource({"tenant.id": "acme"}) == "acme"
    assert Tenancy().of_message(_Message([("x-tenant", b"acme")])) == ""  # no tenancy: one tenant


def test_spans_of_two_tenants_in_one_trace_id_are_two_traces() -> None:
    tenancy = Tenancy(attribute="tenant.id")
    message = encode_spans(_spans_of("a", ("a-root",)) + _spans_of("b", ("b-root", "b-extra"))).SerializeToString()
    assembler = TraceAssembler(idle_timeout=1.0)
    assembler.add(
        0, 0, parse_otlp_spans(message, "t/0@0"), tenant=None, tenant_of=lambda s: tenancy.of_resource(s.resource)
    )
    traces = {t.tenant: t for t in assembler.ready(everything=True)}
    assert set(traces) == {"a", "b"}
    assert {t.trace_id for t in traces.values()} == {TRACE_HEX}
    assert [s.name for s in traces["a"].spans] == ["a-root"]
    assert sorted(s.name for s in traces["b"].spans) == ["b-extra", "b-root"]


def test_content_log_records_join_their_own_tenants_trace() -> None:
    def resource_logs(tenant: str, body: str) -> ResourceLogs:
        record = LogRecord(
            event_name=semconv.GEN_AI_OPERATION_DETAILS_EVENT,
            trace_id=TRACE_ID.to_bytes(16, "big"),
            span_id=(0x2222).to_bytes(8, "big"),
            body=AnyValue(string_value=body),
        )
        resource = Resource_(attributes=[KeyValue(key="tenant.id", value=AnyValue(string_value=tenant))])
        return ResourceLogs(resource=resource, scope_logs=[ScopeLogs(log_records=[record])])

    message = ExportLogsServiceRequest(resource_logs=[resource_logs("a", "mine"), resource_logs("b", "forged")])
    groups = parse_otlp_logs_by_resource(
        message.SerializeToString(), "l/0@0", Tenancy(attribute="tenant.id").of_resource
    )
    assert [(tenant, [r.event.body for r in records]) for tenant, records in groups] == [
        ("a", ["mine"]),
        ("b", ["forged"]),
    ]
    assembler = TraceAssembler(idle_timeout=1.0)
    for tenant, records in groups:
        assembler.add_logs(0, 0, records, tenant=tenant)
    bodies = {t.tenant: [r.event.body for r in t.log_records] for t in assembler.ready(everything=True)}
    assert bodies == {"a": ["mine"], "b": ["forged"]}


def test_a_tenant_at_its_open_trace_bound_is_refused_and_the_others_are_not() -> None:
    clock = FakeClock()
    assembler = TraceAssembler(idle_timeout=5.0, max_open_traces=100, max_open_traces_per_tenant=2, clock=clock)
    spans = spans_from_readable(agent_spans(runs=4))
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    first, second, third, fourth = by_trace
    for trace_id in (first, second, third):
        assembler.add(0, 0, by_trace[trace_id], tenant="flood")
    assert assembler.open_traces("flood") == 2
    assert assembler.take_span_drops() == Counter({semconv.DROP_TENANT_MAX_OPEN_TRACES: len(by_trace[third])})
    assembler.add(0, 1, by_trace[third], tenant="quiet")
    assembler.add(0, 1, by_trace[fourth], tenant="quiet")
    assert assembler.open_traces("quiet") == 2 and assembler.take_span_drops() == Counter()
    clock.now = 10.0
    assert len(assembler.ready()) == 4
    # The refused trace stays refused (it would be incomplete); a new trace of the tenant is welcome again.
    assembler.add(0, 2, by_trace[third], tenant="flood")
    assert assembler.take_span_drops() == Counter({semconv.DROP_TENANT_MAX_OPEN_TRACES: len(by_trace[third])})
    assembler.add(0, 2, by_trace[fourth], tenant="flood")
    assert assembler.open_traces("flood") == 1


def test_late_spans_never_reopen_a_trace_nor_join_another_tenants() -> None:
    clock = FakeClock()
    assembler = TraceAssembler(idle_timeout=1.0, clock=clock)
    spans = spans_from_readable(agent_spans(runs=1))
    root = next(s for s in spans if s.parent_span_id is None)
    assembler.add(0, 0, spans, tenant="a")
    clock.now = 2.0
    (handed_on,) = assembler.ready()
    assert handed_on.key == ("a", root.trace_id)
    assembler.add(0, 1, [root], tenant="a")  # a (forged) span of the trace handed on
    assert len(assembler) == 0 and assembler.take_span_drops() == Counter({semconv.DROP_LATE: 1})
    assembler.add(0, 1, [root], tenant="b")  # another tenant's trace of the same id: its own
    assert len(assembler) == 1 and assembler.open_traces("b") == 1 and assembler.take_span_drops() == Counter()


def test_session_windows_are_per_tenant_and_each_tenant_has_its_share() -> None:
    windows = SessionWindows(SessionLimits(max_turns=2, max_sessions=10, max_sessions_per_tenant=2))
    turn = traced_invocation(1).model_copy(update={"session_id": "s1"})
    other = traced_invocation(2).model_copy(update={"session_id": "s1"})
    assert windows.add(turn, size_bytes=10, now=0.0, tenant="a") is None
    assert windows.add(other, size_bytes=10, now=0.0, tenant="b") is None  # the same id: b's own session
    assert ("a", "s1") in windows and ("b", "s1") in windows and len(windows) == 2
    for n in (2, 3):
        windows.add(
            traced_invocation(n).model_copy(update={"session_id": f"flood-{n}"}), size_bytes=1, now=0.0, tenant="b"
        )
    assert windows.open_sessions("b") == 2
    assert windows.dropped == Counter({semconv.DROP_TENANT_MAX_OPEN_SESSIONS: 1})
    last = traced_invocation(4).model_copy(update={"session_id": "s1"})
    full = windows.add(last, size_bytes=1, now=1.0, tenant="a")
    assert full is not None and full.key == ("a", "s1")
    assert [t.span_id for t in full.turns] == [turn.span_id, last.span_id]  # none of b's turns
    assert ("b", "s1") in windows and windows.open_sessions("a") == 0


def test_the_tenancy_settings_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EVAL_TENANT_HEADER", "x-tenant")
    monkeypatch.setenv("OTEL_EVAL_MAX_OPEN_TRACES_PER_TENANT", "64")
    monkeypatch.setenv("OTEL_EVAL_MAX_OPEN_SESSIONS_PER_TENANT", "32")
    settings = WorkerSettings()
    assert settings.tenant_header == "x-tenant" and settings.max_open_traces_per_tenant == 64
    assert settings.session_limits.max_sessions_per_tenant == 32
    for name in (
        "OTEL_EVAL_TENANT_HEADER",
        "OTEL_EVAL_MAX_OPEN_TRACES_PER_TENANT",
        "OTEL_EVAL_MAX_OPEN_SESSIONS_PER_TENANT",
    ):
        monkeypatch.delenv(name)
    defaults = WorkerSettings()  # one tenant, only the global bounds: the behaviour without tenancy
    assert defaults.tenant_header is None and defaults.tenant_attribute is None
    assert defaults.max_open_traces_per_tenant is None and defaults.session_limits.max_sessions_per_tenant is None
    monkeypatch.setenv("OTEL_EVAL_MAX_OPEN_SESSIONS_PER_TENANT", "0")
    with pytest.raises(ValidationError, match="max_open_sessions_per_tenant"):
        WorkerSettings()


def test_the_endpoints_listen_on_loopback_outside_a_container(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OTEL_EVAL_WORKER_METRICS_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert WorkerSettings(worker_metrics_host="10.1.2.3").metrics_host == "10.1.2.3"
    assert in_container({"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, markers=())
    marker = tmp_path / ".dockerenv"
    assert not in_container({}, markers=(str(marker),))
    marker.touch()
    assert in_container({}, markers=(str(marker),))
    monkeypatch.setattr(settings_module, "CONTAINER_MARKERS", (str(tmp_path / "absent"),))
    assert WorkerSettings().metrics_host == "127.0.0.1"
    monkeypatch.setattr(settings_module, "CONTAINER_MARKERS", (str(marker),))
    assert WorkerSettings().metrics_host == "0.0.0.0"
