"""The SDK logs adapter (:mod:`otel_eval.emit._sdk_logs`) pinned to the SDK: a record it hands to an SDK logger
ready-made is exported exactly as the SDK exports the same API record given to ``Logger.emit``, limits from the
environment included; and with no provider it follows the global one once that is set."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from opentelemetry._logs import LogRecord, SeverityNumber
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs._internal import LogRecordDroppedAttributesWarning
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    InMemoryLogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource

from otel_eval.emit._context import invocation, invocation_context
from otel_eval.emit._sdk_logs import LogRecordWriter, prepared_log_record

REPO = Path(__file__).resolve().parents[2]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"


def _api_record(**extra: Any) -> LogRecord:
    return LogRecord(
        timestamp=1_700_000_000_123_456_789,
        observed_timestamp=1_700_000_000_200_000_000,
        context=invocation_context(TRACE_ID, SPAN_ID),
        severity_number=SeverityNumber.WARN,
        severity_text="WARN",
        attributes={
            "gen_ai.evaluation.name": "safety_v1",
            "score": 0.5,
            "explanation": "x" * 40,
            "flag": True,
            **extra,
        },
        event_name="gen_ai.evaluation.result",
    )


def _exported(emit_through_writer: bool, **extra: Any) -> ReadableLogRecord:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": "agent"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    if emit_through_writer:
        LogRecordWriter("otel_eval", "1.2.3", provider).emit(_api_record(**extra))
    else:
        provider.get_logger("otel_eval", "1.2.3").emit(_api_record(**extra))
    (exported,) = exporter.get_finished_logs()
    return exported


def _fields(exported: ReadableLogRecord) -> dict[str, object]:
    log = exported.log_record
    return {
        "timestamp": log.timestamp,
        "observed_timestamp": log.observed_timestamp,
        "trace": (log.trace_id, log.span_id, log.trace_flags),
        "severity": (log.severity_number, log.severity_text),
        "body": log.body,
        "attributes": dict(log.attributes or {}),
        "attributes_type": type(log.attributes).__name__,
        "dropped": exported.dropped_attributes,
        "event_name": log.event_name,
        "resource": exported.resource.attributes,
        "scope": exported.instrumentation_scope,
        "limits": repr(exported.limits),
    }


def test_a_record_handed_over_ready_made_is_exported_as_the_sdk_makes_it_from_the_api_record() -> None:
    through_writer, through_api = _fields(_exported(True)), _fields(_exported(False))
    assert through_writer == through_api
    assert through_writer["trace"] == (int(TRACE_ID, 16), int(SPAN_ID, 16), 1)


def test_the_environment_limits_apply_as_the_sdk_applies_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT", "8")
    through_writer, through_api = _fields(_exported(True)), _fields(_exported(False))
    assert through_writer == through_api
    assert through_writer["attributes"]["explanation"] == "x" * 8  # type: ignore[index]


def test_attributes_the_sdk_would_clean_are_cleaned_as_the_sdk_cleans_them() -> None:
    # A sequence, a mapping and a value of no attribute type: not handed over as they are, but through the SDK.
    extra = {"turns": (1, 2), "nested": {"a": "b"}, "odd": object()}
    through_writer, through_api = _fields(_exported(True, **extra)), _fields(_exported(False, **extra))
    assert through_writer == through_api
    assert through_writer["attributes"]["turns"] == (1, 2)  # type: ignore[index]
    assert through_writer["attributes"]["nested"] == {"a": "b"}  # type: ignore[index]


def test_as_many_attributes_as_the_count_limit_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT", "3")
    with pytest.warns(LogRecordDroppedAttributesWarning):  # the SDK's, both ways
        through_writer, through_api = _fields(_exported(True)), _fields(_exported(False))
    assert through_writer == through_api
    assert len(through_writer["attributes"]) == 3 and through_writer["dropped"] == 1  # type: ignore[arg-type]


def _prepared_record(**extra: Any) -> LogRecord:
    found = invocation(TRACE_ID, SPAN_ID)
    assert found is not None
    api = _api_record(**extra)
    assert api.attributes is not None and api.timestamp is not None and api.severity_number is not None
    prepared = prepared_log_record(
        timestamp=api.timestamp,
        context=found[0],
        span_context=found[1],
        severity_number=api.severity_number,
        attributes=dict(api.attributes),
        event_name="gen_ai.evaluation.result",
    )
    prepared.observed_timestamp = api.observed_timestamp  # the one value taken from the clock
    return prepared


def _batch_exported(record: LogRecord) -> ReadableLogRecord:
    """``record`` emitted through the SDK's batch processor, which copies each record it queues."""
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": "agent"}))
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    provider.get_logger("otel_eval", "1.2.3").emit(record)
    provider.force_flush()
    (exported,) = exporter.get_finished_logs()
    provider.shutdown()
    return exported


def test_a_prepared_record_is_the_api_record_and_is_exported_as_it_through_the_batch_processor() -> None:
    prepared, api = _prepared_record(), _api_record()
    assert isinstance(prepared, LogRecord)
    assert vars(prepared) == vars(api)  # every field of this API version, at the same value
    assert _fields(_batch_exported(_prepared_record())) == _fields(_batch_exported(_api_record()))


def test_a_prepared_record_copies_itself_as_the_copy_module_copies_the_api_record() -> None:
    prepared = _prepared_record()
    copied = copy.copy(prepared)
    assert copied is not prepared and type(copied) is type(prepared)
    assert vars(copied) == vars(copy.copy(_api_record())) == vars(prepared)
    copied.context = Context()  # what the batch processor does to its copy: the original keeps its own
    assert prepared.context is invocation_context(TRACE_ID, SPAN_ID)


SCRIPT = textwrap.dedent(
    """
    import json
    from opentelemetry._logs import LogRecord, set_logger_provider
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from otel_eval.emit._sdk_logs import LogRecordWriter

    writer = LogRecordWriter("otel_eval", "1.2.3")  # before the agent sets its global provider
    writer.emit(LogRecord(event_name="before", attributes={"n": 1}))
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    set_logger_provider(provider)
    writer.emit(LogRecord(event_name="after", attributes={"n": 2}))
    print(json.dumps([
        [r.log_record.event_name, dict(r.log_record.attributes), r.instrumentation_scope.name, r.limits is not None]
        for r in exporter.get_finished_logs()
    ]))
    """
)


@pytest.mark.integration  # global providers are set once per process: a fresh one
def test_without_a_provider_records_go_to_the_global_one_once_it_is_set() -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environ["PYTHONPATH"] = str(REPO)
    process = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, env=environ, cwd=REPO
    )
    assert process.returncode == 0, process.stderr
    assert json.loads(process.stdout.splitlines()[-1]) == [["after", {"n": 2}, "otel_eval", True]]
