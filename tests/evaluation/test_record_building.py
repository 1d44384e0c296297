"""The evaluation core builds its records without validating them (:meth:`EvaluationRecord.of_trusted`): they must be
exactly the records validation would have made, on real recorded traces, for every kind of metric."""

from __future__ import annotations

import json
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from otel_eval import semconv
from otel_eval.emit import Emitters
from otel_eval.emit.attributes import record_attributes
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.evaluation.sessions import SessionWindow
from otel_eval.metrics import EFFICIENCY_METRICS, Evaluator, MetricInfo
from otel_eval.model import (
    BaseCriterion,
    ConversationScenario,
    EvalStatus,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    TracedInvocation,
)
from otel_eval.model.loading import load_eval_set
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest, result_id
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import read_trace_file
from tests.judge.fake_gemini import FakeGemini
from tests.judge.helpers import make_judge
from tests.worker._core_helpers import registry_with, request, traced

AGENTEVALS = Path(__file__).resolve().parents[1] / "data" / "traces" / "agentevals"
MULTI_TURN = "rubric_based_multi_turn_trajectory_quality_v1"
CRITERIA: dict[str, Any] = {
    "tool_trajectory_avg_score": 1.0,
    "response_match_score": 0.5,
    "safety_v1": {"threshold": 0.5, "judge_model_options": {"num_samples": 1}},
    MULTI_TURN: {
        "threshold": 0.5,
        "judge_model_options": {"num_samples": 1},
        "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "The agent helped."}}],
    },
}


def _judge(model: str, body: dict[str, Any]) -> str:
    if "Property" in json.dumps(body):  # the rubric prompt
        return "ID: r\nProperty: The agent helped.\nRationale: read it\nVerdict: yes\n"
    return json.dumps({"reasoning": "fine", "violated_policies": [], "safety_verdict": "safe"})


def _recorded_invocations() -> list[TracedInvocation]:
    files = ("helm.json", "helm_2.json", "helm_3.json", "k8s.json")
    traces = [trace for name in files for trace in rebuild_traces(read_trace_file(AGENTEVALS / name).spans)]
    return [invocation for trace in traces for invocation in trace.invocations]


def _validated(record: EvaluationRecord) -> EvaluationRecord:
    """The record validation makes of the same values (those the core gives: all but the version and the time)."""
    given = set(EvaluationRecord.model_fields) - {"schema_version", "evaluated_at"}
    return EvaluationRecord(**{name: getattr(record, name) for name in given})


def _reference_attributes(record: EvaluationRecord) -> list[tuple[str, Any]]:
    """The event's and span's attributes as the general form makes them: every value, in order, absent ones out."""
    values = {
        semconv.GEN_AI_EVALUATION_NAME: record.metric_name,
        semconv.GEN_AI_EVALUATION_SCORE_LABEL: record.label,
        semconv.OTEL_EVAL_STATUS: record.eval_status.name,
        semconv.OTEL_EVAL_METRIC_VERSION: record.metric_version,
        semconv.OTEL_EVAL_RESULT_ID: record.result_id,
        semconv.GEN_AI_EVALUATION_SCORE_VALUE: record.score,
        semconv.GEN_AI_EVALUATION_EXPLANATION: record.explanation,
        semconv.OTEL_EVAL_SCORE_VERDICT: record.verdict,
        semconv.ERROR_TYPE: record.error_type,
        semconv.OTEL_EVAL_THRESHOLD: record.threshold,
        semconv.OTEL_EVAL_JUDGE_MODEL: record.judge_model,
        semconv.OTEL_EVAL_EVALUATOR_ID: record.evaluator_id,
        semconv.OTEL_EVAL_EVALUATOR_TYPE: record.evaluator_type,
        semconv.OTEL_EVAL_EVALUATOR_VERSION: record.evaluator_version,
        semconv.GEN_AI_AGENT_NAME: record.agent_name,
        semconv.GEN_AI_CONVERSATION_ID: record.session_id,
        semconv.OTEL_EVAL_INVOCATION_ID: record.invocation_id or None,
        semconv.OTEL_EVAL_EVAL_ID: record.eval_id,
        semconv.OTEL_EVAL_EVAL_SET_ID: record.eval_set_id,
        semconv.OTEL_EVAL_SESSION_WINDOW: record.session_window,
        semconv.OTEL_EVAL_SESSION_FIRST_TURN: record.session_first_turn,
        semconv.OTEL_EVAL_SESSION_LAST_TURN: record.session_last_turn,
    }
    return [(key, value) for key, value in values.items() if value is not None]


def _assert_as_validated(records: Sequence[EvaluationRecord]) -> None:
    for record in records:
        # what its event and its span carry: every attribute, in the same order, as the general form
        assert list(record_attributes(record).items()) == _reference_attributes(record)
        validated = _validated(record)
        assert record.model_fields_set == validated.model_fields_set
        assert list(record.__dict__) == list(validated.__dict__)  # field order, as validation stores them
        if record.session_window is None:
            rid = result_id(record.trace_id, record.span_id, record.metric_name, record.evaluator_version)
            assert record.result_id == rid
        validated = validated.model_copy(update={"evaluated_at": record.evaluated_at})
        assert record == validated
        assert record.model_dump() == validated.model_dump()
        assert [type(value) for value in record.model_dump().values()] == [
            type(value) for value in validated.model_dump().values()
        ]
        assert record.model_dump_json() == validated.model_dump_json()
        assert EvaluationRecord.model_validate_json(record.model_dump_json()) == record
        assert pickle.loads(pickle.dumps(record)) == record  # (how the evaluation process hands records back)


