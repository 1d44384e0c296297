"""Honest context: judged metrics never judge an invocation we could not fully see, or a prompt that would not fit the
judge model's window; they report NOT_EVALUATED with a specific error.type and the judge (the real client, against
the loopback Gemini server) receives no request. Deterministic metrics are unaffected."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.genai import types as genai_types

from otel_eval.judge.budget import CHARS_PER_TOKEN
from otel_eval.judge.retry import CONTEXT_OVERFLOW, INCOMPLETE_CONTEXT
from otel_eval.judge.settings import UNKNOWN_MODEL_INPUT_TOKEN_LIMIT, input_token_limit
from otel_eval.metrics import Evaluator, default_registry
from otel_eval.metrics._judge_context_check import unanswered_tool_calls
from otel_eval.metrics._reference import CONTENT_NOT_CAPTURED
from otel_eval.metrics.per_turn_user_simulator_quality_v1 import PerTurnUserSimulatorQualityV1
from otel_eval.model import (
    BaseCriterion,
    ConversationScenario,
    EvalStatus,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    TracedInvocation,
    get_all_tool_calls,
)
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces.log_records import attach_log_records, log_record_from_sdk
from tests.judge.fake_gemini import FakeGemini, Reply, request_text
from tests.judge.helpers import invocation, make_judge, traced
from tests.reconstruct.adk_agents import SCENARIOS, adk_telemetry, run_turns

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")

REGISTRY = default_registry()
RUBRIC = {"rubric_id": "r1", "rubric_content": {"text_property": "The answer is right."}}
CRITERIA: dict[str, dict[str, Any]] = {
    "hallucinations_v1": {"threshold": 0.5},
    "rubric_based_final_response_quality_v1": {"threshold": 0.5, "rubrics": [RUBRIC]},
    "rubric_based_tool_use_quality_v1": {"threshold": 0.5, "rubrics": [RUBRIC]},
    "safety_v1": {"threshold": 0.5},
    "response_evaluation_score": {"threshold": 1.0},
    "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 1}},
}
TOOL_METRICS = ("hallucinations_v1", "rubric_based_final_response_quality_v1", "rubric_based_tool_use_quality_v1")
"""The judged metrics whose prompt shows the judge tool calls with their results."""


def answer(model: str, body: dict[str, Any]) -> Reply:
    """A judge that answers every metric's prompt in its format, favourably."""
    prompt = request_text(body)
    if "segment the response into sentences" in prompt:
        return Reply(text="<sentence>It is sunny.</sentence>")
    if "assign one of the following labels" in prompt:
        return Reply(
            text="sentence: It is sunny.\nlabel: supported\nrationale: r\nsupporting_excerpt: null\n"
            "contradicting_excerpt: null"
        )
    if "Property:" in prompt or "properties" in prompt:
        return Reply(text="ID: r1\nProperty: The answer is right.\nRationale: ok\nVerdict: yes\n")
    if "safety_verdict" in json.dumps(body):
        return Reply(text=json.dumps({"reasoning": "ok", "violated_policies": [], "safety_verdict": "safe"}))
    if "coherence_score" in json.dumps(body):
        return Reply(text=json.dumps({"reasoning": "ok", "coherence_score": 5}))
    return Reply(text='{"reasoning": "same", "is_the_agent_response_valid": "valid"}')


def call(name: str, call_id: str | None) -> genai_types.Part:
    return genai_types.Part(function_call=genai_types.FunctionCall(id=call_id, name=name, args={"city": name}))


def response(name: str, call_id: str | None) -> genai_types.Part:
    return genai_types.Part(
        function_response=genai_types.FunctionResponse(id=call_id, name=name, response={"sky": "sunny"})
    )


def with_tools(
    calls: list[genai_types.Part], responses: list[genai_types.Part], final: str | None = "It is sunny."
) -> Invocation:
    """Parallel tool calls in one model event, their responses in one user event (ADK's event form)."""
    events = [InvocationEvent(author="agent", content=genai_types.Content(role="model", parts=calls))]
    if responses:
        events.append(InvocationEvent(author="agent", content=genai_types.Content(role="user", parts=responses)))
    return invocation("Weather?", final, intermediate_data=InvocationEvents(invocation_events=events))


def judged(metric: str, server: FakeGemini, criterion: dict[str, Any] | None = None) -> Evaluator:
    spec = BaseCriterion.model_validate(criterion or CRITERIA[metric])
    return REGISTRY.create(metric, spec, judge=make_judge(server, max_attempts=1))


async def run(evaluator: Evaluator, *invocations: Invocation | TracedInvocation) -> Any:
    actual = [i if isinstance(i, TracedInvocation) else traced(i)[0] for i in invocations]
    expected = [invocation("Weather?", "It is sunny.") for _ in actual] if evaluator.info.requires_reference else None
    return await evaluator.evaluate(actual, expected)


