"""force_flush and shutdown contracts, environment configuration, fork safety and garbage collection."""

from __future__ import annotations

import dataclasses
import gc
import json
import multiprocessing
import os
import time
import weakref
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval import environment_variables as env
from otel_eval.demo import SCENARIOS, TravelAgent, golden_eval_set
from otel_eval.emit.enrichment import RootSpanEnricher
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.errors import ConfigurationError
from otel_eval.evaluation.embedded_worker import EmbeddedWorker
from otel_eval.evaluation.sessions import SessionLimits
from otel_eval.model.messages import EvaluationRecord
from otel_eval.transport import InMemoryInvocationExporter
from tests.processor.telemetry import Telemetry


def test_shutdown_without_flush_evaluates_every_finished_invocation_and_is_idempotent(telemetry: Telemetry) -> None:
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(sinks=[records.extend], **telemetry.providers())
    telemetry.tracer_provider.add_span_processor(processor)
    telemetry.add_exporting_processor()
    agent = TravelAgent(telemetry.tracer_provider)
    for scenario in SCENARIOS:
        agent.run(scenario)
    telemetry.tracer_provider.shutdown()  # the provider shuts the processor down first: it drains
    assert len({r.span_id for r in records}) == len(SCENARIOS)
    assert len(telemetry.evaluation_spans()) == len(records)  # emitted before the exporting processor stopped
    processor.shutdown()
    processor.shutdown()
    assert processor.force_flush() is False
    assert processor.stats()["invocations.evaluated"] == len(SCENARIOS)


def test_force_flush_with_nothing_to_do_returns_true_and_a_zero_deadline_returns_promptly() -> None:
    provider = TracerProvider()
    processor = EvaluationSpanProcessor(exporter=InMemoryInvocationExporter())
    provider.add_span_processor(processor)
    assert processor.force_flush(5_000) is True
    started = time.monotonic()
    processor.force_flush(0)
    assert time.monotonic() - started < 0.5  # never blocks past its deadline
    provider.shutdown()


def test_from_env_reads_every_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    eval_set_path = tmp_path / "golden.evalset.json"
    eval_set_path.write_text(golden_eval_set().model_dump_json())
    criteria_path = tmp_path / "config.json"
    criteria_path.write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 0.5}}))
    environ = {
        env.OTEL_EVAL_CRITERIA: str(criteria_path),
        env.OTEL_EVAL_EVAL_SET: str(eval_set_path),
        env.OTEL_EVAL_SAMPLE_RATE: "0.25",
        env.OTEL_EVAL_AGENT_NAMES: "travel_assistant, other ",
        env.OTEL_EVAL_MAX_OPEN_TRACES: "7",
        env.OTEL_EVAL_MAX_SPANS_PER_TRACE: " ",  # blank: the default
    }
    exporter = InMemoryInvocationExporter()
    processor = EvaluationSpanProcessor.from_env(environ, exporter=exporter)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    settings = ProcessorSettings.from_env(environ)
    assert (settings.sample_rate, settings.agent_names) == (0.25, ("travel_assistant", "other"))
    assert (settings.max_open_traces, settings.max_spans_per_trace, settings.trace_idle_timeout) == (7, 2048, 30.0)
    TravelAgent(provider).run(SCENARIOS[0])
    processor.force_flush(5_000)
    for request in exporter.get_finished_requests():
        assert request.criteria == {"tool_trajectory_avg_score": {"threshold": 0.5}}
        assert request.eval_case is not None
    provider.shutdown()

    embedded = EvaluationSpanProcessor.from_env({env.OTEL_EVAL_CRITERIA: '{"response_match_score": 0.7}'})
    assert EmbeddedWorker.__name__ in repr(embedded)
    embedded.shutdown()


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (env.OTEL_EVAL_CRITERIA, "{not json", "OTEL_EVAL_CRITERIA: invalid JSON"),
        (env.OTEL_EVAL_CRITERIA, "/no/such/criteria.json", "cannot read"),
        (env.OTEL_EVAL_CRITERIA, '{"criteria": {"no_such_metric": 1}}', "no_such_metric"),
        (
            env.OTEL_EVAL_CRITERIA,
            '{"critera": {"response_match_score": 1}}',
            r"^OTEL_EVAL_CRITERIA: unknown key 'critera' \(did you mean 'criteria'\?\); an eval config has criteria,",
        ),
        (
            env.OTEL_EVAL_CRITERIA,
            '{"response_match_score": {"foo": 1}}',  # one line per problem, not pydantic's dump
            r"^OTEL_EVAL_CRITERIA: invalid criteria: criteria\.response_match_score: Input should be a valid number; "
            r"criteria\.response_match_score\.threshold: Field required$",
        ),
        (env.OTEL_EVAL_EVAL_SET, "/no/such/set.json", "OTEL_EVAL_EVAL_SET"),
        (env.OTEL_EVAL_MAX_SPANS_PER_TRACE, "not-a-number", r"OTEL_EVAL_MAX_SPANS_PER_TRACE='not-a-number': expected"),
        (
            env.OTEL_EVAL_TRACE_IDLE_TIMEOUT,
            "-3",
            r"OTEL_EVAL_TRACE_IDLE_TIMEOUT='-3': expected seconds \(a number > 0\)",
        ),
        (env.OTEL_EVAL_SAMPLE_RATE, "1.5", r"OTEL_EVAL_SAMPLE_RATE='1.5': expected a number in \[0, 1\]"),
        (env.OTEL_EVAL_QUEUE_SIZE, "0", r"OTEL_EVAL_QUEUE_SIZE='0': expected an integer >= 1"),
    ],
)
def test_from_env_rejects_a_bad_value_at_start_up_naming_the_variable(variable: str, value: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        EvaluationSpanProcessor.from_env({variable: value}, exporter=InMemoryInvocationExporter())


def _child(
    processor: EvaluationSpanProcessor, provider: TracerProvider, exporter: InMemoryInvocationExporter, conn: Any
) -> None:
    TravelAgent(provider).run(SCENARIOS[1])
    flushed = processor.force_flush(10_000)
    conn.send((flushed, len(exporter.get_finished_requests()), os.getpid()))
    conn.close()


@pytest.mark.integration  # forks a child process
@pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="fork is POSIX-only")
def test_a_forked_child_gets_a_working_processor_of_its_own() -> None:
    exporter = InMemoryInvocationExporter()
    processor = EvaluationSpanProcessor(exporter=exporter)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    TravelAgent(provider).run(SCENARIOS[0])
    assert processor.force_flush(10_000)
    context = multiprocessing.get_context("fork")
    parent_conn, child_conn = context.Pipe()
    child = context.Process(target=_child, args=(processor, provider, exporter, child_conn))
    child.start()
    assert parent_conn.poll(30)
    flushed, requests_in_child, child_pid = parent_conn.recv()
    child.join(30)
    assert child.exitcode == 0 and child_pid != os.getpid()
    assert flushed is True
    assert requests_in_child == 2  # the parent's request (copied memory) plus the child's own
    assert len(exporter.get_finished_requests()) == 1  # the parent is unaffected
    provider.shutdown()


