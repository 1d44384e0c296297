"""``token_usage_v1``: tokens per invocation, with ADK 2.13's ``TokenUsageDetails`` breakdown. Informational.

The value is ``total_tokens`` = input + output tokens (derived, not the backend's reported total; None when neither
was reported). From spans: ``input_tokens``, ``output_tokens``, ``cached_tokens`` and ``reasoning_tokens`` are the
sums over the invocation's model calls of ``gen_ai.usage.input_tokens``, ``.output_tokens``,
``.cache_read.input_tokens`` and ``.reasoning.output_tokens``; the spans do not split input into prompt and tool-use
tokens or output into candidates, so those stay None. When the spans report no usage and the invocation carries ADK
``InvocationEvents``, every count is ADK's, summed from the events' ``usage_metadata`` exactly as ADK 2.13 sums it.

The overall value is ADK's: each count summed over the invocations that report it and divided by the number of all
invocations (a count missing on one invocation means zero there), None when no invocation reports it. Lower is
better; it never passes or fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from otel_eval.metrics._efficiency import InformationalEvaluator, informational
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import (
    BaseCriterion,
    IntermediateDataType,
    InvocationEvents,
    PerInvocationResult,
    TokenUsage,
    TokenUsageDetails,
    TracedInvocation,
)
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct.plain import PlainInvocation
from otel_eval.reconstruct.reads import Reads


class TokenUsageV1Evaluator(InformationalEvaluator):
    """Sums the token usage of each invocation's model calls."""

    reads = Reads.USAGE

    info: ClassVar[MetricInfo] = MetricInfo(
        name="token_usage_v1",
        description=(
            "Tokens (input + output) the model consumed per invocation, averaged over the conversation, with the "
            "per-type breakdown. Informational efficiency metric (lower is better): reports a value, never passes "
            "or fails."
        ),
        criterion_type=BaseCriterion,
        max_value=None,
        informational=True,
    )

    def measure(self, traced: TracedInvocation) -> PerInvocationResult:
        """The invocation's total tokens, with the breakdown in ``token_usage_details``."""
        return _measured(token_usage_details(traced))

    def measure_score(self, traced: TracedInvocation) -> PerInvocationResult:
        """:meth:`measure` without the breakdown: the total of the spans' token counts, as the breakdown's float
        (validation turns an int into the float of the same value; else, or without span counts, :meth:`measure`)."""
        return _scored(traced.token_usage, traced.invocation.intermediate_data)

    def measure_plain(self, plain: PlainInvocation) -> PerInvocationResult:
        """:meth:`measure_score` of a plain view (whose intermediate data are never ADK's ``InvocationEvents``)."""
        return _scored(plain.token_usage, None)

    def overall_value(self, values: Sequence[float | None]) -> float | None:
        """ADK's: the sum of the reported totals over the number of all invocations."""
        present = [total for total in values if total is not None]
        return sum(present) / len(values) if present else None


_EXACT = 2**53
"""Integers up to this are floats of the same value."""


def _scored(usage: TokenUsage, data: IntermediateDataType | None) -> PerInvocationResult:
    """The spans' total as a float when it is an exact one, else the breakdown's (:func:`_details_of`)."""
    total = usage.total_tokens
    if type(total) is not int or not -_EXACT < total < _EXACT:
        return _measured(_details_of(usage, data))
    return informational(float(total))


def _measured(details: TokenUsageDetails) -> PerInvocationResult:
    explanation = None if details.total_tokens is not None else "no token usage reported for this invocation"
    return informational(details.total_tokens, explanation=explanation, token_usage_details=details)


def token_usage_details(traced: TracedInvocation) -> TokenUsageDetails:
    """The invocation's token counts: from its spans, else from its ADK ``InvocationEvents`` (see the module)."""
    return _details_of(traced.token_usage, traced.invocation.intermediate_data)


def _details_of(usage: TokenUsage, data: IntermediateDataType | None) -> TokenUsageDetails:
    if usage.input_tokens is not None or usage.output_tokens is not None:
        return TokenUsageDetails(
            total_tokens=usage.total_tokens,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_tokens=usage.cached_input_tokens,
            reasoning_tokens=usage.reasoning_tokens,
        )
    if not isinstance(data, InvocationEvents):
        return TokenUsageDetails()
    return _adk_details([e.usage_metadata for e in data.invocation_events if e.usage_metadata is not None])


def _add(total: float | None, count: int | None) -> float | None:
    return total if count is None else (total or 0) + count


def _either(first: int | None, second: int | None) -> int | None:
    return None if first is None and second is None else (first or 0) + (second or 0)


def _adk_details(reports: list[genai_types.GenerateContentResponseUsageMetadata]) -> TokenUsageDetails:
    """ADK 2.13's ``_TokenUsageV1Evaluator._token_usage_details`` (via ``telemetry._token_usage.TokenUsage``)."""
    input_tokens = prompt = cached = tool_use = output_tokens = candidates = reasoning = None
    for report in reports:
        prompt_count, tool_count = report.prompt_token_count, report.tool_use_prompt_token_count
        candidate_count, thought_count = report.candidates_token_count, report.thoughts_token_count
        input_tokens = _add(input_tokens, _either(prompt_count, tool_count))
        prompt = _add(prompt, prompt_count)
        cached = _add(cached, report.cached_content_token_count)
        tool_use = _add(tool_use, tool_count)
        output_tokens = _add(output_tokens, _either(candidate_count, thought_count))
        candidates = _add(candidates, candidate_count)
        reasoning = _add(reasoning, thought_count)
    total = None if input_tokens is None and output_tokens is None else (input_tokens or 0) + (output_tokens or 0)
    return TokenUsageDetails(
        total_tokens=total,
        input_tokens=input_tokens,
        prompt_tokens=prompt,
        cached_tokens=cached,
        tool_use_tokens=tool_use,
        output_tokens=output_tokens,
        candidates_tokens=candidates,
        reasoning_tokens=reasoning,
    )
