"""A worker's open session remembers (and holds the commit back for) only the turns it holds: the turns the byte
bound dropped, of a session that keeps getting turns and never goes idle, were each remembered until it closed."""

from __future__ import annotations

from aiokafka import TopicPartition

from otel_eval.evaluation.core import EvaluationCore
from otel_eval.evaluation.sessions import SessionLimits, turn_size
from otel_eval.model.messages import EvaluationRequest
from otel_eval.worker._sessions import OpenSessions
from otel_eval.worker.results import ResultLedger
from tests.transport._requests import traced_invocation


def test_turns_dropped_by_the_byte_bound_are_neither_remembered_nor_hold_the_commit() -> None:
    turns = [traced_invocation(n).model_copy(update={"session_id": "s"}) for n in range(40)]
    limits = SessionLimits(max_bytes=turn_size(turns[0]) + 1)  # the first turn fits, no second one does
    sessions = OpenSessions(EvaluationCore(judge_configured=False), limits, ResultLedger(100))
    first, other = TopicPartition("requests", 0), TopicPartition("requests", 1)
    sessions.hold(first, 0, EvaluationRequest(invocations=[turns[0]]))
    for offset, turn in enumerate(turns[1:], start=1):
        sessions.hold(other, offset, EvaluationRequest(invocations=[turn]))
    assert len(sessions) == 1
    assert sessions.committable(first, 40) == 0  # the held turn's record
    assert sessions.committable(other, 40) == 40  # only dropped turns were read there
    assert len(sessions._held[("", "s")].turns) == 1