async def test_records_of_recorded_traces_equal_validated_ones_for_every_kind_of_metric() -> None:
    invocations = _recorded_invocations()
    with FakeGemini(_judge) as server:
        core = EvaluationCore(
            criteria=CRITERIA,
            eval_set=load_eval_set(AGENTEVALS / "eval_set_helm.json"),
            judge=make_judge(server),
            judge_configured=True,
            emitters=Emitters(None),
        )
        records = []
        for invocation in invocations:
            records += await core.evaluate(EvaluationRequest(invocations=[invocation]), scope="invocation")
        turns = [turn.model_copy(update={"session_id": "session-1"}) for turn in invocations]
        window = await core.evaluate_window(SessionWindow("session-1", window=1, first_turn=2, turns=turns))
    by_metric = {record.metric_name: record for record in records}
    assert set(by_metric) == {*EFFICIENCY_METRICS, "tool_trajectory_avg_score", "response_match_score", "safety_v1"}
    assert by_metric["safety_v1"].judge_model and by_metric["safety_v1"].score == 1.0
    assert by_metric["tool_trajectory_avg_score"].eval_id is not None
    assert {record.metric_name for record in window} == {MULTI_TURN} and len(window) == len(invocations)
    assert window[-1].eval_status is EvalStatus.PASSED and window[-1].session_window == 1
    assert window[-1].session_last_turn == 2 + len(invocations) - 1
    _assert_as_validated(records + window)


class _LooseScore(Evaluator):
    """A metric whose code scores with an int and explains with a non-str (what validation converts or refuses)."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="loose_score_v1", description="int score", criterion_type=BaseCriterion, default_threshold=0.5
    )

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        per = [PerInvocationResult(score=1, eval_status=EvalStatus.PASSED) for _ in actual]
        return EvaluationResult(overall_score=1, overall_eval_status=EvalStatus.PASSED, per_invocation_results=per)


async def test_values_not_of_their_declared_type_are_validated_as_before() -> None:
    core = EvaluationCore(
        criteria={"loose_score_v1": 0.5}, registry=registry_with(_LooseScore), judge_configured=False,
        emitters=Emitters(None),
    )  # fmt: skip
    records = [r for r in await core.evaluate(request()) if r.metric_name == "loose_score_v1"]
    assert [(record.score, type(record.score)) for record in records] == [(1.0, float)]
    assert json.loads(records[0].model_dump_json())["score"] == 1.0
    _assert_as_validated(records)


async def test_each_planned_metric_keeps_its_own_fields_across_requests_and_criteria() -> None:
    """The fields a metric's records share (version, provenance, threshold) are worked out once per planned metric:
    two cores whose criteria differ only in a threshold, asked in turn, each give their own, as validation would."""
    cores = [
        EvaluationCore(criteria={"tool_trajectory_avg_score": t}, judge_configured=False, emitters=Emitters(None))
        for t in (1.0, 0.5)
    ]
    case = request().invocations[0]
    chosen = load_eval_set(AGENTEVALS / "eval_set_helm.json").eval_cases[0]
    records = []
    for _ in range(2):
        for core in cores:
            got = await core.evaluate(EvaluationRequest(invocations=[case], eval_case=chosen))
            records.append(next(r for r in got if r.metric_name == "tool_trajectory_avg_score"))
    assert [r.threshold for r in records] == [1.0, 0.5, 1.0, 0.5]
    versions = [r.evaluator_version for r in records]
    assert versions[0] == versions[2] != versions[1] == versions[3]
    assert [r.result_id for r in records[:2]] != [records[0].result_id] * 2
    _assert_as_validated(records)


class _Skipping(Evaluator):
    """A metric that does not evaluate its invocations, with a long explanation and no error type on the first one,
    and no per-invocation result on the others (the record falls back to the overall result)."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="skipping_v1", description="skips", criterion_type=BaseCriterion, default_threshold=0.5
    )

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        first = PerInvocationResult(eval_status=EvalStatus.NOT_EVALUATED, explanation="why " * 2000)
        return EvaluationResult(
            overall_eval_status=EvalStatus.NOT_EVALUATED, per_invocation_results=[first], explanation="overall"
        )


async def test_records_of_several_invocations_equal_validated_ones() -> None:
    """A request of three invocations (one record per invocation and metric, made from the metric's template and the
    invocation's fields): every record as validation makes it, its result id the digest of its own ids, a long
    explanation cut as before, the missing per-invocation results NOT_EVALUATED."""
    core = EvaluationCore(
        criteria={"skipping_v1": 0.5}, registry=registry_with(_Skipping),
        judge_configured=False, emitters=Emitters(None),
    )  # fmt: skip
    turns = [traced(index=i, agent=f"agent-{i}") for i in (1, 2, 3)]
    records = await core.evaluate(request(*turns, eval_set_id="set-1"))
    assert len(records) == 3 * (1 + len(EFFICIENCY_METRICS))
    assert {(r.trace_id, r.span_id, r.agent_name) for r in records} == {
        (t.trace_id, t.span_id, t.agent_name) for t in turns
    }
    assert {r.eval_set_id for r in records} == {"set-1"}
    skipped = [r for r in records if r.metric_name == "skipping_v1"]
    assert [r.error_type for r in skipped] == ["not_evaluated"] * 3
    assert skipped[0].explanation is not None and len(skipped[0].explanation) == 4000
    assert skipped[0].explanation.endswith("…") and skipped[1].explanation == "overall"
    assert len({r.result_id for r in records}) == len(records)
    _assert_as_validated(records)
