"""What the root span says about how an invocation went (status ERROR, the user's feedback), read for the judge
budget's priority, whatever the convention (ADK spans, GenAI semantic conventions)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from otel_eval.judge.priority import PriorityPolicy
from otel_eval.model import TracedInvocation
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import read_trace_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"


def _rebuilt(path: Path, **root_changes: object) -> TracedInvocation:
    spans = read_trace_file(path).spans
    [first] = rebuild_traces(spans)[0].invocations[:1]
    changed = [dataclasses.replace(s, **root_changes) if s.span_id == first.span_id else s for s in spans]
    return rebuild_traces(changed)[0].invocations[0]


@pytest.mark.parametrize("name", ["helm.json", "otel_genai_convention_spans.json"])
def test_error_status_and_feedback_of_the_root_span_are_read(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = EXAMPLES / name
    plain = _rebuilt(path)
    assert (plain.ended_in_error, plain.feedback) == (False, None)
    assert not PriorityPolicy().is_priority(plain, failed_deterministic=False)

    root = next(s for s in read_trace_file(path).spans if s.span_id == plain.span_id)
    errored = _rebuilt(path, status_code="ERROR")
    assert errored.ended_in_error and PriorityPolicy().is_priority(errored, failed_deterministic=False)

    disliked = _rebuilt(path, attributes={**root.attributes, "user.feedback": "Thumbs_Down"})
    assert disliked.feedback == "Thumbs_Down" and PriorityPolicy().is_priority(disliked, failed_deterministic=False)

    monkeypatch.setenv("OTEL_EVAL_PRIORITY_FEEDBACK_ATTRIBUTE", "app.rating")
    monkeypatch.setenv("OTEL_EVAL_PRIORITY_FEEDBACK_VALUES", "1, 2")
    rated = _rebuilt(path, attributes={**root.attributes, "app.rating": 2, "user.feedback": "negative"})
    assert rated.feedback == "2" and PriorityPolicy.from_env().is_priority(rated, failed_deterministic=False)
    assert not PriorityPolicy.from_env().is_priority(disliked, failed_deterministic=False)
