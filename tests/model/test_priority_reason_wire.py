"""``priority_reason`` on the wire: a request's invocation and a result record carry it only when set, so what an
invocation in the sample makes reads as before (older readers that forbid unknown fields included), and one with it
round-trips; a value that is not a short lowercase word is refused, naming the field."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from otel_eval.errors import InputError
from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.worker.consumer import parse_request
from otel_eval.worker.results import parse_record
from tests.transport._requests import traced_invocation

RECORD = EvaluationRecord(
    result_id="r", trace_id="a" * 32, span_id="b" * 16, metric_name="m", eval_status=EvalStatus.FAILED, label="fail"
)


def test_a_record_without_a_reason_serialises_as_before_and_one_with_it_round_trips() -> None:
    before = set(RECORD.model_dump()) - {"priority_reason"}

    class OlderReader(BaseModel):  # a results-topic reader that forbids unknown fields, from before the field
        model_config = ConfigDict(extra="forbid")
        __annotations__ = {name: object for name in before}

    assert set(json.loads(RECORD.model_dump_json())) == before
    OlderReader.model_validate_json(RECORD.model_dump_json())
    rescued = RECORD.model_copy(update={"priority_reason": "error"})
    assert json.loads(rescued.model_dump_json())["priority_reason"] == "error"
    assert parse_record(rescued.model_dump_json().encode()) == rescued
    assert parse_record(RECORD.model_dump_json().encode()) == RECORD


def test_a_request_carries_the_reason_only_when_set_and_one_without_it_reads_as_before() -> None:
    plain = EvaluationRequest(invocations=[traced_invocation(1)])
    rescued = EvaluationRequest(invocations=[traced_invocation(2).model_copy(update={"priority_reason": "error"})])
    for form in (plain.to_wire(), plain.model_dump_json().encode()):
        assert "priority_reason" not in json.loads(form)["invocations"][0]
        assert parse_request(form, "requests[0]") == plain
        assert parse_request(form, "requests[0]").invocations[0].priority_reason is None
    for form in (rescued.to_wire(), rescued.model_dump_json().encode()):
        assert json.loads(form)["invocations"][0]["priority_reason"] == "error"
        assert parse_request(form, "requests[1]") == rescued


@pytest.mark.parametrize("value", ["Error", "x" * 33, "error label", "", "1st"])
def test_a_reason_that_is_not_a_short_lowercase_word_is_refused(value: str) -> None:
    invocation = json.loads(traced_invocation(3).model_dump_json())
    wire = json.dumps({"schema_version": 1, "invocations": [{**invocation, "priority_reason": value}]}).encode()
    with pytest.raises(InputError, match="priority_reason") as raised:
        parse_request(wire, "requests[7]")
    assert "requests[7]" in str(raised.value)
    with pytest.raises(ValidationError, match="priority_reason"):
        EvaluationRecord.model_validate({**RECORD.model_dump(), "priority_reason": value})
