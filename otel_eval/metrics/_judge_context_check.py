"""Honest context: a judged metric never judges what we could not see.

Before any judge call, each invocation is checked: its content was captured and not cut by our own limits, it has a
final response, and (for metrics that show the judge tool results) every tool call has its response -- paired by id
where calls carry ids, by order where they do not. A judge shown a tool call without its result calls a grounded
answer unsupported; a judge shown a cut context scores what it did not see. Then the prompt must fit the judge
model's input window (estimated from its length). A problem makes the invocation NOT_EVALUATED with ``error.type``
``content_not_captured``, ``incomplete_context`` or ``context_overflow``, and the judge is not called for it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from otel_eval.judge.budget import estimate_tokens
from otel_eval.judge.retry import CONTEXT_OVERFLOW, INCOMPLETE_CONTEXT
from otel_eval.metrics._judge_context import content_text
from otel_eval.metrics._reference import CONTENT_NOT_CAPTURED
from otel_eval.model import (
    EvalStatus,
    IntermediateDataType,
    PerInvocationResult,
    TracedInvocation,
    get_all_tool_calls,
    get_all_tool_responses,
)
from otel_eval.model import genai as genai_types


@dataclass(frozen=True, slots=True)
class ContextProblem:
    """Why an invocation is not judged."""

    reason: str
    error_type: str

    def result(self) -> PerInvocationResult:
        """The invocation's NOT_EVALUATED result."""
        return PerInvocationResult(
            score=None, eval_status=EvalStatus.NOT_EVALUATED, explanation=self.reason, error_type=self.error_type
        )


def unanswered_tool_calls(intermediate_data: IntermediateDataType | None) -> list[genai_types.FunctionCall]:
    """Tool calls without a response: calls pair with responses of the same id; the calls left then pair, in order,
    with the responses left (those without an id, or whose id no call has)."""
    calls = get_all_tool_calls(intermediate_data)
    responses = get_all_tool_responses(intermediate_data)
    call_ids = {call.id for call in calls if call.id}
    by_id = Counter(response.id for response in responses if response.id in call_ids)
    unpaired_responses = sum(1 for response in responses if response.id not in call_ids)
    pending = []
    for call in calls:
        if call.id and by_id[call.id] > 0:
            by_id[call.id] -= 1
        else:
            pending.append(call)
    return pending[unpaired_responses:]


def incomplete_context(traced: TracedInvocation, *, tool_results: bool) -> ContextProblem | None:
    """What keeps ``traced`` from being judged fairly (``tool_results``: the judge is shown tool results), if anything."""
    if not traced.content_captured:
        return ContextProblem(
            "the spans carried no message content (capture disabled); nothing to judge", CONTENT_NOT_CAPTURED
        )
    if traced.content_truncated:
        return ContextProblem("the invocation's content was truncated while rebuilding it", INCOMPLETE_CONTEXT)
    invocation = traced.invocation
    if not content_text(invocation.final_response):
        if traced.ended_in_error:
            return ContextProblem(
                "the invocation ended in error (cancelled, or it raised) without a final response", INCOMPLETE_CONTEXT
            )
        return ContextProblem("the invocation has no final response text", INCOMPLETE_CONTEXT)
    if tool_results:
        unanswered = unanswered_tool_calls(invocation.intermediate_data)
        if unanswered:
            names = ", ".join(f"{call.name}" + (f" (id {call.id})" if call.id else "") for call in unanswered[:5]) + (
                ", ..." if len(unanswered) > 5 else ""
            )
            return ContextProblem(
                f"{len(unanswered)} tool call(s) without a response in the trace: {names}", INCOMPLETE_CONTEXT
            )
    return None


def context_overflow(characters: int, model: str, limit: int) -> ContextProblem | None:
    """A problem when a prompt of ``characters`` characters would not fit ``model``'s input window of ``limit``
    tokens (the judge's :meth:`~otel_eval.judge.Judge.input_token_limit`)."""
    tokens = estimate_tokens(characters)
    if tokens <= limit:
        return None
    return ContextProblem(
        f"the judge prompt (about {tokens} tokens) exceeds the input limit of {model} ({limit} tokens)",
        CONTEXT_OVERFLOW,
    )
