"""Each emitter on the real SDK: the result event in the invocation's context, the evaluation span as a child of
the invocation span (and parent of spans made while the metric runs), the score histogram and results counter."""

from __future__ import annotations

import json
import time

import pytest
from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.trace import StatusCode

from otel_eval import semconv
from otel_eval.emit import Emitters, EvaluationEventEmitter, EvaluationSpanEmitter, ScoreMetricsEmitter
from otel_eval.emit.attributes import metric_attributes, record_attributes
from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord, result_id
from tests.collected import settled
from tests.processor.telemetry import Telemetry

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"
EVALUATOR_VERSION = "0123456789ab"


def _record(**changes: object) -> EvaluationRecord:
    values: dict[str, object] = {
        "result_id": result_id(TRACE_ID, SPAN_ID, "hallucinations_v1", EVALUATOR_VERSION),
        "trace_id": TRACE_ID,
        "span_id": SPAN_ID,
        "invocation_id": "e-42",
        "metric_name": "hallucinations_v1",
        "evaluator_id": "hallucinations_v1/a58cd791",
        "evaluator_type": "llm_judge",
        "evaluator_version": EVALUATOR_VERSION,
        "judge_model": "gemini-2.5-flash",
        "score": 0.5,
        "eval_status": EvalStatus.FAILED,
        "label": "fail",
        "verdict": "hallucinated",
        "threshold": 0.8,
        "explanation": "1 of 2 sentences unsupported",
        "agent_name": "travel_assistant",
        "session_id": "conversation-1",
        "eval_id": "rain_tokyo",
        "eval_set_id": "golden",
    }
    values.update(changes)
    return EvaluationRecord.model_validate(values)


def test_the_result_event_is_emitted_in_the_invocation_context_with_every_attribute(telemetry: Telemetry) -> None:
    EvaluationEventEmitter(telemetry.logger_provider).emit(_record())
    (event,) = telemetry.result_events()
    log = event.log_record
    assert format(log.trace_id, "032x") == TRACE_ID and format(log.span_id, "016x") == SPAN_ID
    assert log.event_name == semconv.EVALUATION_RESULT_EVENT
    assert log.severity_number is SeverityNumber.WARN  # a failed evaluation
    assert event.instrumentation_scope.name == semconv.INSTRUMENTATION_SCOPE
    attributes = dict(log.attributes)
    assert attributes == {
        semconv.GEN_AI_EVALUATION_NAME: "hallucinations_v1",
        semconv.GEN_AI_EVALUATION_SCORE_VALUE: 0.5,
        semconv.GEN_AI_EVALUATION_SCORE_LABEL: "fail",
        semconv.GEN_AI_EVALUATION_EXPLANATION: "1 of 2 sentences unsupported",
        semconv.OTEL_EVAL_SCORE_VERDICT: "hallucinated",  # the metric's own word: events and spans only
        semconv.OTEL_EVAL_STATUS: "FAILED",
        semconv.OTEL_EVAL_METRIC_VERSION: "1",
        semconv.OTEL_EVAL_RESULT_ID: _record().result_id,
        semconv.OTEL_EVAL_THRESHOLD: 0.8,
        semconv.OTEL_EVAL_JUDGE_MODEL: "gemini-2.5-flash",
        semconv.OTEL_EVAL_EVALUATOR_ID: "hallucinations_v1/a58cd791",
        semconv.OTEL_EVAL_EVALUATOR_TYPE: "llm_judge",
        semconv.OTEL_EVAL_EVALUATOR_VERSION: EVALUATOR_VERSION,
        semconv.GEN_AI_AGENT_NAME: "travel_assistant",
        semconv.GEN_AI_CONVERSATION_ID: "conversation-1",
        semconv.OTEL_EVAL_INVOCATION_ID: "e-42",
        semconv.OTEL_EVAL_EVAL_ID: "rain_tokyo",
        semconv.OTEL_EVAL_EVAL_SET_ID: "golden",
    }


def test_a_not_evaluated_result_carries_error_type_and_no_score(telemetry: Telemetry) -> None:
    record = _record(
        score=None, eval_status=EvalStatus.NOT_EVALUATED, label="not_evaluated", error_type="judge_timeout"
    )
    EvaluationEventEmitter(telemetry.logger_provider).emit(record)
    attributes = dict(telemetry.result_events()[0].log_record.attributes)
    assert attributes[semconv.ERROR_TYPE] == "judge_timeout"
    assert semconv.GEN_AI_EVALUATION_SCORE_VALUE not in attributes
    assert attributes[semconv.GEN_AI_EVALUATION_SCORE_LABEL] == "not_evaluated"


