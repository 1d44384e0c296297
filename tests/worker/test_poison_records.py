"""Records that take too long to decode or rebuild: dead-lettered once, the good records behind them scored, and the
workers never leave the group (their event loops keep heartbeating while the poison is worked on elsewhere).

The poison is valid input that is merely huge (a 200,000-span chain in 50 messages on ``otlp_spans``; a
20,000-invocation request on ``otel_eval.requests``) and the record timeout is small (0.5 s), so the test holds however
fast reconstruction gets. A poison message may also be given up while decoding (on a loaded machine): either way it is
dead-lettered once, and nothing of the poison trace is evaluated.
"""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, TracesData

from otel_eval import semconv
from otel_eval._runtime.deadline import DeadlineExecutor, RecordTimeoutError
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, producer, random_topic, read_topic
from tests.transport._requests import request
from tests.waiting import wait_until, wait_until_async
from tests.worker._collector import agent_spans
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings

POISON_TRACE_ID = "ab" * 16
POISON_MESSAGES = 50
SPANS_PER_MESSAGE = 4_000
RECORD_TIMEOUT = 0.5


def _chain_message(first: int, count: int) -> bytes:
    """Spans ``first`` .. ``first + count - 1`` of one chain (each the parent of the next), as OTLP protobuf."""
    trace_id = bytes.fromhex(POISON_TRACE_ID)
    spans = []
    for index in range(first, first + count):
        operation = "invoke_agent" if index % 2 == 0 else "execute_tool"
        span = Span(
            trace_id=trace_id,
            span_id=(index + 1).to_bytes(8, "big"),
            name=f"{operation} poison",
            start_time_unix_nano=1_000 + index,
            end_time_unix_nano=10**11 - index,  # the chain spans 100 s: under the worker's max trace age
            attributes=[KeyValue(key=semconv.GEN_AI_OPERATION_NAME, value=AnyValue(string_value=operation))],
        )
        if index:
            span.parent_span_id = index.to_bytes(8, "big")
        spans.append(span)
    return TracesData(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])]).SerializeToString()


def _core(telemetry: MemoryTelemetry) -> EvaluationCore:
    return EvaluationCore(emitters=telemetry.emitters(), judge_configured=False)


