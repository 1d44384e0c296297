"""Requests whose metrics all run inline (no judge, no deadline needed) are scored and emitted on the thread that
hands them on, with no further hand-off, exactly as on the event loop; any other request goes to the worker's loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import pytest

from otel_eval.emit import Emitters
from otel_eval.evaluation import Pairing, pair_invocations
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.evaluation.embedded_worker import EmbeddedWorker
from otel_eval.metrics import EFFICIENCY_METRICS, Evaluator, MetricInfo, default_registry
from otel_eval.model import (
    BaseCriterion,
    ConversationScenario,
    EvalStatus,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    TracedInvocation,
)
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.reconstruct import rebuild_traces
from otel_eval.transport import ExportResult
from tests.reconstruct.recorded import RECORDED_TRACE_FILES, demo_spans, file_spans
from tests.worker._core_helpers import HangingEvaluator, registry_with, request, traced


class _WaitingDespiteInline(Evaluator):
    """Declares that it never waits, and waits."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="waits_inline_v1", description="waits", criterion_type=BaseCriterion, default_threshold=0.5
    )
    runs_inline = True

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        await asyncio.sleep(0)
        return self.mean_result([PerInvocationResult(score=1.0, eval_status=self.status_of(1.0)) for _ in actual])


@pytest.fixture(autouse=True)
def _released() -> Iterator[None]:
    HangingEvaluator.release.set()  # these tests never hold the hanging metric
    yield
    HangingEvaluator.release.clear()


def _core(criteria: dict[str, float] | None, records: list[EvaluationRecord], threads: list[str]) -> EvaluationCore:
    def sink(delivered: Sequence[EvaluationRecord]) -> None:
        records.extend(delivered)
        threads.append(threading.current_thread().name)

    return EvaluationCore(
        criteria=criteria,
        registry=registry_with(HangingEvaluator, _WaitingDespiteInline),
        judge_configured=False,
        emitters=Emitters(None, sinks=[sink]),
    )


def test_a_request_without_a_judge_is_scored_and_emitted_on_the_exporting_thread_before_export_returns() -> None:
    records: list[EvaluationRecord] = []
    threads: list[str] = []
    exporter = EmbeddedWorker(_core(None, records, threads))
    assert exporter.export([request(traced(index=n)) for n in (1, 2)]) is ExportResult.SUCCESS
    assert threads == [threading.current_thread().name] * 2  # no hand-off: done by the time export returns
    assert sorted(r.metric_name for r in records) == sorted(EFFICIENCY_METRICS * 2)
    exporter.shutdown()


def test_a_request_with_a_metric_that_needs_the_loop_is_evaluated_on_the_worker_thread() -> None:
    records: list[EvaluationRecord] = []
    threads: list[str] = []
    exporter = EmbeddedWorker(_core({"hanging_v1": 0.5}, records, threads))
    assert exporter.export([request(traced(index=1))]) is ExportResult.SUCCESS
    assert exporter.force_flush(10_000)
    assert threads == ["OtelEvalEmbeddedWorker"]
    assert {r.metric_name for r in records} == {"hanging_v1", *EFFICIENCY_METRICS}
    exporter.shutdown()


def test_evaluate_inline_emits_the_same_records_as_evaluate() -> None:
    inline: list[EvaluationRecord] = []
    on_loop: list[EvaluationRecord] = []
    returned = _core(None, inline, []).evaluate_inline(request(traced(index=3)))
    asyncio.run(_core(None, on_loop, []).evaluate(request(traced(index=3))))
    assert inline and returned == inline
    ignore = {"evaluated_at"}  # when
    assert [r.model_dump(exclude=ignore) for r in inline] == [r.model_dump(exclude=ignore) for r in on_loop]


def test_evaluate_inline_leaves_a_request_that_needs_the_loop_untouched() -> None:
    records: list[EvaluationRecord] = []
    assert _core({"hanging_v1": 0.5}, records, []).evaluate_inline(request()) is None
    assert records == []


