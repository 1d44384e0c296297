"""With a sample rate below 1, the invocations priority sampling rescues (left out by the rate, but errored or
disliked) carry ``otel_eval.priority.reason`` to their results: on the record, the result event, the evaluation span
and the score metrics' series; the invocations in the sample carry nothing, so results without it are an unbiased
sample. The travel agent's real spans go through the real SDK processor, in both isolations and to a remote worker."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import Status, StatusCode

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.demo import SCENARIOS, TravelAgent, golden_eval_set
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.transport import InMemoryInvocationExporter
from tests.processor.telemetry import Telemetry, hex_id
from tests.waiting import wait_until

RATE = 0.3
TURNS = (  # (in the sample by its trace id, root status ERROR, feedback) -> the reason its results carry
    ((True, False, None), None),
    ((True, True, None), None),  # errored, but in the sample: an unbiased member of it
    ((True, False, "thumbs_down"), None),
    ((False, False, None), "not evaluated"),
    ((False, True, None), semconv.PRIORITY_REASON_ERROR),
    ((False, False, "thumbs_down"), semconv.PRIORITY_REASON_NEGATIVE_FEEDBACK),
    ((False, True, "thumbs_down"), semconv.PRIORITY_REASON_ERROR),
)


class _ChosenTraceIds(RandomIdGenerator):
    """Trace ids whose low 64 bits put the next trace in the sample (0) or out of it (the largest), at any rate < 1."""

    in_sample = True

    def generate_trace_id(self) -> int:
        high = super().generate_trace_id() >> 64 << 64
        return high if self.in_sample else high | ((1 << 64) - 1)


def _workload(provider: TracerProvider, ids: _ChosenTraceIds) -> dict[str, str | None]:
    """The turns of :data:`TURNS`, each under a ``POST /chat`` local root; returns trace id -> expected reason."""
    expected: dict[str, str | None] = {}
    agent = TravelAgent(provider)
    for index, ((in_sample, error, feedback), reason) in enumerate(TURNS):
        ids.in_sample = in_sample
        with provider.get_tracer("web.server").start_as_current_span("POST /chat") as root:
            agent.run(SCENARIOS[index % len(SCENARIOS)])
            if feedback is not None:
                root.set_attribute("user.feedback", feedback)
            if error:
                root.set_status(Status(StatusCode.ERROR, "upstream failed"))
        if reason != "not evaluated":
            expected[hex_id(root.get_span_context().trace_id, 32)] = reason
    return expected


PLAIN = ProcessorSettings(sample_rate=RATE, metrics=("tool_call_count_v1",))  # plain views, no ADK model made
FULL = ProcessorSettings(sample_rate=RATE, metrics=("tool_call_count_v1",), eval_set=golden_eval_set())  # pairs: full


@pytest.mark.parametrize("settings", [PLAIN, FULL], ids=["plain", "full"])
def test_rescued_results_carry_the_reason_and_sampled_ones_nothing(settings: ProcessorSettings) -> None:
    ids = _ChosenTraceIds()
    telemetry = Telemetry(tracer_provider=TracerProvider(id_generator=ids))
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(settings=settings, sinks=[records.extend], **telemetry.providers())
    telemetry.tracer_provider.add_span_processor(processor)
    telemetry.add_exporting_processor()
    try:
        expected = _workload(telemetry.tracer_provider, ids)
        assert processor.force_flush(30_000)
        assert {r.trace_id: r.priority_reason for r in records} == expected
        assert len(records) == len(expected)

        events = {
            hex_id(e.log_record.trace_id, 32): e.log_record.attributes.get(semconv.OTEL_EVAL_PRIORITY_REASON)
            for e in telemetry.result_events()
        }
        assert events == expected
        spans = {
            hex_id(s.context.trace_id, 32): s.attributes.get(semconv.OTEL_EVAL_PRIORITY_REASON)
            for s in telemetry.evaluation_spans()
        }
        assert spans == expected

        counted: dict[Any, int] = {}
        for point in telemetry.metric_points(semconv.METRIC_EVALUATION_RESULTS):
            reason = point.attributes.get(semconv.OTEL_EVAL_PRIORITY_REASON)
            counted[reason] = counted.get(reason, 0) + point.value
        assert counted == {reason: list(expected.values()).count(reason) for reason in set(expected.values())}
        scored = {
            point.attributes.get(semconv.OTEL_EVAL_PRIORITY_REASON)
            for point in telemetry.metric_points(semconv.METRIC_EVALUATION_SCORE)
        }
        assert scored == set(expected.values())
    finally:
        processor.shutdown()
        telemetry.shutdown()


def test_requests_to_a_remote_worker_carry_the_reason_on_the_wire() -> None:
    ids = _ChosenTraceIds()
    provider = TracerProvider(id_generator=ids)
    exporter = InMemoryInvocationExporter()
    processor = EvaluationSpanProcessor(exporter=exporter, settings=ProcessorSettings(sample_rate=RATE))
    provider.add_span_processor(processor)
    try:
        expected = _workload(provider, ids)
        assert processor.force_flush(30_000)
        requests = exporter.get_finished_requests()
        assert {r.trace_id: r.invocations[0].priority_reason for r in requests} == expected
        for request in requests:
            wire = request.to_wire()
            assert (b'"priority_reason"' in wire) == (request.invocations[0].priority_reason is not None)
            assert EvaluationRequest.model_validate_json(wire) == request
    finally:
        processor.shutdown()


@pytest.mark.integration
def test_the_evaluation_process_gives_its_results_the_reason() -> None:
    ids = _ChosenTraceIds()
    provider = TracerProvider(id_generator=ids)
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(settings=replace(PLAIN, isolation="process"), sinks=[records.extend])
    provider.add_span_processor(processor)
    try:
        expected = _workload(provider, ids)
        assert processor.force_flush(60_000)
        assert wait_until(lambda: len(records) >= len(expected), timeout=30)
        assert {r.trace_id: r.priority_reason for r in records} == expected
    finally:
        processor.shutdown(30_000)