def test_the_evaluation_span_is_a_child_of_the_invocation_span_and_parents_the_judge_calls(
    telemetry: Telemetry,
) -> None:
    emitter = EvaluationSpanEmitter(telemetry.tracer_provider)
    judge_tracer = telemetry.tracer_provider.get_tracer("judge-client")
    with emitter.evaluation_span("hallucinations_v1", TRACE_ID, SPAN_ID) as span:
        with judge_tracer.start_as_current_span("generate_content gemini-2.5-flash"):
            pass  # what a judge client does while the metric runs
        span.finish(_record())
    spans = {s.name: s for s in telemetry.finished_spans()}
    evaluation = spans["evaluate hallucinations_v1"]
    judge_call = spans["generate_content gemini-2.5-flash"]
    assert format(evaluation.context.trace_id, "032x") == TRACE_ID
    assert evaluation.parent is not None and format(evaluation.parent.span_id, "016x") == SPAN_ID
    assert evaluation.parent.is_remote
    assert judge_call.parent is not None and judge_call.parent.span_id == evaluation.context.span_id
    assert judge_call.context.trace_id == evaluation.context.trace_id
    assert evaluation.attributes[semconv.GEN_AI_OPERATION_NAME] == semconv.GEN_AI_OPERATION_EVALUATION
    assert {k: evaluation.attributes[k] for k in record_attributes(_record())} == record_attributes(_record())
    assert evaluation.status.status_code is StatusCode.UNSET


def test_the_evaluation_span_is_typed_as_an_evaluator_for_llm_backends(telemetry: Telemetry) -> None:
    EvaluationSpanEmitter(telemetry.tracer_provider).emit(_record())
    (span,) = telemetry.evaluation_spans()
    assert span.attributes["openinference.span.kind"] == "EVALUATOR"  # Phoenix (OpenInference)
    assert json.loads(str(span.attributes["mlflow.spanType"])) == "EVALUATOR"  # MLflow reads its attributes as JSON


def test_an_evaluation_that_errored_marks_its_span_as_error(telemetry: Telemetry) -> None:
    record = _record(score=None, eval_status=EvalStatus.NOT_EVALUATED, label="not_evaluated", error_type="timeout")
    EvaluationSpanEmitter(telemetry.tracer_provider).emit(record)
    (span,) = telemetry.evaluation_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes[semconv.ERROR_TYPE] == "timeout"


def test_unusable_ids_give_a_root_evaluation_span_rather_than_nothing(telemetry: Telemetry) -> None:
    EvaluationSpanEmitter(telemetry.tracer_provider).emit(_record(trace_id="not-hex", span_id=""))
    (span,) = telemetry.evaluation_spans()
    assert span.parent is None
    assert trace.get_current_span().get_span_context().is_valid is False


def test_an_exception_out_of_the_evaluation_span_is_recorded_on_it_as_the_sdk_current_span_records_it(
    telemetry: Telemetry,
) -> None:
    emitter = EvaluationSpanEmitter(telemetry.tracer_provider)
    sdk_tracer = telemetry.tracer_provider.get_tracer("reference")
    for judged in (False, True):
        with pytest.raises(ValueError), emitter.evaluation_span("safety_v1", TRACE_ID, SPAN_ID, judged=judged):
            raise ValueError("metric bug")
        assert trace.get_current_span().get_span_context().is_valid is False  # the context is restored
    with pytest.raises(ValueError), sdk_tracer.start_as_current_span("reference"):
        raise ValueError("metric bug")
    *ours, reference = telemetry.finished_spans()
    assert len(ours) == 2
    for span in ours:
        assert (span.status.status_code, span.status.description) == (
            reference.status.status_code,
            reference.status.description,
        )
        assert [(e.name, e.attributes["exception.type"], e.attributes["exception.message"]) for e in span.events] == [
            (e.name, e.attributes["exception.type"], e.attributes["exception.message"]) for e in reference.events
        ]


def test_score_histogram_buckets_and_low_cardinality_counter(telemetry: Telemetry) -> None:
    emitter = ScoreMetricsEmitter(telemetry.meter_provider)
    emitter.emit(_record(score=0.5))
    emitter.emit(_record(score=0.9, eval_status=EvalStatus.PASSED, label="pass"))
    emitter.emit(_record(score=None, eval_status=EvalStatus.NOT_EVALUATED, label="not_evaluated", error_type="x"))
    histogram = telemetry.metric_points(semconv.METRIC_EVALUATION_SCORE, settle=False)
    assert tuple(histogram[0].explicit_bounds) == semconv.SCORE_HISTOGRAM_BUCKETS
    assert sum(p.count for p in histogram) == 2 and sum(p.sum for p in histogram) == 1.4
    counter = {
        dict(p.attributes)[semconv.GEN_AI_EVALUATION_SCORE_LABEL]: p.value
        for p in telemetry.metric_points(semconv.METRIC_EVALUATION_RESULTS)
    }
    assert counter == {"fail": 1, "pass": 1, "not_evaluated": 1}
    for point in [*histogram, *telemetry.metric_points(semconv.METRIC_EVALUATION_RESULTS)]:
        assert set(point.attributes) == set(metric_attributes(_record()))  # no ids, no explanations, no verdict
        assert semconv.OTEL_EVAL_SCORE_VERDICT not in point.attributes
        # of the provenance only the low-cardinality version: a series splits by evaluator version
        assert point.attributes[semconv.OTEL_EVAL_EVALUATOR_VERSION] == EVALUATOR_VERSION
        assert semconv.OTEL_EVAL_EVALUATOR_ID not in point.attributes
        assert semconv.OTEL_EVAL_EVALUATOR_TYPE not in point.attributes
    exemplars = [e for p in histogram for e in p.exemplars]
    assert exemplars and all(format(e.trace_id, "032x") == TRACE_ID for e in exemplars)


