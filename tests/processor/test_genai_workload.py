"""The processor on a real TracerProvider with a GenAI-semconv agent: events, evaluation spans and metric points
for every invocation, online reference metrics, and the same scores as the offline runner on the same spans."""

from __future__ import annotations

from collections import Counter

import pytest
from opentelemetry.trace import SpanKind

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.conversations import Conversation
from otel_eval.demo import AGENT_NAME, EVAL_SET_ID, SCENARIOS, TravelAgent, golden_eval_set
from otel_eval.evaluation import build_plan, criteria_from, evaluate_conversation, find_golden_turn, pair_invocations
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import spans_from_readable
from tests.processor.telemetry import Telemetry, hex_id

CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": {"threshold": 0.6}}
REFERENCE_METRICS = ("tool_trajectory_avg_score", "response_match_score")


def _run_workload(
    telemetry: Telemetry, sample_rate: float = 1.0, sample_priority: bool = True
) -> tuple[EvaluationSpanProcessor, list[EvaluationRecord]]:
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(
        CRITERIA,
        settings=ProcessorSettings(
            eval_set=golden_eval_set(), sample_rate=sample_rate, sample_priority=sample_priority
        ),
        sinks=[records.extend],
        **telemetry.providers(),
    )
    telemetry.tracer_provider.add_span_processor(processor)
    telemetry.add_exporting_processor()
    agent = TravelAgent(telemetry.tracer_provider)
    for index, scenario in enumerate(SCENARIOS):
        agent.run(scenario, conversation_id=f"conversation-{index}")
    assert processor.force_flush(30_000)
    return processor, records


def _invocation_spans(telemetry: Telemetry) -> list:
    return [s for s in telemetry.finished_spans() if s.name == f"invoke_agent {AGENT_NAME}"]


def test_every_invocation_gets_events_evaluation_spans_and_metric_points(telemetry: Telemetry) -> None:
    processor, records = _run_workload(telemetry)
    invocations = _invocation_spans(telemetry)
    assert len(invocations) == len(SCENARIOS)
    events = telemetry.result_events()
    evaluation_spans = telemetry.evaluation_spans()
    golden = golden_eval_set()

    for span in invocations:
        trace_id, span_id = span.context.trace_id, span.context.span_id
        user_text = next(
            s.user_text for s in SCENARIOS if s.user_text in span.attributes[semconv.GEN_AI_INPUT_MESSAGES]
        )
        matched = find_golden_turn(golden.eval_cases, user_text) is not None
        expected_metrics = set(EFFICIENCY_METRICS) | (set(REFERENCE_METRICS) if matched else set())

        mine = [e for e in events if e.log_record.trace_id == trace_id and e.log_record.span_id == span_id]
        assert {e.log_record.attributes[semconv.GEN_AI_EVALUATION_NAME] for e in mine} == expected_metrics
        assert len(mine) == len(expected_metrics)

        children = [s for s in evaluation_spans if s.context.trace_id == trace_id]
        assert {s.name for s in children} == {f"evaluate {m}" for m in expected_metrics}
        for child in children:
            assert child.parent is not None and child.parent.span_id == span_id and child.parent.is_remote
            assert child.kind is SpanKind.INTERNAL
            assert child.instrumentation_scope.name == semconv.INSTRUMENTATION_SCOPE
            assert child.attributes[semconv.GEN_AI_OPERATION_NAME] == semconv.GEN_AI_OPERATION_EVALUATION
            assert child.attributes[semconv.GEN_AI_AGENT_NAME] == AGENT_NAME
            event = next(
                e for e in mine if e.log_record.attributes[semconv.GEN_AI_EVALUATION_NAME] in child.name.split(" ")
            )
            for key in (semconv.GEN_AI_EVALUATION_SCORE_LABEL, semconv.GEN_AI_EVALUATION_SCORE_VALUE):
                assert child.attributes[key] == event.log_record.attributes[key]
        if matched:
            eval_ids = {e.log_record.attributes[semconv.OTEL_EVAL_EVAL_ID] for e in mine}
            assert len(eval_ids) == 1 and {e.log_record.attributes[semconv.OTEL_EVAL_EVAL_SET_ID] for e in mine} == {
                EVAL_SET_ID
            }

    # One counter increment per record, by metric name, label, agent and evaluator version; a histogram point per
    # scored metric.
    results = telemetry.metric_points(semconv.METRIC_EVALUATION_RESULTS)
    counted = Counter()
    for point in results:
        attributes = dict(point.attributes)
        assert set(attributes) == {
            semconv.GEN_AI_EVALUATION_NAME,
            semconv.GEN_AI_EVALUATION_SCORE_LABEL,
            semconv.GEN_AI_AGENT_NAME,
            semconv.OTEL_EVAL_EVALUATOR_VERSION,
        }
        counted[(attributes[semconv.GEN_AI_EVALUATION_NAME], attributes[semconv.GEN_AI_EVALUATION_SCORE_LABEL])] += (
            point.value
        )
    assert counted == Counter((r.metric_name, r.label) for r in records)
    histogram = telemetry.metric_points(semconv.METRIC_EVALUATION_SCORE)
    assert histogram and all(tuple(p.explicit_bounds) == semconv.SCORE_HISTOGRAM_BUCKETS for p in histogram)
    assert sum(p.count for p in histogram) == sum(1 for r in records if r.score is not None)

    stats = processor.stats()
    assert stats["invocations.sampled"] == stats["invocations.evaluated"] == len(SCENARIOS)
    assert stats["open_traces"] == 0 and stats["buffered_spans"] == 0
    processor.shutdown()