def _count_in_child(pipeline: PipelineMetrics, enricher: RootSpanEnricher, conn: Any) -> None:
    pipeline.sampled(1)
    enricher.release_expired()
    conn.send(pipeline.snapshot().get("invocations.sampled"))
    conn.close()


@pytest.mark.integration  # forks a child process
@pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="fork is POSIX-only")
def test_a_fork_while_the_pipeline_and_enricher_locks_are_held_leaves_them_usable_in_the_child() -> None:
    pipeline = PipelineMetrics()
    enricher = RootSpanEnricher(SimpleSpanProcessor(InMemorySpanExporter()), wait_seconds=5.0)
    context = multiprocessing.get_context("fork")
    parent_conn, child_conn = context.Pipe()
    with pipeline._lock, enricher._lock:  # as if another thread held them at the fork
        child = context.Process(target=_count_in_child, args=(pipeline, enricher, child_conn))
        child.start()
    assert parent_conn.poll(30)  # a lock copied held would leave the child waiting forever
    assert parent_conn.recv() == 1
    child.join(30)
    assert child.exitcode == 0
    enricher.shutdown(1000)


def test_a_shut_down_processor_can_be_garbage_collected() -> None:
    processor = EvaluationSpanProcessor(exporter=InMemoryInvocationExporter())
    processor.shutdown()
    reference = weakref.ref(processor)
    del processor
    gc.collect()
    assert reference() is None


def test_pipeline_counters_reach_the_meter_provider(telemetry: Telemetry) -> None:
    processor = EvaluationSpanProcessor(**telemetry.providers())
    telemetry.tracer_provider.add_span_processor(processor)
    TravelAgent(telemetry.tracer_provider).run(SCENARIOS[0])
    assert processor.force_flush(10_000)
    assert processor.force_flush(10_000)  # also drains the evaluation spans it emitted itself (never evaluated)
    sampled = telemetry.metric_points(semconv.METRIC_INVOCATIONS_SAMPLED)
    evaluated = telemetry.metric_points(semconv.METRIC_INVOCATIONS_EVALUATED)
    assert sum(p.value for p in sampled) == 1 and sum(p.value for p in evaluated) == 1
    queues = {
        dict(p.attributes)[semconv.OTEL_EVAL_QUEUE]: p.value for p in telemetry.metric_points(semconv.METRIC_QUEUE_SIZE)
    }
    assert queues == {"spans": 0, "requests": 0}
    processor.shutdown()