def test_the_results_counter_sums_every_emitter_and_keeps_the_latest_result_as_exemplar(telemetry: Telemetry) -> None:
    # Two emitters of one provider (two processors' cores) report one series per attribute set, summed, as the
    # SDK sums a synchronous counter's adds; the series' exemplar is its latest result's invocation.
    later = "0af7651916cd43dd8448eb211c80319c"
    first, second = ScoreMetricsEmitter(telemetry.meter_provider), ScoreMetricsEmitter(telemetry.meter_provider)
    first.emit(_record())
    second.emit(_record(trace_id=later))
    second.emit(_record(label="pass", eval_status=EvalStatus.PASSED))
    (metric,) = [
        m
        for rm in settled(telemetry.metric_reader).resource_metrics  # type: ignore[union-attr]
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == semconv.METRIC_EVALUATION_RESULTS
    ]
    assert metric.data.is_monotonic and metric.unit == "{result}"
    points = {dict(p.attributes)[semconv.GEN_AI_EVALUATION_SCORE_LABEL]: p for p in metric.data.data_points}
    assert {label: p.value for label, p in points.items()} == {"fail": 2, "pass": 1}
    assert [format(e.trace_id, "032x") for e in points["fail"].exemplars] == [later]
    first.emit(_record())
    assert {
        dict(p.attributes)[semconv.GEN_AI_EVALUATION_SCORE_LABEL]: p.value
        for p in telemetry.metric_points(semconv.METRIC_EVALUATION_RESULTS)
    } == {"fail": 3, "pass": 1}  # cumulative


def test_a_failing_emitter_or_sink_does_not_stop_the_others(telemetry: Telemetry) -> None:
    class Broken:
        def emit(self, record: EvaluationRecord) -> None:
            raise RuntimeError("exporter down")

    delivered: list[EvaluationRecord] = []

    def broken_sink(records: object) -> None:
        raise RuntimeError("sink down")

    emitters = Emitters(
        None, [Broken(), EvaluationEventEmitter(telemetry.logger_provider)], [broken_sink, delivered.extend]
    )
    emitters.emit(_record())
    emitters.deliver([_record()])
    assert len(telemetry.result_events()) == 1
    assert len(delivered) == 1


@pytest.mark.parametrize(
    "changes",
    [{}, {"eval_status": EvalStatus.NOT_EVALUATED, "label": "not_evaluated", "score": None, "error_type": "timeout"}],
)
def test_an_inline_metric_s_finished_span_is_the_span_of_a_run_inside_it(
    telemetry: Telemetry, changes: dict[str, object]
) -> None:
    """``EvaluationSpanEmitter.finished`` (the span made once an inline metric is scored) exports what
    ``evaluation_span`` + ``finish`` around the run exports: name, kind, parent, links, status, attributes in order."""
    record = _record(**changes)
    emitter = EvaluationSpanEmitter(telemetry.tracer_provider)
    with emitter.evaluation_span(record.metric_name, TRACE_ID, SPAN_ID, judged=False) as span:
        span.finish(record)
    emitter.finished(record, TRACE_ID, SPAN_ID, time.time_ns())
    telemetry.tracer_provider.force_flush()
    around, finished = telemetry.evaluation_spans()
    for made in (around, finished):
        assert made.context is not None and made.parent is not None
    assert list(finished.attributes.items()) == list(around.attributes.items())  # type: ignore[union-attr]
    assert (finished.name, finished.kind, finished.parent, list(finished.links)) == (
        around.name,
        around.kind,
        around.parent,
        list(around.links),
    )
    assert (finished.status.status_code, finished.status.description) == (
        around.status.status_code,
        around.status.description,
    )
    assert finished.instrumentation_scope == around.instrumentation_scope
    assert finished.context is not None and finished.context.trace_id == int(TRACE_ID, 16)
    assert around.start_time is not None and finished.start_time is not None and finished.end_time is not None
    assert finished.start_time <= finished.end_time
