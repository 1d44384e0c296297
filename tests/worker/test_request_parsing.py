"""Reading a requests-topic message: a request as the exporter writes it, and clear errors for anything else."""

from __future__ import annotations

import json
import re

import pytest

from otel_eval.errors import InputError
from otel_eval.model.genai import Blob, Part
from otel_eval.worker.consumer import parse_request
from tests.transport._requests import request


def test_a_request_reads_back_as_written() -> None:
    written = request(1)
    written.invocations[0].invocation.user_content.parts.append(  # type: ignore[union-attr]
        Part(inline_data=Blob(data=b"\x00\x01 image", mime_type="image/png"))
    )
    assert parse_request(written.model_dump_json().encode(), "t/0@1") == written


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (b"", "t/0@1: empty message"),
        (b"\x00 not json", "t/0@1: not JSON"),
        (b"[1, 2]", "expected a JSON object (EvaluationRequest), got list"),
        (json.dumps({"invocations": []}).encode(), "schema_version None is not supported"),
        (json.dumps({"schema_version": 2, "invocations": []}).encode(), "schema_version 2 is not supported"),
        (json.dumps({"schema_version": 1, "invocations": [{"trace_id": 12}]}).encode(), "field invocations.0."),
        (b'{"schema_version": 1, "created_at": ' + b"9" * 5000 + b"}", "t/0@1: not JSON: Exceeds the limit (4300"),
    ],
    ids=["empty", "not-json", "not-an-object", "no-version", "unknown-version", "bad-field", "too-long-integer"],
)
def test_what_is_not_a_request_is_named(value: bytes, error: str) -> None:
    with pytest.raises(InputError, match=re.escape(error)):
        parse_request(value, "t/0@1")
