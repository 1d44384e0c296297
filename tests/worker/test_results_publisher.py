"""The results publisher on a real broker: every record arrives, once, in order, keyed by trace id, on the results
partition matching its request's partition, also when a worker batch's results fill several producer batches."""

from __future__ import annotations

import pytest

from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord, result_id
from otel_eval.worker.consumer import create_producer
from otel_eval.worker.results import ResultLedger, ResultsPublisher, parse_record
from tests._kafka import create_topics, random_topic, read_topic
from tests.worker._harness import worker_settings

pytestmark = [pytest.mark.kafka, pytest.mark.integration]

PARTITIONS = 3


def _record(n: int, explanation_chars: int) -> EvaluationRecord:
    trace_id = f"{n:032x}"
    return EvaluationRecord(
        result_id=result_id(trace_id, f"{n:016x}", "tool_call_count_v1", None),
        trace_id=trace_id,
        span_id=f"{n:016x}",
        metric_name="tool_call_count_v1",
        eval_status=EvalStatus.INFORMATIONAL,
        label="informational",
        score=float(n),
        explanation="x" * explanation_chars,
    )


@pytest.mark.parametrize(
    ("count", "explanation_chars"),
    [(40, 0), (600, 4000)],  # a few small records; 2.4 MB of records, several producer batches per partition
    ids=["one-batch", "several-batches"],
)
async def test_every_record_arrives_once_in_order_on_its_partition(
    kafka_bootstrap: str, count: int, explanation_chars: int
) -> None:
    topic = random_topic("results")
    await create_topics(kafka_bootstrap, [topic], partitions=PARTITIONS)
    settings = worker_settings(kafka_bootstrap, kafka_results_topic=topic)
    producer = create_producer(settings, settings.security())
    await producer.start()
    try:
        publisher = ResultsPublisher(producer, topic)
        # Request partitions 0..4 over 3 results partitions: 3 and 4 wrap around to 0 and 1.
        pairs = [(n % 5, _record(n, explanation_chars)) for n in range(count)]
        assert await publisher.publish(pairs) == count
    finally:
        await producer.stop()

    messages = await read_topic(kafka_bootstrap, topic, expected=count, timeout=60)
    assert len(messages) == count
    by_partition: dict[int, list[int]] = {}
    for message in messages:
        record = parse_record(message.value)
        assert record is not None
        assert message.key == record.trace_id.encode()
        assert len(record.explanation or "") == explanation_chars
        by_partition.setdefault(message.partition, []).append(int(record.score or 0))
    expected = {p: [n for n in range(count) if n % 5 % PARTITIONS == p] for p in range(PARTITIONS)}
    assert by_partition == expected  # each partition in publication order, nothing lost, nothing twice


def test_the_ledger_remembers_results_invocations_and_traces() -> None:
    ledger = ResultLedger(capacity=3)
    first = [_record(1, 0), _record(1, 0).model_copy(update={"result_id": "other", "metric_name": "m"})]
    ledger.add(first)
    assert ledger.has_result(first[0].result_id) and ledger.has_result("other")
    assert ledger.has_invocation(first[0].trace_id, first[0].span_id) and ledger.has_trace(first[0].trace_id)
    ledger.add([_record(n, 0) for n in (2, 3, 4)])  # over capacity: the oldest go first
    assert not ledger.has_result(first[0].result_id) and not ledger.has_result("other")
    assert not ledger.has_invocation(first[0].trace_id, first[0].span_id)
    assert all(ledger.has_invocation(f"{n:032x}", f"{n:016x}") for n in (2, 3, 4))
    assert len(ledger) == 3


def test_a_record_is_published_as_its_json() -> None:
    """What goes to the results topic is exactly the record's ``model_dump_json`` (the public results schema), for a
    record of one invocation (no session fields) and one of a session window."""
    from otel_eval.worker.results import _json

    plain = _record(7, 10)
    windowed = plain.model_copy(update={"session_window": 2, "session_first_turn": 0, "session_last_turn": 3})
    for record in (plain, windowed):
        assert _json(record) == record.model_dump_json().encode()
        assert EvaluationRecord.model_validate_json(_json(record)) == record
    assert b"session_window" not in _json(plain) and b'"session_window":2' in _json(windowed)
