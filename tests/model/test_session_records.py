"""Session fields of :class:`EvaluationRecord` on the wire, and the ids of session results."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord, result_id, session_result_id

RECORD = EvaluationRecord(
    result_id="r", trace_id="a" * 32, span_id="b" * 16, metric_name="m", eval_status=EvalStatus.PASSED, label="pass"
)


def test_a_record_without_a_session_window_serialises_as_before_and_one_with_it_round_trips() -> None:
    before_sessions = set(RECORD.model_dump()) - {"session_window", "session_first_turn", "session_last_turn"}

    class OlderReader(BaseModel):  # a reader that forbids unknown fields, with the fields before sessions
        model_config = ConfigDict(extra="forbid")
        __annotations__ = {name: object for name in before_sessions}

    assert set(json.loads(RECORD.model_dump_json())) == before_sessions
    OlderReader.model_validate_json(RECORD.model_dump_json())
    windowed = RECORD.model_copy(update={"session_window": 1, "session_first_turn": 2, "session_last_turn": 3})
    data = json.loads(windowed.model_dump_json())
    assert (data["session_window"], data["session_first_turn"], data["session_last_turn"]) == (1, 2, 3)
    assert EvaluationRecord.model_validate_json(windowed.model_dump_json()) == windowed
    with pytest.raises(ValidationError):  # (the older reader does refuse the fields it does not know)
        OlderReader.model_validate_json(windowed.model_dump_json())


def test_session_result_ids_are_deterministic_per_window_and_differ_from_invocation_ids() -> None:
    # A window is named by its first and last turns' (trace id, span id), not by their indexes in the session: a
    # Kafka worker that rebuilds the window from a later record counts the turns from there, and must give the same ids.
    first, last, later = ("t0", "p0"), ("t", "p"), ("t3", "p3")
    same = session_result_id("s", first, last, "t", "p", "m", "v")
    assert same == session_result_id("s", first, last, "t", "p", "m", "v")  # the same window judged again: a duplicate
    assert same != session_result_id("s", first, later, "t", "p", "m", "v")  # the window grew: a new result
    assert same != session_result_id("s", last, last, "t", "p", "m", "v")  # a window of later turns only
    assert same != session_result_id("s2", first, last, "t", "p", "m", "v")
    assert same != session_result_id("s", first, last, "t", "p", "m", "v2")  # another evaluator
    assert same != result_id("t", "p", "m", "v")
