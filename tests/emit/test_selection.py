"""``OTEL_EVAL_EMIT`` / ``ProcessorSettings.emit``: each selection emits exactly the signals it names, through the
embedded processor (in-thread and in the evaluation process), read back from the real SDK's in-memory exporters; what
is not selected is not computed (no span started, no attribute dict built); the sinks get every record regardless."""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval import environment_variables as env
from otel_eval.demo import AGENT_NAME, SCENARIOS, TravelAgent
from otel_eval.emit import enrichment, events, metrics, spans
from otel_eval.emit.selection import emit_setting, emit_signals, emit_text
from otel_eval.errors import ConfigurationError
from otel_eval.model.messages import EvaluationRecord
from otel_eval.processor._settings import processor_options
from tests.processor.telemetry import Telemetry
from tests.worker._harness import OtlpSink, child_otlp_sink

ROOT = f"invoke_agent {AGENT_NAME}"
ALL = frozenset(env.EMIT_SIGNALS)
SELECTIONS = [
    "events,spans,metrics,attributes",
    "events,metrics",
    "spans",
    "events",
    "metrics",
    "attributes",
    "none",
]


@pytest.fixture(autouse=True)
def _no_default_judge(clean_genai_env: None) -> None:
    """No judge credentials: the default criteria are the efficiency metrics (no judge, scored inline)."""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", ALL),
        ("  ", ALL),
        ((), set()),
        (frozenset(), set()),
        ("events,metrics", {"events", "metrics"}),
        (" Events , METRICS ,events", {"events", "metrics"}),
        (["spans"], {"spans"}),
        (frozenset({"attributes", "spans"}), {"attributes", "spans"}),
        ("none", set()),
        ("NONE", set()),
        ("events,spans,metrics,attributes", ALL),
    ],
)
def test_the_selection_is_read_from_names(value: Any, expected: set[str]) -> None:
    assert emit_signals(value) == expected
    assert emit_signals(emit_text(emit_signals(value))) == expected  # spelled back, it reads the same


@pytest.mark.parametrize("value", ["events,traces", "logs", "none,events", "events;metrics", ["spans", "span"]])
def test_an_unknown_signal_is_refused_naming_the_setting_and_the_value(value: Any) -> None:
    with pytest.raises(ConfigurationError) as raised:
        emit_setting(value, setting=env.OTEL_EVAL_EMIT)
    message = str(raised.value)
    shown = value if isinstance(value, str) else ",".join(value)
    assert message.startswith(f"{env.OTEL_EVAL_EMIT}={shown!r}: unknown signal")
    assert "expected any of events, spans, metrics, attributes" in message
    with pytest.raises(ValueError, match=r"^emit="):
        ProcessorSettings(emit=value)


def test_a_selection_survives_deriving_settings_and_from_env_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("none", "events,metrics"):
        monkeypatch.setenv(env.OTEL_EVAL_EMIT, value)
        settings = ProcessorSettings.from_env()
        assert dataclasses.replace(settings, sample_rate=0.5).emit == settings.emit == emit_signals(value)
        options = processor_options(None, {"sample_rate": 0.5})  # what from_env(sample_rate=0.5) builds
        assert options["settings"].emit == emit_signals(value)


def test_a_bad_emit_variable_stops_the_processor_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env.OTEL_EVAL_EMIT, "events,traces")
    with pytest.raises(ConfigurationError, match=r"^OTEL_EVAL_EMIT='events,traces': unknown signal 'traces'"):
        EvaluationSpanProcessor.from_env()
    monkeypatch.setenv(env.OTEL_EVAL_EMIT, "metrics, events")
    assert ProcessorSettings.from_env().emit == {"events", "metrics"}
    assert ProcessorSettings().emit == ALL  # the default: all four, as before the option


class _Started(SimpleSpanProcessor):
    """The user's exporting processor, also counting every span started (ended or not)."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        super().__init__(exporter)
        self.started: Counter[str] = Counter()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.started[span.name] += 1
        super().on_start(span, parent_context)


def _run_agent(emit: str, telemetry: Telemetry, **options: Any) -> tuple[_Started, list[EvaluationRecord]]:
    """The travel agent with the processor (in-thread) wrapping the user's exporting processor (``enrich=``); the
    evaluation spans go through the same provider, so the user's processor sees every span started."""
    exported = _Started(telemetry.spans)
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(
        settings=ProcessorSettings(emit=emit, **options),
        enrich=exported,
        sinks=[records.extend],
        **telemetry.providers(),
    )
    telemetry.tracer_provider.add_span_processor(processor)  # the only processor: it feeds the user's one
    agent = TravelAgent(telemetry.tracer_provider)
    for scenario in SCENARIOS[:2]:
        agent.run(scenario)
    assert processor.force_flush(30_000)
    return exported, records


def _roots(telemetry: Telemetry) -> list[ReadableSpan]:
    return [span for span in telemetry.finished_spans() if span.name == ROOT]


def _score_attributes(span: ReadableSpan) -> set[str]:
    return {key for key in span.attributes or {} if enrichment.is_enrichment_attribute(key)}


