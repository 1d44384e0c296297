"""``Worker(core=...)`` took any ``RequestEvaluator`` (an ``evaluate(request)`` coroutine) before it took only an
``EvaluationCore``: that form keeps working for one minor version, with a ``DeprecationWarning`` naming the
replacement, each request scored by the caller's evaluator and its records published."""

from __future__ import annotations

import warnings

import pytest

from otel_eval.evaluation.core import EvaluationCore
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, producer, random_topic, read_topic
from tests.transport._requests import request
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings


class TaggingEvaluator:
    """A caller's evaluator of the earlier form: it wraps the evaluation core and remembers what it scored."""

    def __init__(self, core: EvaluationCore) -> None:
        self.core = core
        self.scored: list[str] = []
        self.stopped = False

    async def evaluate(self, request: EvaluationRequest) -> list[EvaluationRecord]:
        self.scored.append(request.trace_id)
        return await self.core.evaluate(request)

    def shutdown(self, timeout_millis: int = 30000) -> None:
        self.stopped = True


@pytest.mark.kafka
@pytest.mark.integration
async def test_a_request_evaluator_as_the_core_still_scores_with_a_deprecation_warning(kafka_bootstrap: str) -> None:
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic])
    telemetry = MemoryTelemetry()
    evaluator = TaggingEvaluator(EvaluationCore(emitters=telemetry.emitters(), judge_configured=False))
    settings = worker_settings(
        kafka_bootstrap,
        kafka_requests_topic=requests_topic,
        kafka_results_topic=results_topic,
        kafka_group_id=random_topic("group"),
    )
    with pytest.warns(DeprecationWarning, match=r"Worker\(core=TaggingEvaluator\(\.\.\.\)\)") as caught:
        worker = Worker(settings, core=evaluator, telemetry=telemetry.providers)
    (warning,) = caught.list
    assert warning.filename == __file__  # it points at the caller's line
    assert "stops working in otel-eval 0.3.0: pass an otel_eval.evaluation.core.EvaluationCore" in str(warning.message)
    sent = [request(n) for n in range(2)]
    expected = len(sent) * len(EFFICIENCY_METRICS)
    try:
        async with running_worker(worker):
            async with producer(kafka_bootstrap) as prod:
                for one in sent:
                    await prod.send_and_wait(requests_topic, one.model_dump_json().encode(), key=b"k")
            await wait_until_async(lambda: len(telemetry.events()) >= expected, timeout=60, what="the results")
        published = await read_topic(kafka_bootstrap, results_topic, expected=expected)
        assert sorted(evaluator.scored) == sorted(one.trace_id for one in sent)
        assert {EvaluationRecord.model_validate_json(r.value).trace_id for r in published} == set(evaluator.scored)
        assert len(published) == expected
        assert evaluator.stopped  # the worker's shutdown reaches it, as before
    finally:
        telemetry.shutdown()


def test_an_evaluation_core_is_used_as_it_is_and_warns_nothing() -> None:
    core = EvaluationCore(judge_configured=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        worker = Worker(worker_settings("127.0.0.1:9"), core=core)
    assert worker.core is core