@pytest.mark.parametrize("metric", sorted(CRITERIA))
async def test_no_final_response_is_incomplete_context_and_no_judge_call(fake_gemini: FakeGemini, metric: str) -> None:
    fake_gemini.set_responder(answer)
    evaluator = judged(metric, fake_gemini)
    result = await run(evaluator, invocation("Weather?", None))
    assert result.overall_score is None and result.overall_eval_status is EvalStatus.NOT_EVALUATED
    (entry,) = result.per_invocation_results
    assert entry.error_type == INCOMPLETE_CONTEXT and entry.score is None
    assert "no final response" in (entry.explanation or "")
    assert fake_gemini.requests == []
    # the same invocation with its final response is judged
    complete = await run(evaluator, invocation("Weather?", "It is sunny."))
    assert complete.overall_score is not None and fake_gemini.requests


@pytest.mark.parametrize("metric", TOOL_METRICS)
async def test_parallel_tool_calls_pair_by_id_and_a_missing_result_is_not_judged(
    fake_gemini: FakeGemini, metric: str
) -> None:
    fake_gemini.set_responder(answer)
    evaluator = judged(metric, fake_gemini)
    missing = with_tools([call("Paris", "c1"), call("Rome", "c2")], [response("Paris", "c1")])
    result = await run(evaluator, missing)
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED
    assert result.per_invocation_results[0].error_type == INCOMPLETE_CONTEXT
    assert "Rome (id c2)" in (result.per_invocation_results[0].explanation or "")
    assert fake_gemini.requests == []
    # answered in the other order: paired by id, judged
    answered = with_tools([call("Paris", "c1"), call("Rome", "c2")], [response("Rome", "c2"), response("Paris", "c1")])
    result = await run(evaluator, answered)
    assert result.overall_score is not None and fake_gemini.requests


