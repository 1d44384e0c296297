"""Which of a batch's invocations the worker evaluates (``HandledInvocations``), step by step through one batch's
life: sorted, evaluated, its publication failed and retried, settled, published."""

from __future__ import annotations

from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord
from otel_eval.worker._handled import HandledInvocations
from otel_eval.worker.results import ResultLedger
from tests.worker._core_helpers import traced


def _record(index: int, metric: str) -> EvaluationRecord:
    one = traced(index=index)
    return EvaluationRecord(
        result_id=f"{index}-{metric}",
        trace_id=one.trace_id,
        span_id=one.span_id,
        metric_name=metric,
        eval_status=EvalStatus.PASSED,
        label="pass",
    )


def test_a_batch_is_evaluated_once_and_its_records_kept_until_published() -> None:
    ledger = ResultLedger(100)
    handled = HandledInvocations(ledger)
    first, second, third = traced(index=1), traced(index=2), traced(index=3)
    ledger.add_invocation(third.trace_id, third.span_id, "")  # handled by an earlier batch

    # One batch: a new invocation, a copy of it, one the ledger holds, one of another tenant with the same ids.
    found = handled.sort([("", [first]), ("", [first]), ("", [third]), ("acme", [first])])
    assert (found.new, found.again, found.copies, found.kept) == ([0, 3], [1, 2], 2, [])

    # Evaluated: the records not published before are routed (one was: left out), and kept.
    ledger.add([_record(1, "published_before")], tenant="", invocations=False)
    evaluated = found.evaluated
    records = [_record(1, "tool_call_count_v1"), _record(1, "published_before")]
    routed = handled.routed(7, "", [first], records, evaluated)
    assert [(partition, r.metric_name, tenant) for partition, r, tenant in routed] == [(7, "tool_call_count_v1", "")]
    assert evaluated == [(first.trace_id, first.span_id, "")]

    # The publication failed; the retried batch (with a second invocation) publishes what was kept for the first.
    retry = handled.sort([("", [first]), ("", [second])])
    assert (retry.new, retry.again, retry.kept) == ([1], [0], routed)
    assert retry.evaluated == [(first.trace_id, first.span_id, "")]

    # Being settled, a copy in the next batch is not new work; once settled and published, the ledger says so.
    handled.settling(retry.evaluated)
    assert handled.sort([("", [first])]).new == []
    handled.settled(retry.evaluated)
    assert handled.sort([("", [first])]).kept == routed  # not published yet: still kept
    handled.published(retry.evaluated)
    after = handled.sort([("", [first])])
    assert (after.new, after.copies, after.kept) == ([], 1, [])


def test_a_rewind_forgets_the_batch_being_settled() -> None:
    handled = HandledInvocations(ResultLedger(100))
    first = traced(index=1)
    handled.settling([(first.trace_id, first.span_id, "")])
    assert handled.sort([("", [first])]).new == []
    handled.rewind()  # the batch was not committed: it is re-read and evaluated again
    assert handled.sort([("", [first])]).new == [0]


def test_the_records_kept_for_a_revoked_partition_are_dropped() -> None:
    handled = HandledInvocations(ResultLedger(100))
    first, second = traced(index=1), traced(index=2)
    found = handled.sort([("", [first]), ("", [second])])
    handled.routed(7, "", [first], [_record(1, "tool_call_count_v1")], found.evaluated)
    handled.routed(3, "", [second], [_record(2, "tool_call_count_v1")], found.evaluated)
    # The publication failed, and partition 7 went to another worker before this one retried: its next owner
    # evaluates the first invocation; this worker keeps only what it may still publish.
    handled.forget([7])
    assert handled.sort([("", [first])]).new == [0]
    assert [record.trace_id for _, record, _ in handled.sort([("", [second])]).kept] == [second.trace_id]
