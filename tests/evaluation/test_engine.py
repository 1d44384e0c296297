"""The embedded worker: a worker thread with its own asyncio loop running the worker core; a bounded queue that
drops and counts; force_flush and shutdown that honour their deadlines."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from otel_eval import semconv
from otel_eval.emit import Emitters
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.evaluation.embedded_worker import EmbeddedWorker
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord
from otel_eval.transport import ExportResult
from tests.worker._core_helpers import HangingEvaluator, registry_with, request, traced


@pytest.fixture(autouse=True)
def _reset_hanging() -> Iterator[None]:
    HangingEvaluator.release.clear()
    HangingEvaluator.started.clear()
    yield
    HangingEvaluator.release.set()


def _exporter(
    criteria: dict[str, float] | None = None, **options: int
) -> tuple[EmbeddedWorker, list[EvaluationRecord], PipelineMetrics]:
    records: list[EvaluationRecord] = []
    pipeline = PipelineMetrics()
    core = EvaluationCore(
        criteria=criteria,
        registry=registry_with(HangingEvaluator),
        judge_configured=False,
        emitters=Emitters(None, sinks=[records.extend]),
        pipeline=pipeline,
    )
    return EmbeddedWorker(core, pipeline=pipeline, **options), records, pipeline


def test_requests_are_evaluated_on_the_worker_thread() -> None:
    exporter, records, pipeline = _exporter()
    assert exporter.export([request(traced(index=n)) for n in range(1, 6)]) is ExportResult.SUCCESS
    assert exporter.force_flush(10_000)
    assert len(records) == 5 * len(EFFICIENCY_METRICS)
    assert {r.span_id for r in records} == {f"{n:016x}" for n in range(1, 6)}
    assert pipeline.snapshot()["invocations.evaluated"] == 5
    exporter.shutdown()


def test_a_full_queue_drops_and_counts_and_the_caller_never_waits() -> None:
    exporter, records, pipeline = _exporter({"hanging_v1": 0.5}, max_queue_size=3, concurrency=1)
    assert exporter.export([request(traced(index=1))]) is ExportResult.SUCCESS
    assert HangingEvaluator.started.wait(10)
    results = [exporter.export([request(traced(index=n))]) for n in range(2, 12)]
    assert results.count(ExportResult.SUCCESS) in (3, 4)  # 3 queued (+1 waiting for a slot, if popped)
    assert exporter.has_capacity() is (exporter.queue_size < 3)
    dropped = pipeline.snapshot()[f"invocations.dropped.{semconv.DROP_TRANSPORT_QUEUE_FULL}"]
    assert dropped == results.count(ExportResult.FAILURE)
    assert exporter.force_flush(100) is False  # a hanging metric: the deadline wins
    HangingEvaluator.release.set()
    assert exporter.force_flush(10_000)
    assert len({r.span_id for r in records}) == 11 - dropped
    assert exporter.has_capacity()
    exporter.shutdown()
    assert not exporter.has_capacity()


def test_shutdown_cancels_hanging_work_within_its_timeout_and_is_idempotent() -> None:
    exporter, records, pipeline = _exporter({"hanging_v1": 0.5}, max_queue_size=10, concurrency=2)
    exporter.export([request(traced(index=n)) for n in range(1, 6)])
    assert HangingEvaluator.started.wait(10)
    exporter.shutdown(timeout_millis=200)
    exporter.shutdown(timeout_millis=200)
    assert pipeline.snapshot()[f"invocations.dropped.{semconv.DROP_SHUTDOWN}"] == 5
    # The two requests stopped in flight hand on their finished metrics' records; the hanging metric's are lost.
    assert sorted((r.span_id, r.metric_name) for r in records) == sorted(
        (f"{n:016x}", name) for n in (1, 2) for name in EFFICIENCY_METRICS
    )
    assert exporter.export([request()]) is ExportResult.FAILURE
    assert pipeline.snapshot()[f"invocations.dropped.{semconv.DROP_SHUTDOWN}"] == 6
    assert exporter.queue_size == 0


def test_concurrency_bounds_the_requests_in_flight() -> None:
    exporter, records, _pipeline = _exporter({"hanging_v1": 0.5}, max_queue_size=50, concurrency=3)
    exporter.export([request(traced(index=n)) for n in range(1, 11)])
    assert HangingEvaluator.started.wait(10)
    assert exporter.force_flush(200) is False
    assert exporter.queue_size == 10 - 3 - 1  # 3 running, 1 popped and waiting for a slot
    HangingEvaluator.release.set()
    assert exporter.force_flush(10_000)
    assert len({r.span_id for r in records}) == 10
    exporter.shutdown()


def test_invalid_bounds_are_rejected() -> None:
    core = EvaluationCore(judge_configured=False, emitters=Emitters(None))
    with pytest.raises(ValueError, match="max_queue_size"):
        EmbeddedWorker(core, max_queue_size=0)
    with pytest.raises(ValueError, match="concurrency"):
        EmbeddedWorker(core, concurrency=0)


def test_the_old_name_of_the_embedded_worker_builder_still_builds_one_and_says_it_is_deprecated() -> None:
    from otel_eval.evaluation.embedded import embedded_exporter

    with pytest.warns(DeprecationWarning, match="embedded_worker"):
        worker = embedded_exporter(None, max_queue_size=3, sinks=[lambda records: None])
    assert isinstance(worker, EmbeddedWorker) and worker.scores_here
    assert worker.has_capacity()
    worker.shutdown(1_000)