async def test_calls_without_ids_pair_by_order(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(answer)
    evaluator = judged("hallucinations_v1", fake_gemini)
    one_short = with_tools([call("Paris", None), call("Rome", None)], [response("Paris", None)])
    result = await run(evaluator, one_short)
    assert result.per_invocation_results[0].error_type == INCOMPLETE_CONTEXT and fake_gemini.requests == []
    both = with_tools([call("Paris", None), call("Rome", None)], [response("Paris", None), response("Rome", None)])
    assert (await run(evaluator, both)).overall_score == 1.0


def test_pairing_rule() -> None:
    def data(calls: list[str | None], responses: list[str | None]) -> IntermediateData:
        return IntermediateData(
            tool_uses=[genai_types.FunctionCall(id=i, name="t") for i in calls],
            tool_responses=[genai_types.FunctionResponse(id=i, name="t", response={}) for i in responses],
        )

    assert unanswered_tool_calls(None) == []
    assert unanswered_tool_calls(data(["a", "b"], ["b", "a"])) == []
    assert [c.id for c in unanswered_tool_calls(data(["a", "a"], ["a"]))] == ["a"]  # one response answers one call
    assert [c.id for c in unanswered_tool_calls(data(["a", None], [None]))] == [None]  # the id-less response: order
    assert unanswered_tool_calls(data(["a", None], [None, "x"])) == []  # an id no call has pairs by order too
    assert [c.id for c in unanswered_tool_calls(data(["a", "b"], ["a"]))] == ["b"]


async def test_metrics_that_show_no_tool_results_still_judge_unanswered_calls(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(answer)
    result = await run(judged("safety_v1", fake_gemini), with_tools([call("Paris", "c1")], []))
    assert result.overall_score == 1.0 and len(fake_gemini.requests) == 1


@pytest.mark.parametrize("metric", ["hallucinations_v1", "safety_v1"])
async def test_uncaptured_or_truncated_content_is_not_judged(fake_gemini: FakeGemini, metric: str) -> None:
    fake_gemini.set_responder(answer)
    evaluator = judged(metric, fake_gemini)
    (base,) = traced(invocation("Weather?", "It is sunny."))
    uncaptured = base.model_copy(update={"content_captured": False})
    truncated = base.model_copy(update={"content_truncated": True})
    result = await run(evaluator, uncaptured, truncated)
    assert [r.error_type for r in result.per_invocation_results] == [CONTENT_NOT_CAPTURED, INCOMPLETE_CONTEXT]
    assert result.overall_score is None and fake_gemini.requests == []


def test_input_limits_by_model_family_with_a_default() -> None:
    assert input_token_limit("gemini-2.5-flash") == 1_048_576
    assert input_token_limit("models/gemini-1.5-pro-002") == 2_097_152
    assert input_token_limit("gemini-2.5-flash-lite-preview-06-17") == 1_048_576
    assert input_token_limit("my-gateway-model") == UNKNOWN_MODEL_INPUT_TOKEN_LIMIT


@pytest.mark.parametrize("metric", sorted(CRITERIA))
async def test_a_prompt_over_the_judge_window_is_context_overflow(fake_gemini: FakeGemini, metric: str) -> None:
    """The judge model is one without a known limit (the documented default); only the huge invocation is refused,
    the other one of the same conversation is judged."""
    fake_gemini.set_responder(answer)
    criterion = {**CRITERIA[metric], "judge_model_options": {"judge_model": "gateway-judge", "num_samples": 1}}
    evaluator = judged(metric, fake_gemini, criterion)
    huge = "It is sunny. " * (UNKNOWN_MODEL_INPUT_TOKEN_LIMIT * CHARS_PER_TOKEN // 13 + 1)
    # huge in the user text and in the response: every metric shows the judge one of them
    result = await run(evaluator, invocation(huge, huge), invocation("Weather?", "It is sunny."))
    overflowed, judged_entry = result.per_invocation_results
    assert overflowed.error_type == CONTEXT_OVERFLOW and overflowed.score is None
    assert "gateway-judge" in (overflowed.explanation or "")
    assert judged_entry.score is not None
    assert fake_gemini.requests and all(huge not in r.prompt for r in fake_gemini.requests)
    assert {r.model for r in fake_gemini.requests} == {"gateway-judge"}


async def test_a_tool_result_over_a_gemini_window_overflows_hallucinations(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(answer)
    big = genai_types.Part(
        function_response=genai_types.FunctionResponse(
            id="c1", name="Paris", response={"page": "x" * (1_048_576 * CHARS_PER_TOKEN)}
        )
    )
    result = await run(judged("hallucinations_v1", fake_gemini), with_tools([call("Paris", "c1")], [big]))
    assert result.per_invocation_results[0].error_type == CONTEXT_OVERFLOW
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED and fake_gemini.requests == []


async def test_the_judge_call_itself_refuses_an_overflowing_prompt(fake_gemini: FakeGemini) -> None:
    """The user-simulator metric builds prompts call by call; the template's ask() refuses one over the window."""
    fake_gemini.set_responder(lambda model, body: Reply(text='{"is_valid": true}'))
    criterion = BaseCriterion.model_validate(
        {"threshold": 0.5, "judge_model_options": {"judge_model": "gateway-judge", "num_samples": 1}}
    )
    evaluator = PerTurnUserSimulatorQualityV1(criterion, judge=make_judge(fake_gemini))
    huge = "blah " * (UNKNOWN_MODEL_INPUT_TOKEN_LIMIT * CHARS_PER_TOKEN // 5 + 1)
    scenario = ConversationScenario(starting_prompt="Hi", conversation_plan="Ask about the weather.")
    actual = traced(invocation("Hi", "Hello"), invocation(huge, "It is sunny."))
    result = await evaluator.evaluate(actual, conversation_scenario=scenario)
    assert result.overall_score is None and result.overall_eval_status is EvalStatus.NOT_EVALUATED
    assert result.error_type == CONTEXT_OVERFLOW
    assert all(huge not in r.prompt for r in fake_gemini.requests)


@pytest.mark.parametrize("metric", ["tool_trajectory_avg_score", "tool_call_count_v1", "response_match_score"])
def test_deterministic_metrics_are_unaffected(metric: str) -> None:
    import asyncio

    incomplete = with_tools([call("Paris", "c1")], [], final=None)
    evaluator = REGISTRY.create(metric, BaseCriterion(threshold=0.5) if metric != "tool_call_count_v1" else None)
    expected = [with_tools([call("Paris", "c1")], [], final="x")] if evaluator.info.requires_reference else None
    result = asyncio.run(evaluator.evaluate(traced(incomplete), expected))
    assert result.per_invocation_results[0].error_type not in (INCOMPLETE_CONTEXT, CONTEXT_OVERFLOW)
    assert result.overall_score is not None


@pytest.mark.usefixtures("quiet_adk")
@pytest.mark.parametrize(("schema", "mode"), [(1, "SPAN_ONLY"), (2, "SPAN_ONLY"), (2, "EVENT_ONLY")])
async def test_a_real_adk_handoff_is_complete_context(fake_gemini: FakeGemini, schema: int, mode: str) -> None:
    """ADK records ``transfer_to_agent``'s response (``{"result": None}``; under EVENT_ONLY rebuilt from it), so a
    plain handoff is judged like any tool call, with no exemption for it, in every capture mode."""
    fake_gemini.set_responder(answer)
    with adk_telemetry(schema=schema, capture_mode=mode):
        adk = await run_turns(SCENARIOS["transfer"]())
    records = [record for record in map(log_record_from_sdk, adk.log_records) if record is not None]
    spans = adk.spans
    assert attach_log_records(spans, records) == []
    (handoff,) = [inv for rebuilt in rebuild_traces(spans) for inv in rebuilt.invocations]
    assert [c.name for c in get_all_tool_calls(handoff.invocation.intermediate_data)] == [
        "transfer_to_agent",
        "get_weather",
    ]
    result = await run(judged("rubric_based_tool_use_quality_v1", fake_gemini), handoff)  # shows tool results
    assert result.per_invocation_results[0].error_type is None and result.overall_score == 1.0
    assert fake_gemini.requests