def test_embedded_objects_next_to_an_exporter_or_unknown_keywords_are_refused_by_name() -> None:
    with pytest.raises(TypeError, match=r"logger_provider, sinks: objects of the embedded worker.*InMemory"):
        EvaluationSpanProcessor(exporter=InMemoryInvocationExporter(), sinks=[print], logger_provider=LoggerProvider())
    with pytest.raises(TypeError, match=r"unexpected keyword argument.*max_queue"):
        EvaluationSpanProcessor(max_queue=3)  # type: ignore[call-arg]
    # A setting given as a keyword (the form before ProcessorSettings) works, deprecated: test_deprecated_keywords.py


def test_settings_are_checked_when_made_and_derived_with_replace() -> None:
    with pytest.raises(ValueError, match="sample_rate"):
        ProcessorSettings(sample_rate=1.5)
    with pytest.raises(ValueError, match="max_pending_spans"):
        dataclasses.replace(ProcessorSettings(), max_pending_spans=0)
    with pytest.raises(ValueError, match="isolation"):
        ProcessorSettings(isolation="fork")
    with pytest.raises(ValueError, match=r"^max_queue_size must be at least 1, got 0$"):
        ProcessorSettings(max_queue_size=0)
    with pytest.raises(ValueError, match=r"^concurrency must be at least 1, got -1$"):
        dataclasses.replace(ProcessorSettings(), concurrency=-1)
    with pytest.raises(ConfigurationError):
        ProcessorSettings(eval_set="/no/such/set.json")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("sample_rate", "abc", "sample_rate must be a number, got 'abc'"),
        ("sample_rate", True, "sample_rate must be a number, got True"),
        ("trace_idle_timeout", None, "trace_idle_timeout must be a number, got None"),
        ("max_open_traces", "10", "max_open_traces must be an integer, got '10'"),
        ("max_buffer_bytes", 1.5e6, "max_buffer_bytes must be an integer, got 1500000.0"),
        ("concurrency", "a", "concurrency must be an integer, got 'a'"),
        ("sample_priority", "false", "sample_priority must be True or False, got 'false'"),
        ("isolation", 5, "isolation must be a string, got 5"),
        ("emit", 5, "emit must be names (a comma-separated string or strings), got 5"),
        ("agent_names", [1], "agent_names must be names (a comma-separated string or strings), got [1]"),
        ("sessions", "x", "sessions must be a SessionLimits, got 'x'"),
        ("eval_set", 5, "eval_set must be an EvalSet, a string, a Path or None, got 5"),
        ("kafka_bootstrap_servers", 9092, "kafka_bootstrap_servers must be a string or None, got 9092"),
    ],
)
def test_a_value_of_the_wrong_type_is_a_value_error_naming_the_field(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        ProcessorSettings(**{field: value})  # type: ignore[arg-type]
    assert str(caught.value) == message
    with pytest.raises(ValueError, match=r"^max_turns must be an integer, got '3'$"):
        SessionLimits(max_turns="3")  # type: ignore[arg-type]


def test_names_and_numbers_of_the_right_type_are_kept() -> None:
    settings = ProcessorSettings(sample_rate=0, agent_names=(n for n in ("a", "b", "a")), emit=["events"])
    assert (settings.sample_rate, settings.agent_names, settings.emit) == (0, ("a", "b"), frozenset({"events"}))


def test_from_env_puts_plain_overrides_into_the_settings(tmp_path: Path) -> None:
    """``from_env(sample_rate=..., eval_set=path)``: plain values replace the environment's settings (a path is
    loaded), objects are passed on."""
    eval_set_path = tmp_path / "golden.evalset.json"
    eval_set_path.write_text(golden_eval_set().model_dump_json())
    provider = TracerProvider()
    skipped, kept = InMemoryInvocationExporter(), InMemoryInvocationExporter()
    provider.add_span_processor(EvaluationSpanProcessor.from_env({}, exporter=skipped, agent_names=("someone_else",)))
    provider.add_span_processor(EvaluationSpanProcessor.from_env({}, exporter=kept, eval_set=str(eval_set_path)))
    TravelAgent(provider).run(SCENARIOS[0])
    assert provider.force_flush(10_000)
    assert skipped.get_finished_requests() == []
    (request,) = kept.get_finished_requests()
    assert request.eval_case is not None
    provider.shutdown()