def test_online_reference_metrics_catch_the_hallucination_and_the_wrong_tool(telemetry: Telemetry) -> None:
    _, records = _run_workload(telemetry)
    by_case = {(r.eval_id, r.metric_name): r for r in records if r.eval_id}
    assert by_case[("weather_paris", "tool_trajectory_avg_score")].label == semconv.LABEL_PASS
    assert by_case[("weather_paris", "response_match_score")].label == semconv.LABEL_PASS
    assert by_case[("rain_tokyo", "response_match_score")].label == semconv.LABEL_FAIL  # the hallucination
    wrong_tool = by_case[("time_london", "tool_trajectory_avg_score")]
    assert wrong_tool.label == semconv.LABEL_FAIL and wrong_tool.score == 0.0
    assert "get_local_time" in (wrong_tool.explanation or "")
    unmatched = [r for r in records if r.eval_id is None]
    assert unmatched and {r.metric_name for r in unmatched} == set(EFFICIENCY_METRICS)
    assert all(r.label == semconv.LABEL_INFORMATIONAL for r in unmatched)


async def test_online_scores_equal_the_offline_runner_on_the_same_spans(telemetry: Telemetry) -> None:
    _, records = _run_workload(telemetry)
    agent_spans = [s for s in telemetry.finished_spans() if s.instrumentation_scope.name != "otel_eval"]
    plan = build_plan(dict(criteria_from(CRITERIA) or {}) | dict.fromkeys(EFFICIENCY_METRICS))
    golden = golden_eval_set()
    compared = 0
    for trace in rebuild_traces(spans_from_readable(agent_spans)):
        for invocation in trace.invocations:
            pairing = pair_invocations([invocation], golden)
            conversation = Conversation([invocation], eval_case=pairing.case, expected=pairing.expected)
            report = await evaluate_conversation(conversation, plan)
            for outcome in report.outcomes:
                if outcome.metric.requires_reference and pairing.case is None:
                    continue
                online = next(
                    r for r in records if r.span_id == invocation.span_id and r.metric_name == outcome.metric.name
                )
                per_invocation = outcome.result.per_invocation_results[0]
                assert online.score == per_invocation.score
                assert online.eval_status == per_invocation.eval_status
                compared += 1
    assert compared == 4 * 6 + 2 * 4  # golden cases: 2 reference + 4 efficiency metrics


@pytest.mark.parametrize("sample_rate", [0.0, 0.5])
def test_sample_rate_evaluates_exactly_the_traces_the_trace_id_ratio_sampler_keeps(
    telemetry: Telemetry, sample_rate: float
) -> None:
    """Head sampling (no priority sampling) decides by trace id alone, as the SDK's sampler does; with priority
    sampling these traces, each naming a session, are sampled by session (tests/processor/test_session_sampling.py)."""
    from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased

    processor, records = _run_workload(telemetry, sample_rate=sample_rate, sample_priority=False)
    sampler = TraceIdRatioBased(sample_rate)
    expected = {
        hex_id(s.context.span_id, 16)
        for s in _invocation_spans(telemetry)
        if sampler.should_sample(None, s.context.trace_id, "x").decision is Decision.RECORD_AND_SAMPLE
    }
    assert {r.span_id for r in records} == expected
    assert processor.stats().get("invocations.sampled", 0) == len(expected)
