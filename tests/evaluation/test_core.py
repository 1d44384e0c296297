"""The evaluation core shared by the embedded and the Kafka worker: metric selection, golden pairing, records,
emission around each metric run, and never raising."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace

from otel_eval import semconv
from otel_eval.demo import golden_eval_set
from otel_eval.emit import Emitters
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.errors import ConfigurationError
from otel_eval.evaluation import criteria_from, find_golden_turn
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.metrics import EFFICIENCY_METRICS, default_registry
from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord, result_id
from tests.judge.fake_gemini import FakeGemini, Reply
from tests.judge.helpers import make_judge
from tests.processor.telemetry import Telemetry
from tests.worker._core_helpers import HangingEvaluator, RaisingEvaluator, registry_with, request, traced

REFERENCE = ("tool_trajectory_avg_score", "response_match_score")


@pytest.fixture(autouse=True)
def _no_default_judge(clean_genai_env: None) -> None:
    """No judge credentials: judged default metrics are off."""


def _core(telemetry: Telemetry | None = None, **options: object) -> EvaluationCore:
    emitters = Emitters.create(**telemetry.providers()) if telemetry is not None else Emitters(None)
    options.setdefault("judge_configured", False)
    return EvaluationCore(emitters=emitters, **options)


def _metrics(records: list[EvaluationRecord]) -> set[str]:
    return {r.metric_name for r in records}


async def test_defaults_without_a_judge_are_the_efficiency_metrics() -> None:
    records = await _core().evaluate(request())
    assert _metrics(records) == set(EFFICIENCY_METRICS)
    assert all(r.eval_status is EvalStatus.INFORMATIONAL and r.label == "informational" for r in records)
    by_name = {r.metric_name: r.score for r in records}
    assert by_name["tool_call_count_v1"] == 1.0 and by_name["inference_call_count_v1"] == 2.0
    assert by_name["token_usage_v1"] == 120.0


async def test_defaults_add_the_judged_metrics_when_judge_credentials_exist() -> None:
    records = await _core(judge_configured=True).evaluate(request())
    assert _metrics(records) == set(EFFICIENCY_METRICS) | {"hallucinations_v1", "safety_v1"}


async def test_a_golden_match_adds_adks_default_reference_metrics() -> None:
    core = _core(eval_set=golden_eval_set())
    matched = await core.evaluate(request(traced()))
    assert _metrics(matched) == set(EFFICIENCY_METRICS) | set(REFERENCE)
    assert {r.eval_id for r in matched} == {"weather_paris"}
    assert {r.eval_set_id for r in matched} == {golden_eval_set().eval_set_id}
    unmatched = await core.evaluate(request(traced(user="Hi there!", answer="Hello!", tools=())))
    assert _metrics(unmatched) == set(EFFICIENCY_METRICS) and {r.eval_id for r in unmatched} == {None}


async def test_configured_criteria_then_request_criteria_win() -> None:
    core = _core(criteria={"criteria": {"response_match_score": 0.9}}, eval_set=golden_eval_set())
    records = await core.evaluate(request(traced(answer="Sunny, 18°C.")))
    assert _metrics(records) == set(EFFICIENCY_METRICS) | {"response_match_score"}
    (rouge,) = [r for r in records if r.metric_name == "response_match_score"]
    assert rouge.threshold == 0.9 and rouge.label == "fail"
    overridden = await core.evaluate(request(traced(), criteria={"tool_trajectory_avg_score": 1.0}))
    assert _metrics(overridden) == set(EFFICIENCY_METRICS) | {"tool_trajectory_avg_score"}


async def test_reference_metrics_are_skipped_without_a_golden_case() -> None:
    records = await _core(criteria={"tool_trajectory_avg_score": 1.0}).evaluate(request())
    assert _metrics(records) == set(EFFICIENCY_METRICS)


async def test_the_request_eval_case_pairs_by_user_text_else_by_position() -> None:
    golden = golden_eval_set()
    case = golden.eval_cases[3]  # time_london expects get_local_time
    core = _core(criteria={"tool_trajectory_avg_score": 1.0})
    by_text = await core.evaluate(request(traced(user="What time is it in London?"), eval_case=case))
    by_position = await core.evaluate(request(traced(user="what's the time in london"), eval_case=case))
    for records in (by_text, by_position):
        (trajectory,) = [r for r in records if r.metric_name == "tool_trajectory_avg_score"]
        assert trajectory.score == 0.0 and trajectory.eval_id == "time_london"


async def test_records_per_invocation_with_deterministic_ids_and_provenance(telemetry: Telemetry) -> None:
    first, second = traced(index=1), traced(user="How much is 100 USD in euros?", index=2)
    core = _core(telemetry, criteria={"tool_trajectory_avg_score": 1.0}, eval_set=golden_eval_set())
    records = await core.evaluate(request(first, second))
    # The two turns match two different golden cases, so no case pairs with the request: no reference metric.
    assert len(records) == 2 * len(EFFICIENCY_METRICS)
    versions = {name: default_registry().create(name).provenance.version for name in EFFICIENCY_METRICS}
    for record in records:
        assert record.evaluator_type == "deterministic" and record.evaluator_id == record.metric_name
        assert record.evaluator_version == versions[record.metric_name]
        assert record.result_id == result_id(
            record.trace_id, record.span_id, record.metric_name, record.evaluator_version
        )
        assert record.agent_name == "travel_assistant" and record.session_id == "session-1"
        assert record.invocation_end_time_ns == 1_250_000_000
    again = await core.evaluate(request(first, second))
    assert [r.result_id for r in again] == [r.result_id for r in records]  # redelivery -> same ids
    # every invocation gets its own evaluation spans and events, parented to it
    spans = telemetry.evaluation_spans()
    assert {format(s.parent.span_id, "016x") for s in spans} == {first.span_id, second.span_id}
    assert len(telemetry.result_events()) == 2 * len(records)


async def test_a_failing_metric_is_not_evaluated_and_the_others_still_run(telemetry: Telemetry) -> None:
    pipeline = PipelineMetrics(telemetry.meter_provider)
    core = _core(telemetry, criteria={"raising_v1": 0.5}, registry=registry_with(RaisingEvaluator), pipeline=pipeline)
    records = await core.evaluate(request())
    (failed,) = [r for r in records if r.metric_name == "raising_v1"]
    assert failed.eval_status is EvalStatus.NOT_EVALUATED and failed.label == "not_evaluated"
    assert failed.error_type == "ZeroDivisionError" and "division by zero" in (failed.explanation or "")
    assert _metrics(records) == set(EFFICIENCY_METRICS) | {"raising_v1"}
    assert pipeline.snapshot()["evaluation.errors.ZeroDivisionError"] == 1
    (span,) = [s for s in telemetry.evaluation_spans() if s.name == "evaluate raising_v1"]
    assert span.attributes[semconv.ERROR_TYPE] == "ZeroDivisionError"


async def test_a_metric_past_its_timeout_is_not_evaluated() -> None:
    HangingEvaluator.release.clear()
    core = _core(criteria={"hanging_v1": 0.5}, registry=registry_with(HangingEvaluator), metric_timeout_seconds=0.05)
    records = await core.evaluate(request())
    (hung,) = [r for r in records if r.metric_name == "hanging_v1"]
    assert hung.error_type == "timeout" and hung.score is None


async def test_inline_metrics_run_on_the_event_loop_and_other_deterministic_ones_on_a_metric_thread() -> None:
    threads: dict[str, str] = {}

    class Threaded(HangingEvaluator):
        async def evaluate(self, actual, expected=None, *, conversation_scenario=None):  # type: ignore[no-untyped-def]
            threads[self.info.name] = threading.current_thread().name
            return self.mean_result([])

    class Inline(Threaded):
        info = dataclasses.replace(HangingEvaluator.info, name="inline_v1")
        runs_inline = True

    core = _core(criteria={"hanging_v1": 0.5, "inline_v1": 0.5}, registry=registry_with(Threaded, Inline))
    await core.evaluate(request())
    assert threads["inline_v1"] == threading.current_thread().name
    assert threads["hanging_v1"].startswith("OtelEvalMetric")


async def test_unknown_metrics_fail_at_construction_but_only_their_record_at_request_time() -> None:
    with pytest.raises(ConfigurationError, match="unknown metric"):
        _core(criteria={"halucinations_v1": 0.5})
    _core(criteria={"response_match_score": 7})  # accepted as ADK accepts it (it can never pass: a warning)
    records = await _core().evaluate(request(criteria={"no_such_metric": 0.5}))
    (broken,) = [r for r in records if r.metric_name == "no_such_metric"]
    assert broken.error_type == "MetricNotFoundError" and "unknown metric" in (broken.explanation or "")
    assert _metrics(records) == set(EFFICIENCY_METRICS) | {"no_such_metric"}


async def test_evaluate_never_raises_even_when_every_emitter_fails() -> None:
    class Broken:
        def emit(self, record: EvaluationRecord) -> None:
            raise RuntimeError("exporter down")

    core = EvaluationCore(judge_configured=False, emitters=Emitters(None, [Broken()], [Broken().emit]))
    assert len(await core.evaluate(request())) == len(EFFICIENCY_METRICS)
    assert await core.evaluate(request().model_copy(update={"invocations": []})) == []


async def test_metrics_run_with_the_evaluation_span_current_and_instrumentation_suppressed(
    telemetry: Telemetry,
) -> None:
    seen: list[tuple[bool, int]] = []

    class Probe(HangingEvaluator):
        async def evaluate(self, actual, expected=None, *, conversation_scenario=None):  # type: ignore[no-untyped-def]
            suppressed = bool(otel_context.get_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY))
            seen.append((suppressed, trace.get_current_span().get_span_context().span_id))
            return self.mean_result([])

    core = _core(telemetry, criteria={"hanging_v1": 0.5}, registry=registry_with(Probe))
    await core.evaluate(request())
    (span,) = [s for s in telemetry.evaluation_spans() if s.name == "evaluate hanging_v1"]
    assert seen == [(True, span.context.span_id)]
    assert not otel_context.get_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY)  # restored afterwards


async def test_judged_metrics_use_the_judge_and_report_their_model_and_own_labels() -> None:
    def answers(model: str, body: dict) -> Reply:  # type: ignore[type-arg]
        return Reply(text='{"reasoning": "fine", "violated_policies": [], "safety_verdict": "safe"}')

    with FakeGemini(answers) as server:
        judge = make_judge(server)
        core = _core(criteria={"safety_v1": {"threshold": 0.5, "judge_model_options": {"num_samples": 1}}}, judge=judge)
        records = await core.evaluate(request())
    (safety,) = [r for r in records if r.metric_name == "safety_v1"]
    assert safety.score == 1.0 and safety.label == "pass"
    assert safety.verdict == default_registry().info("safety_v1").verdicts[0] == "safe"  # type: ignore[index]
    assert safety.judge_model == "gemini-2.5-flash"
    assert safety.evaluator_type == "llm_judge" and safety.evaluator_id.startswith("safety_v1/")  # type: ignore[union-attr]
    assert safety.evaluator_version and len(safety.evaluator_version) == 12
    assert safety.result_id == result_id(safety.trace_id, safety.span_id, "safety_v1", safety.evaluator_version)


def test_criteria_forms_and_golden_turn_matching() -> None:
    assert criteria_from(None) is None
    parsed = criteria_from({"criteria": {"response_match_score": 0.7}})
    assert parsed is not None and parsed["response_match_score"].threshold == 0.7
    with pytest.raises(ConfigurationError, match="criteria"):
        criteria_from({"response_match_score": "high"})
    cases = golden_eval_set().eval_cases
    found = find_golden_turn(cases, "  what's the WEATHER like in paris   today? ")
    assert found is not None and found[0].eval_id == "weather_paris" and found[1] == 0
    assert find_golden_turn(cases, "") is None


async def test_every_result_carries_evaluator_provenance_on_event_span_metrics_and_record(
    telemetry: Telemetry,
) -> None:
    def answers(model: str, body: dict) -> Reply:  # type: ignore[type-arg]
        return Reply(text='{"reasoning": "fine", "violated_policies": [], "safety_verdict": "safe"}')

    criteria = {"safety_v1": {"threshold": 0.5, "judge_model_options": {"num_samples": 1}}}
    with FakeGemini(answers) as server:
        judge = make_judge(server)
        records = await _core(telemetry, criteria=criteria, judge=judge).evaluate(request())
        again = await _core(criteria=criteria, judge=make_judge(server)).evaluate(request())
    by_name = {r.metric_name: r for r in records}
    safety = by_name["safety_v1"]
    assert safety.evaluator_type == "llm_judge" and safety.judge_model == "gemini-2.5-flash"
    assert {r.metric_name: r.evaluator_version for r in again} == {r.metric_name: r.evaluator_version for r in records}
    # the results-topic record round-trips its provenance
    assert EvaluationRecord.model_validate_json(safety.model_dump_json()).evaluator_version == safety.evaluator_version
    provenance = {
        semconv.OTEL_EVAL_EVALUATOR_ID: safety.evaluator_id,
        semconv.OTEL_EVAL_EVALUATOR_TYPE: "llm_judge",
        semconv.OTEL_EVAL_EVALUATOR_VERSION: safety.evaluator_version,
        semconv.OTEL_EVAL_JUDGE_MODEL: "gemini-2.5-flash",
    }
    (event,) = [
        e for e in telemetry.result_events() if e.log_record.attributes[semconv.GEN_AI_EVALUATION_NAME] == "safety_v1"
    ]
    (span,) = [s for s in telemetry.evaluation_spans() if s.name == "evaluate safety_v1"]
    for attributes in (event.log_record.attributes, span.attributes):
        assert {key: attributes[key] for key in provenance} == provenance
    for event in telemetry.result_events():  # deterministic metrics too, without a judge model
        name = event.log_record.attributes[semconv.GEN_AI_EVALUATION_NAME]
        assert event.log_record.attributes[semconv.OTEL_EVAL_EVALUATOR_VERSION] == by_name[name].evaluator_version
    points = [
        *telemetry.metric_points(semconv.METRIC_EVALUATION_RESULTS),
        *telemetry.metric_points(semconv.METRIC_EVALUATION_SCORE),
    ]
    assert points
    for point in points:
        name = point.attributes[semconv.GEN_AI_EVALUATION_NAME]
        assert point.attributes[semconv.OTEL_EVAL_EVALUATOR_VERSION] == by_name[name].evaluator_version
        assert semconv.OTEL_EVAL_EVALUATOR_ID not in point.attributes


async def test_incomplete_context_is_not_evaluated_counted_and_never_asks_the_judge(telemetry: Telemetry) -> None:
    pipeline = PipelineMetrics(telemetry.meter_provider)
    invocation = traced()
    invocation.invocation.final_response = None
    with FakeGemini(lambda model, body: Reply(text="unused")) as server:
        core = _core(telemetry, criteria={"hallucinations_v1": 0.8}, judge=make_judge(server), pipeline=pipeline)
        records = await core.evaluate(request(invocation))
        assert server.requests == []
    (record,) = [r for r in records if r.metric_name == "hallucinations_v1"]
    assert record.label == "not_evaluated" and record.score is None and record.error_type == "incomplete_context"
    assert pipeline.snapshot()["evaluation.errors.incomplete_context"] == 1
    (span,) = [s for s in telemetry.evaluation_spans() if s.name == "evaluate hallucinations_v1"]
    assert span.attributes[semconv.ERROR_TYPE] == "incomplete_context"
