"""The backend readers' conversions (the readers themselves run against real Phoenix and MLflow servers in
tests/cli/test_backfill.py): Phoenix's null-spelled AnyValues, its derived OpenInference attributes, its float times,
and otel-eval's own evaluation spans told without their scope."""

from __future__ import annotations

from typing import Any

from otel_eval import semconv
from otel_eval.traces._normalize import Problems
from otel_eval.traces.backends._convert import spans_of
from otel_eval.traces.backends.phoenix import to_microseconds, without_derived

NULLS = {"array_value": None, "bool_value": None, "bytes_value": None, "double_value": None, "int_value": None,
         "kvlist_value": None, "string_value": None}  # fmt: skip


def _value(**set_: Any) -> dict[str, Any]:
    return {**NULLS, **set_}


def _span(attributes: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    """A span as Phoenix's ``GET /v1/projects/{p}/spans/otlpv1`` answers it (every AnyValue member spelled)."""
    return {
        "trace_id": "8fc1b6b09ac9463a8c4e5aaf0d1d2e3f",
        "span_id": "65884e2484426cfe",
        "parent_span_id": None,
        "name": "invoke_agent travel_assistant",
        "start_time_unix_nano": 1795940959746403072,
        "end_time_unix_nano": 1795940959746510080,
        "attributes": attributes,
        "events": None,
        "status": {"code": 0, "message": None},
        **more,
    }


def test_phoenix_spans_read_with_their_null_members_and_without_the_attributes_phoenix_derived() -> None:
    raw = _span(
        [
            {"key": "gen_ai.operation.name", "value": _value(string_value="invoke_agent")},
            {"key": "gen_ai.usage.input_tokens", "value": _value(int_value=40)},
            {"key": "gen_ai.request.temperature", "value": _value(double_value=0.5)},
            {"key": "openinference.span.kind", "value": _value(string_value="AGENT")},
            {"key": "llm.input_messages.0.message.role", "value": _value(string_value="user")},
            {"key": "input.value", "value": _value(string_value="Hi")},
            {"key": "session.id", "value": _value(string_value="s-1")},
            {"key": "gen_ai.conversation.id", "value": _value(string_value="s-1")},
        ]
    )
    problems = Problems("phoenix")
    (span,) = spans_of([raw], problems, "spans")
    span = to_microseconds(without_derived(span))
    assert problems.warnings == []
    assert dict(span.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.usage.input_tokens": 40,
        "gen_ai.request.temperature": 0.5,
        "gen_ai.conversation.id": "s-1",
    }
    assert (span.start_time_ns, span.end_time_ns) == (1795940959746403000, 1795940959746510000)


def test_an_openinference_agents_own_attributes_stay() -> None:
    raw = _span([{"key": "openinference.span.kind", "value": _value(string_value="AGENT")},
                 {"key": "input.value", "value": _value(string_value="Hi")}])  # fmt: skip
    (span,) = spans_of([raw], Problems("phoenix"), "spans")
    assert dict(without_derived(span).attributes) == {"openinference.span.kind": "AGENT", "input.value": "Hi"}


def test_an_evaluation_span_without_its_scope_is_known_as_otel_evals_own() -> None:
    evaluation = _span(
        [{"key": semconv.GEN_AI_OPERATION_NAME, "value": _value(string_value=semconv.GEN_AI_OPERATION_EVALUATION)}],
        span_id="1111111111111111",
        parent_span_id="65884e2484426cfe",
        name="evaluate response_match_score",
    )
    agent = _span([{"key": "gen_ai.operation.name", "value": _value(string_value="invoke_agent")}])
    spans = spans_of([agent, evaluation], Problems("phoenix"), "spans")
    assert [s.scope_name for s in spans] == [None, semconv.INSTRUMENTATION_SCOPE]


def test_a_malformed_span_is_skipped_with_a_warning() -> None:
    problems = Problems("mlflow")
    assert spans_of([{"name": "no ids"}], problems, "tr-1") == []
    assert len(problems.warnings) == 1 and "tr-1[0]" in problems.warnings[0]