def test_a_metric_that_waits_although_it_runs_inline_is_not_evaluated_and_says_why() -> None:
    records: list[EvaluationRecord] = []
    _core({"waits_inline_v1": 0.5}, records, []).evaluate_inline(request())
    (waited,) = [r for r in records if r.metric_name == "waits_inline_v1"]
    assert waited.eval_status is EvalStatus.NOT_EVALUATED
    assert waited.error_type == "RuntimeError" and "runs_inline" in (waited.explanation or "")


class _WholeConversation(Evaluator):
    """A conversation-level metric that needs no loop: the number of turns it was given."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="turns_v1",
        description="turns",
        criterion_type=BaseCriterion,
        default_threshold=0.5,
        conversation_level=True,
    )
    runs_inline = True

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        return self.mean_result([PerInvocationResult(score=1.0, eval_status=self.status_of(1.0)) for _ in actual])


def test_the_embedded_worker_pairs_and_plans_each_request_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The request is paired and planned by one call, which also says whether its turns wait for their session:
    the real pairing function, counted."""
    from otel_eval.evaluation import core as core_module

    pairings: list[int] = []
    real = pair_invocations

    def counted(*args: Any, **kwargs: Any) -> Pairing:
        pairings.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(core_module, "pair_invocations", counted)
    records: list[EvaluationRecord] = []
    core = EvaluationCore(
        criteria={"turns_v1": 0.5},
        registry=registry_with(_WholeConversation),
        judge_configured=False,
        emitters=Emitters(None, sinks=[records.extend]),
    )
    exporter = EmbeddedWorker(core)
    in_session = [traced(index=n).model_copy(update={"session_id": "s"}) for n in (1, 2)]
    assert exporter.export([request(turn) for turn in in_session]) is ExportResult.SUCCESS
    assert len(pairings) == 2  # one per request: not again to ask whether it waits for its session
    assert exporter.open_sessions == 1  # its turns are held for the window
    assert {r.metric_name for r in records} == set(EFFICIENCY_METRICS)  # the per-invocation metrics, at once
    exporter.shutdown(10_000)  # closes the window: the conversation-level metric scores both turns
    assert sorted(r.span_id for r in records if r.metric_name == "turns_v1") == [f"{n:016x}" for n in (1, 2)]


TRACE_FILES = RECORDED_TRACE_FILES


def _recorded_invocations() -> list[TracedInvocation]:
    """Every invocation of the recorded framework, ADK, hostile traces and of the demo agent's scenarios."""
    spans = [file_spans(path) for path in TRACE_FILES] + [found for _, found in demo_spans()]
    return [invocation for found in spans for trace in rebuild_traces(found) for invocation in trace.invocations]


def test_the_efficiency_metrics_score_recorded_traces_synchronously_as_their_coroutine_does() -> None:
    """``evaluate_now`` (what the in-thread processor and the Kafka worker call: no coroutine) gives what awaiting
    ``evaluate`` gives, on every recorded trace, one invocation at a time and all together; and the records
    ``start`` makes on the caller's thread equal those the event loop's path makes."""
    invocations = _recorded_invocations()
    assert len(invocations) > 50
    for name in EFFICIENCY_METRICS:
        metric = default_registry().create(name)
        assert metric.runs_inline
        for actual in [*([i] for i in invocations), invocations]:
            now = metric.evaluate_now(actual)
            assert now == asyncio.run(metric.evaluate(actual))
            assert now == Evaluator.evaluate_now(metric, actual)  # the protocol's default: one step of evaluate
            assert [r.score for r in now.per_invocation_results] and now.overall_eval_status is EvalStatus.INFORMATIONAL
    inline: list[EvaluationRecord] = []
    on_loop: list[EvaluationRecord] = []
    for invocation in invocations:
        started = _core(None, inline, []).start(EvaluationRequest(invocations=[invocation]))
        assert started.on_loop is None and started.records
        asyncio.run(_core(None, on_loop, []).evaluate(EvaluationRequest(invocations=[invocation])))
    assert len(inline) == len(EFFICIENCY_METRICS) * len(invocations)
    ignore = {"evaluated_at"}  # when
    assert [r.model_dump(exclude=ignore) for r in inline] == [r.model_dump(exclude=ignore) for r in on_loop]
