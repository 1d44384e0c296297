"""The evaluation process resolves ``OTEL_*_EXPORTER`` as the SDK's configuration does (``opentelemetry-instrument``),
without its private API: this test pins the two together, so an SDK change shows here first."""

from __future__ import annotations

import importlib.metadata

import pytest
from opentelemetry.sdk._configuration import _get_exporter_names  # the SDK's own resolution, pinned against
from opentelemetry.sdk.resources import Resource

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.errors import ConfigurationError
from otel_eval.processor._process.exporters import SIGNALS, ExportingProviders, exporter_names

CASES = [
    {},
    {"OTEL_TRACES_EXPORTER": "none", "OTEL_LOGS_EXPORTER": " None "},
    {"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "console", "OTEL_LOGS_EXPORTER": "console"},
    {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp", "OTEL_LOGS_EXPORTER": "otlp"},
    {"OTEL_TRACES_EXPORTER": "otlp, console", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
    {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
    {"OTEL_LOGS_EXPORTER": "otlp_proto_http", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
    {"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": " http/protobuf "},
]
_ALL = {
    "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_LOGS_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
}  # fmt: skip


def _set(monkeypatch: pytest.MonkeyPatch, environ: dict[str, str]) -> None:
    for name in _ALL:
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize("environ", CASES)
def test_exporter_names_resolve_as_the_sdk_resolves_them(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str]
) -> None:
    _set(monkeypatch, environ)
    assert exporter_names() == {signal: _get_exporter_names(signal) for signal in SIGNALS}


def test_an_unsupported_otlp_protocol_fails_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    _set(monkeypatch, {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"})
    with pytest.raises(RuntimeError):
        _get_exporter_names("traces")
    with pytest.raises(ConfigurationError, match="OTEL_TRACES_EXPORTER: Unsupported OTLP protocol"):
        exporter_names()


def test_an_exporter_that_is_not_installed_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    _set(monkeypatch, {"OTEL_LOGS_EXPORTER": "no_such_exporter"})
    with pytest.raises(ConfigurationError, match="OTEL_LOGS_EXPORTER: no logs exporter named 'no_such_exporter'"):
        exporter_names()


def test_the_evaluation_processs_exporters_are_found_with_one_read_of_the_installed_packages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each read scans every installed package's metadata (~10 ms with a few hundred): once for all the exporters
    named, not once to check each name and again to load it."""
    _set(monkeypatch, {"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "console"})
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "console")
    reads: list[dict[str, object]] = []
    real = importlib.metadata.entry_points

    def counted(**params: object) -> importlib.metadata.EntryPoints:
        reads.append(params)
        return real(**params)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.metadata, "entry_points", counted)
    providers = ExportingProviders(Resource.create({"service.name": "agent"}))
    try:
        assert providers.exporting and len(reads) == 1
        assert providers.tracer_provider.resource.attributes["service.name"] == "agent"
    finally:
        providers.shutdown()
    _set(monkeypatch, {})
    reads.clear()
    assert exporter_names() == {"traces": [], "logs": [], "metrics": []} and not reads  # nothing named: no read


def test_a_scraped_metric_reader_is_refused_at_start_up_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the evaluation process started a Prometheus reader on the port the agent's process serves, failed
    with ``Address already in use`` at each start, and every invocation was dropped with it."""
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "prometheus")
    with pytest.raises(
        ConfigurationError, match=r"^OTEL_METRICS_EXPORTER=prometheus: the evaluation process"
    ) as raised:
        EvaluationSpanProcessor(settings=ProcessorSettings(isolation="process"), sinks=[lambda records: None])
    assert "isolation='thread'" in str(raised.value) and "otlp" in str(raised.value)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp_proto_http,console")  # pushed: accepted
    EvaluationSpanProcessor(settings=ProcessorSettings(isolation="process"), sinks=[lambda records: None]).shutdown()


@pytest.mark.parametrize("given", ["nothing", "sinks", "enrich"])
def test_the_no_destination_warning_counts_the_sinks_and_the_enriched_roots_given_in_code(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, given: str
) -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    _set(monkeypatch, {})
    monkeypatch.delenv("OTEL_EVAL_SINKS", raising=False)
    monkeypatch.delenv("OTEL_EVAL_CONSOLE", raising=False)
    options: dict[str, object] = {
        "nothing": {},
        "sinks": {"sinks": [lambda records: None]},
        "enrich": {"enrich": SimpleSpanProcessor(InMemorySpanExporter())},
    }[given]
    processor = EvaluationSpanProcessor(settings=ProcessorSettings(isolation="process"), **options)  # type: ignore[arg-type]
    processor.shutdown()
    warned = [r.getMessage() for r in caplog.records if "the scores go nowhere" in r.getMessage()]
    assert len(warned) == (1 if given == "nothing" else 0)
