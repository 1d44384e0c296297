"""Bad ADK traces: malformed or mistyped attributes, missing parents, cycles, huge values, old span names.

Each yields a partial result with a warning naming the span and attribute, never an exception and never a wrong text.
The base trace is the real ADK 2.5.0 capture (strands-evals ``adk_live_spans.json``), mutated.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_eval import semconv
from otel_eval.model import IntermediateData, TracedInvocation, content_text
from otel_eval.reconstruct import rebuild_trace
from otel_eval.reconstruct.adk import AdkConvention
from otel_eval.reconstruct.adk_v2 import AdkV2Convention
from otel_eval.reconstruct.base import TraceInvocations
from otel_eval.traces import Span, read_trace_file

ADK_LIVE = Path(__file__).resolve().parents[1] / "data" / "traces" / "strands-evals" / "adk_live_spans.json"
TOOL_SPAN = "execute_tool calculator"


def base_spans() -> list[Span]:
    return sorted(read_trace_file(ADK_LIVE).spans, key=lambda s: s.start_time_ns)


def mutate(spans: Sequence[Span], name: str, change: Callable[[dict[str, Any]], None], nth: int = 0) -> list[Span]:
    """A copy of ``spans`` where the ``nth`` span called ``name`` has its attributes changed by ``change``."""
    out, seen = [], 0
    for span in spans:
        if span.name == name:
            if seen == nth:
                attributes = dict(span.attributes)
                change(attributes)
                span = dataclasses.replace(span, attributes=attributes)
            seen += 1
        out.append(span)
    return out


def setting(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(attributes: dict[str, Any]) -> None:
        attributes[key] = value

    return change


def rebuilt(spans: Sequence[Span]) -> tuple[TraceInvocations, TracedInvocation]:
    result = rebuild_trace(spans)
    assert result.convention == "adk"
    [invocation] = result.invocations
    return result, invocation


def data(traced: TracedInvocation) -> IntermediateData:
    assert isinstance(traced.invocation.intermediate_data, IntermediateData)
    return traced.invocation.intermediate_data


def test_the_unmutated_base_is_clean() -> None:
    result, traced = rebuilt(base_spans())
    assert result.warnings == [] and traced.warnings == []
    assert content_text(traced.invocation.user_content) == "What is 15 multiplied by 37?"


def test_request_that_is_not_json() -> None:
    broken = '{"model": "gemini", "contents": [tru'
    spans = mutate(base_spans(), "call_llm", setting(semconv.ADK_LLM_REQUEST, broken))
    _, traced = rebuilt(spans)
    assert any(semconv.ADK_LLM_REQUEST in w and "not valid JSON" in w for w in traced.warnings)
    # The agent's next request starts with the same history.
    assert content_text(traced.invocation.user_content) == "What is 15 multiplied by 37?"
    assert [c.name for c in data(traced).tool_uses] == ["calculator"]
    assert content_text(traced.invocation.final_response) == "15 multiplied by 37 is 555."

    spans = mutate(spans, "call_llm", setting(semconv.ADK_LLM_REQUEST, broken), nth=1)
    _, traced = rebuilt(spans)
    assert any("no user message" in w for w in traced.warnings)
    assert traced.invocation.user_content.parts == []  # unknown, not guessed


def test_response_that_is_not_an_object_or_not_content() -> None:
    spans = mutate(base_spans(), "call_llm", setting(semconv.ADK_LLM_RESPONSE, "[1, 2]"), nth=1)
    spans = mutate(spans, "call_llm", setting(semconv.ADK_LLM_RESPONSE, '{"content": {"parts": "oops"}}'), nth=0)
    _, traced = rebuilt(spans)
    assert any("not a JSON object" in w for w in traced.warnings)
    assert any("not a genai Content" in w for w in traced.warnings)
    assert traced.invocation.final_response is None
    # The tool ran but no model response asked for it, so ADK's events would not hold it either.
    assert data(traced).tool_uses == []
    assert any("match no function call" in w for w in traced.warnings)


def test_attributes_of_the_wrong_type() -> None:
    spans = mutate(base_spans(), "call_llm", setting(semconv.ADK_LLM_REQUEST, 42))
    spans = mutate(spans, TOOL_SPAN, setting(semconv.ADK_TOOL_RESPONSE, ["not", "an", "object"]))
    spans = mutate(spans, TOOL_SPAN, setting(semconv.ADK_TOOL_CALL_ARGS, '{"expression": "15 *'))
    _, traced = rebuilt(spans)
    assert any(semconv.ADK_LLM_REQUEST in w and "int" in w for w in traced.warnings)
    assert any(semconv.ADK_TOOL_CALL_ARGS in w and "not valid JSON" in w for w in traced.warnings)
    # The call's arguments come from the model response, which is intact. A result that is not an object is kept,
    # wrapped the way ADK wraps a non-dict tool return (the rule every convention shares, see _values).
    assert [(c.name, c.args) for c in data(traced).tool_uses] == [("calculator", {"expression": "15 * 37"})]
    assert [r.response for r in data(traced).tool_responses] == [{"result": ["not", "an", "object"]}]


def test_missing_parents_fall_back_to_ids_and_time() -> None:
    kept = [s for s in base_spans() if s.name in ("call_llm", TOOL_SPAN)]
    orphans = [dataclasses.replace(s, parent_span_id="ffffffffffffffff") for s in kept]
    result, traced = rebuilt(orphans)
    assert [(c.name, c.args) for c in data(traced).tool_uses] == [("calculator", {"expression": "15 * 37"})]
    assert [r.response for r in data(traced).tool_responses] == [{"result": "555"}]
    assert content_text(traced.invocation.final_response) == "15 multiplied by 37 is 555."
    assert any("placed by time" in w for w in result.warnings)
    assert any("no runner or agent span" in w for w in traced.warnings)
    assert traced.span_id == kept[0].span_id


def test_parent_cycle_terminates() -> None:
    spans = base_spans()
    by_name = {s.name: s for s in spans}
    root = by_name["invocation"]
    agent = by_name["invoke_agent math_agent"]
    cyclic = [dataclasses.replace(s, parent_span_id=agent.span_id) if s is root else s for s in spans]
    _, traced = rebuilt(cyclic)
    assert [c.name for c in data(traced).tool_uses] == ["calculator"]


def test_ten_megabyte_attribute() -> None:
    huge = "x" * 10_000_000
    response = {"content": {"role": "model", "parts": [{"text": huge}]}, "finish_reason": "STOP"}
    spans = mutate(base_spans(), "call_llm", setting(semconv.ADK_LLM_RESPONSE, json.dumps(response)), nth=1)
    _, traced = rebuilt(spans)
    assert len(content_text(traced.invocation.final_response)) == 10_000_000


def test_very_old_agent_run_names_without_agent_attributes() -> None:
    def old(span: Span) -> Span:
        attributes = {k: v for k, v in span.attributes.items() if k != semconv.GEN_AI_AGENT_NAME}
        name = "agent_run [math_agent]" if span.name.startswith("invoke_agent") else span.name
        return dataclasses.replace(span, name=name, attributes=attributes)

    spans = [old(s) for s in base_spans() if not s.name.startswith("generate_content")]
    assert AdkConvention().detect(spans)
    _, traced = rebuilt(spans)
    assert traced.agent_name == "math_agent"
    assert data(traced).tool_responses[0].response == {"result": "555"}
    app_details = traced.invocation.app_details
    assert app_details is not None and list(app_details.agent_details) == ["math_agent"]


def test_not_adk_is_left_to_other_conventions() -> None:
    spans = [s for s in base_spans() if s.name.startswith("invoke_agent")]
    assert not AdkConvention().detect(spans)
    assert not AdkV2Convention().detect(spans)


def _v2_trace(output_messages: Any, tool_arguments: Any) -> list[Span]:
    trace_id, start = "ab" * 16, 1_700_000_000_000_000_000

    def span(span_id: str, parent: str | None, name: str, offset: int, **attributes: Any) -> Span:
        return Span(trace_id, span_id, parent, name, start + offset, start + offset + 10, attributes)

    return [
        span("0000000000000001", None, "invoke_workflow a", 0, **{"gen_ai.operation.name": "invoke_workflow"}),
        span("0000000000000002", "0000000000000001", "invoke_agent a", 1, **{"gen_ai.agent.name": "a"}),
        span(
            "0000000000000003",
            "0000000000000002",
            "generate_content m",
            2,
            **{
                "gen_ai.operation.name": "generate_content",
                semconv.ADK_INVOCATION_ID: "e-1",
                semconv.GEN_AI_AGENT_NAME: "a",
                semconv.GEN_AI_INPUT_MESSAGES: '[{"role":"user","parts":[{"type":"text","content":"hi"}]}]',
                semconv.GEN_AI_OUTPUT_MESSAGES: output_messages,
            },
        ),
        span(
            "0000000000000004",
            "0000000000000002",
            "execute_tool t",
            3,
            **{semconv.GEN_AI_TOOL_NAME: "t", semconv.GEN_AI_TOOL_CALL_ARGUMENTS: tool_arguments},
        ),
    ]


def test_v2_malformed_messages_and_arguments() -> None:
    result = rebuild_trace(_v2_trace("not json at all", '{"x": [1, 2'))
    assert result.convention == "adk_v2"
    [traced] = result.invocations
    assert content_text(traced.invocation.user_content) == "hi"
    assert traced.invocation.final_response is None
    assert any(semconv.GEN_AI_OUTPUT_MESSAGES in w and "not valid JSON" in w for w in traced.warnings)
    assert any(semconv.GEN_AI_TOOL_CALL_ARGUMENTS in w and "not valid JSON" in w for w in traced.warnings)


_GARBAGE = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.sampled_from(["{}", "[]", "null", '{"content": null}', '{"contents": 5}', '{"parts": [{"text": 1}]}', "{"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    position=st.integers(min_value=0, max_value=6),
    key=st.sampled_from(
        [
            semconv.ADK_LLM_REQUEST,
            semconv.ADK_LLM_RESPONSE,
            semconv.ADK_TOOL_CALL_ARGS,
            semconv.ADK_TOOL_RESPONSE,
            semconv.ADK_INVOCATION_ID,
            semconv.ADK_SESSION_ID,
            semconv.GEN_AI_TOOL_CALL_ID,
            semconv.GEN_AI_AGENT_NAME,
            semconv.GEN_AI_USAGE_INPUT_TOKENS,
            semconv.GEN_AI_OUTPUT_MESSAGES,
        ]
    ),
    value=_GARBAGE,
)
def test_any_garbage_attribute_never_raises(position: int, key: str, value: Any) -> None:
    spans = base_spans()
    target = spans[position]
    attributes = dict(target.attributes)
    attributes[key] = value
    spans[position] = dataclasses.replace(target, attributes=attributes)
    for convention in (AdkConvention(), AdkV2Convention()):
        result = convention.rebuild(spans)  # called directly: no dispatcher safety net
        for traced in result.invocations:
            traced.invocation.model_dump_json()
