"""A real google-adk agent (scripted model, real Runner) with the processor on the real global TracerProvider:
every invocation of both ADK telemetry schemas gets its events, evaluation spans and metric points."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor, semconv
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord
from tests.processor.telemetry import Telemetry, hex_id
from tests.reconstruct.adk_agents import SCENARIOS, adk_telemetry, run_turns, span_exporter
from tests.reconstruct.adk_workflows import guardrail_scenario

CASES = {"single_tool": 1, "parallel_tools": 3, "transfer": 2, "no_tool": 0}
"""Scenario -> tool calls of its (single) turn, as ADK counts them (transfer_to_agent included)."""


@pytest.fixture
def global_provider() -> TracerProvider:
    span_exporter()  # installs the session's SDK provider that ADK's proxy tracer uses
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    return provider


@pytest.fixture
def attached(global_provider: TracerProvider, telemetry: Telemetry) -> Iterator[tuple[EvaluationSpanProcessor, list]]:
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(sinks=[records.extend], **telemetry.providers())
    global_provider.add_span_processor(processor)
    telemetry.add_exporting_processor()
    yield processor, records
    processor.shutdown()  # a shut-down processor stays registered but ignores every span


@pytest.mark.parametrize("schema", [1, 2])
@pytest.mark.parametrize("scenario", sorted(CASES))
async def test_every_adk_invocation_is_scored_and_emitted_in_its_trace(
    attached: tuple[EvaluationSpanProcessor, list[EvaluationRecord]], telemetry: Telemetry, schema: int, scenario: str
) -> None:
    processor, records = attached
    with adk_telemetry(schema=schema):
        run = await run_turns(SCENARIOS[scenario]())
    assert processor.force_flush(30_000)
    adk_spans = {(hex_id(s.context.trace_id, 32), hex_id(s.context.span_id, 16)): s for s in run.readable_spans}

    invocations = {(r.trace_id, r.span_id) for r in records}
    assert len(invocations) == len(run.scenario.turns) == 1
    ((trace_id, span_id),) = invocations
    assert (trace_id, span_id) in adk_spans  # scores point at a real ADK span of the run
    assert {r.metric_name for r in records} == set(EFFICIENCY_METRICS)
    assert all(r.agent_name for r in records)
    tool_calls = next(r.score for r in records if r.metric_name == "tool_call_count_v1")
    assert tool_calls == CASES[scenario]

    events = telemetry.result_events()
    assert len(events) == len(records)
    for event in events:
        assert hex_id(event.log_record.trace_id, 32) == trace_id
        assert hex_id(event.log_record.span_id, 16) == span_id
    evaluation_spans = telemetry.evaluation_spans()
    assert len(evaluation_spans) == len(records)
    for span in evaluation_spans:
        assert hex_id(span.context.trace_id, 32) == trace_id
        assert span.parent is not None and hex_id(span.parent.span_id, 16) == span_id
    counted = sum(p.value for p in telemetry.metric_points(semconv.METRIC_EVALUATION_RESULTS))
    assert counted == len(records)


async def test_a_multi_turn_adk_session_gives_one_scored_invocation_per_turn(
    attached: tuple[EvaluationSpanProcessor, list[EvaluationRecord]], telemetry: Telemetry
) -> None:
    processor, records = attached
    with adk_telemetry(schema=2):
        run = await run_turns(SCENARIOS["multi_turn"]())
    assert processor.force_flush(30_000)
    by_invocation: dict[tuple[str, str], list[EvaluationRecord]] = {}
    for record in records:
        by_invocation.setdefault((record.trace_id, record.span_id), []).append(record)
    assert len(by_invocation) == len(run.scenario.turns) == 3
    assert {r.session_id for r in records} == {run.session_id}
    tool_calls = sorted(r.score or 0 for r in records if r.metric_name == "tool_call_count_v1")
    assert tool_calls == [0.0, 1.0, 1.0]


async def test_a_turn_a_guardrail_answered_without_the_model_is_scored(
    attached: tuple[EvaluationSpanProcessor, list[EvaluationRecord]],
) -> None:
    """ADK 2.13's default telemetry writes no model span for a turn a before_model_callback answered: the turn is
    still an invocation, scored on what its spans hold."""
    processor, records = attached
    with adk_telemetry(schema=2):
        run = await run_turns(guardrail_scenario())
    assert processor.force_flush(30_000)
    by_invocation: dict[tuple[str, str], dict[str, float | None]] = {}
    for record in records:
        by_invocation.setdefault((record.trace_id, record.span_id), {})[record.metric_name] = record.score
    assert len(by_invocation) == len(run.scenario.turns) == 2
    assert {r.session_id for r in records} == {run.session_id}
    calls = sorted(
        (scores["tool_call_count_v1"], scores["inference_call_count_v1"]) for scores in by_invocation.values()
    )
    assert calls == [(0.0, None), (1.0, 2.0)]  # no model call is not read as a count of 0: spans may be missing


async def test_adks_own_eval_set_object_is_the_golden(global_provider: TracerProvider) -> None:
    """An ``EvalSet`` of ADK's own (google.adk.evaluation), as an ADK team holds it in code, pairs and scores as the
    same eval set read from its JSON file."""
    from google.adk.evaluation.eval_case import EvalCase
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator

    with adk_telemetry(schema=2):
        recorded = await run_turns(SCENARIOS["single_tool"]())
    golden = EvaluationGenerator.convert_events_to_eval_invocations(recorded.session_events)
    eval_set = AdkEvalSet(eval_set_id="weather", eval_cases=[EvalCase(eval_id="paris", conversation=golden)])
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor.from_env(
        {},
        eval_set=eval_set,
        criteria={"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8},
        sinks=[records.extend],
    )
    global_provider.add_span_processor(processor)
    try:
        with adk_telemetry(schema=2):
            await run_turns(SCENARIOS["single_tool"]())
        assert processor.force_flush(30_000)
    finally:
        processor.shutdown()
    scored = {r.metric_name: (r.score, r.eval_id) for r in records}
    assert scored["tool_trajectory_avg_score"] == (1.0, "paris")
    assert scored["response_match_score"] == (1.0, "paris")