@pytest.mark.parametrize("emit", SELECTIONS)
def test_each_selection_emits_exactly_its_signals(emit: str) -> None:
    wanted = emit_signals(emit)
    telemetry = Telemetry()
    started, records = _run_agent(emit, telemetry)
    try:
        assert len({(r.trace_id, r.span_id) for r in records}) == 2  # both invocations evaluated, every time
        metric_names = {r.metric_name for r in records}
        assert {"tool_call_count_v1", "inference_call_count_v1"} <= metric_names

        evaluation_spans = telemetry.evaluation_spans()
        result_events = telemetry.result_events()
        histogram = telemetry.metric_points(semconv.METRIC_EVALUATION_SCORE)
        counter = telemetry.metric_points(semconv.METRIC_EVALUATION_RESULTS)
        roots = _roots(telemetry)
        assert len(roots) == 2  # the user's processor gets the agent's roots whatever is selected

        if "spans" in wanted:
            assert sorted(s.attributes[semconv.GEN_AI_EVALUATION_NAME] for s in evaluation_spans) == sorted(
                r.metric_name for r in records
            )
        else:
            assert evaluation_spans == []
            assert not any(name.startswith("evaluate ") for name in started.started)  # none was even started
        if "events" in wanted:
            assert sorted(e.log_record.attributes[semconv.OTEL_EVAL_RESULT_ID] for e in result_events) == sorted(
                r.result_id for r in records
            )
        else:
            assert result_events == []
        if "metrics" in wanted:
            assert sum(p.value for p in counter) == len(records)
            assert sum(p.count for p in histogram) == sum(r.score is not None for r in records)
        else:
            assert counter == histogram == []
        if "attributes" in wanted:
            for root in roots:
                assert _score_attributes(root) >= {
                    enrichment.score_attribute("tool_call_count_v1"),
                    enrichment.label_attribute("tool_call_count_v1"),
                }
        else:
            assert all(_score_attributes(root) == set() for root in roots)
    finally:
        telemetry.shutdown()


@pytest.fixture
def attribute_builds(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """How often each emitter's attribute builder runs (the real functions, counted)."""
    calls: Counter[str] = Counter()

    def counted(module: Any, name: str) -> None:
        real: Callable[..., Any] = getattr(module, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[f"{module.__name__.rsplit('.', 1)[-1]}.{name}"] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    counted(spans, "record_attributes")
    counted(events, "record_attributes")
    counted(metrics, "metric_attributes")
    counted(enrichment, "enrichment_attributes")
    yield calls


def test_what_is_not_selected_is_not_computed(attribute_builds: Counter[str]) -> None:
    telemetry = Telemetry()
    try:
        started, records = _run_agent("none", telemetry)
        assert records  # the sinks got every record
        assert attribute_builds == Counter()  # no span, event, metric or root attribute dict was built
        assert not any(name.startswith(("evaluate ", "judge ")) for name in started.started)
    finally:
        telemetry.shutdown()

    telemetry = Telemetry()
    try:
        _, records = _run_agent("events,metrics", telemetry)
        # an event's attributes per record; the score metrics' once per label set (cached), so at most per record
        assert set(attribute_builds) == {"events.record_attributes", "metrics.metric_attributes"}
        assert attribute_builds["events.record_attributes"] == len(records)
        assert 0 < attribute_builds["metrics.metric_attributes"] <= len(records)
    finally:
        telemetry.shutdown()


@pytest.fixture
def sink(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpSink]:
    """A loopback OTLP receiver, and the evaluation process's exporters pointed at it by the SDK's own variables."""
    with child_otlp_sink(monkeypatch) as receiver:
        yield receiver


@pytest.mark.integration
def test_the_evaluation_process_emits_only_the_selected_signals(sink: OtlpSink) -> None:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(
        settings=ProcessorSettings(isolation=env.ISOLATION_PROCESS, emit="events"),
        enrich=SimpleSpanProcessor(exported),
        sinks=[records.extend],
    )
    provider.add_span_processor(processor)
    agent = TravelAgent(provider)
    for scenario in SCENARIOS[:2]:
        agent.run(scenario)
    assert processor.force_flush(60_000)
    provider.shutdown()

    assert len({(r.trace_id, r.span_id) for r in records}) == 2
    assert sorted(e.result_id for e in sink.events()) == sorted(r.result_id for r in records)  # events: selected
    assert sink.evaluation_span_count() == 0  # spans: not selected (the child's trace exporter got none)
    roots = [span for span in exported.get_finished_spans() if span.name == ROOT]
    assert len(roots) == 2 and all(_score_attributes(root) == set() for root in roots)  # attributes: not selected


def test_selecting_no_signal_without_a_sink_says_the_scores_go_nowhere_and_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="otel_eval.evaluation.embedded"):
        processor = EvaluationSpanProcessor(settings=ProcessorSettings(emit="none"), **Telemetry().providers())
    processor.shutdown()
    (warning,) = [r.getMessage() for r in caplog.records if "the scores go nowhere" in r.getMessage()]
    assert "OTEL_EVAL_EMIT (ProcessorSettings.emit) selects none of events, spans and metrics" in warning
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="otel_eval.evaluation.embedded"):
        processor = EvaluationSpanProcessor(settings=ProcessorSettings(emit="none"), sinks=[print])
    processor.shutdown()
    assert not [r for r in caplog.records if "the scores go nowhere" in r.getMessage()]  # the sink receives them