@pytest.mark.kafka
@pytest.mark.integration
async def test_poison_records_are_dead_lettered_once_and_the_good_ones_scored_by_two_workers(
    kafka_bootstrap: str,
) -> None:
    requests_topic, spans_topic, dead_topic = random_topic("requests"), random_topic("spans"), random_topic("dead")
    await create_topics(kafka_bootstrap, [requests_topic, spans_topic, dead_topic], partitions=2)
    telemetries = [MemoryTelemetry(), MemoryTelemetry()]
    group = random_topic("group")
    workers = [
        Worker(
            worker_settings(
                kafka_bootstrap,
                kafka_requests_topic=requests_topic,
                kafka_spans_topic=spans_topic,
                kafka_dead_letter_topic=dead_topic,
                kafka_results_topic="",
                kafka_group_id=group,
                worker_sources="requests,otlp_spans",
                worker_record_timeout=RECORD_TIMEOUT,
                worker_max_batch_size=64,
                trace_idle_timeout=2.0,
                max_spans_per_trace=POISON_MESSAGES * SPANS_PER_MESSAGE,
            ),
            core=_core(telemetry),
            telemetry=telemetry.providers,
        )
        for telemetry in telemetries
    ]
    good_requests = [request(i) for i in range(4)]
    big = request(99)
    template = big.invocations[0]
    poison_request = big.model_copy(
        update={"invocations": [template.model_copy(update={"span_id": f"{i:016x}"}) for i in range(20_000)]}
    )
    good_spans = agent_spans(runs=3)
    good_traces = sorted({format(s.context.trace_id, "032x") for s in good_spans})

    async with running_worker(workers[0]), running_worker(workers[1]):
        await wait_until_async(lambda: all(w.assignment for w in workers), timeout=60, what="both workers assigned")
        assignments = [(w.assignment, w.metrics.snapshot()["assignments"]) for w in workers]
        async with producer(kafka_bootstrap, acks="all", compression_type="gzip", max_request_size=64 << 20) as prod:
            poison_key = POISON_TRACE_ID.encode()
            poison_offsets = []
            for part in range(POISON_MESSAGES):
                sent = await prod.send_and_wait(
                    spans_topic, _chain_message(part * SPANS_PER_MESSAGE, SPANS_PER_MESSAGE), key=poison_key
                )
                poison_offsets.append((sent.partition, sent.offset))
            sent = await prod.send_and_wait(
                requests_topic, poison_request.model_dump_json().encode(), key=poison_request.trace_id.encode()
            )
            poison_request_at = (sent.partition, sent.offset)
            for trace_id in good_traces:
                spans = [s for s in good_spans if format(s.context.trace_id, "032x") == trace_id]
                await prod.send_and_wait(spans_topic, encode_spans(spans).SerializeToString(), key=trace_id.encode())
            for good in good_requests:
                await prod.send_and_wait(requests_topic, good.model_dump_json().encode(), key=good.trace_id.encode())

        def scored() -> set[str]:
            return {e.trace_id for t in telemetries for e in t.events()}

        wanted = set(good_traces) | {r.trace_id for r in good_requests}
        await wait_until_async(lambda: wanted <= scored(), timeout=120, what="every good trace scored")
        await wait_until_async(
            lambda: sum(w.metrics.snapshot().get("dead_letters", 0) for w in workers) >= POISON_MESSAGES + 1,
            timeout=60,
            what="the poison records dead-lettered",
        )
        await asyncio.sleep(1.0)  # time for any duplicate dead letter or rebalance to show
        # No rebalance: neither worker left the group, and neither was given partitions again.
        assert [(w.assignment, w.metrics.snapshot()["assignments"]) for w in workers] == assignments

    events = [e for t in telemetries for e in t.events()]
    assert {e.trace_id for e in events} == wanted  # nothing of the poison was evaluated
    assert {e.metric for e in events} == set(EFFICIENCY_METRICS)
    dead = await read_topic(kafka_bootstrap, dead_topic, expected=POISON_MESSAGES + 1, timeout=30)
    where = [
        (
            dict(d.headers)[semconv.HEADER_DEAD_LETTER_TOPIC].decode(),
            int(dict(d.headers)[semconv.HEADER_DEAD_LETTER_PARTITION]),
            int(dict(d.headers)[semconv.HEADER_DEAD_LETTER_OFFSET]),
        )
        for d in dead
    ]
    expected_where = [(spans_topic, p, o) for p, o in poison_offsets] + [(requests_topic, *poison_request_at)]
    assert sorted(where) == sorted(expected_where)  # each poison record exactly once
    for record in dead:
        headers = dict(record.headers)
        assert headers[semconv.HEADER_DEAD_LETTER_ERROR_TYPE] == b"RecordTimeoutError"
        reason = headers[semconv.HEADER_DEAD_LETTER_ERROR].decode()
        assert f"took longer than {RECORD_TIMEOUT:g} s" in reason
        from_spans = headers[semconv.HEADER_DEAD_LETTER_TOPIC].decode() == spans_topic
        assert reason.startswith((f"rebuilding trace {POISON_TRACE_ID}", "decoding ") if from_spans else "parsing ")
    reasons = [dict(d.headers)[semconv.HEADER_DEAD_LETTER_ERROR].decode() for d in dead]
    assert any(r.startswith(f"rebuilding trace {POISON_TRACE_ID}") for r in reasons)  # the trace's rebuild gave up
    totals = [w.metrics.snapshot() for w in workers]
    assert sum(t.get(f"dead_letters.{semconv.DROP_RECORD_TIMEOUT}", 0) for t in totals) == POISON_MESSAGES + 1
    for telemetry in telemetries:
        telemetry.shutdown()


def test_a_step_past_its_deadline_is_abandoned_and_the_next_one_runs_at_once() -> None:
    import threading

    release = threading.Event()
    executor = DeadlineExecutor(0.1, name="test-deadline", max_abandoned=0)
    with pytest.raises(RecordTimeoutError, match=r"stuck step took longer than 0\.1 s"):
        executor.run("stuck step", release.wait)
    assert executor.run("next step", lambda: 42) == 42  # not queued behind the stuck one
    assert executor.abandoned_running == 1 and executor.exhausted
    release.set()
    assert wait_until(lambda: executor.abandoned_running == 0, timeout=5)
    assert not executor.exhausted
