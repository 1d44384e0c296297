"""Token usage: the counts one span reports (:class:`Usage`, read from ``gen_ai.usage.*`` by :func:`usage_from`) and
their sum over an invocation (:func:`sum_token_counts`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from otel_eval import semconv
from otel_eval.model import TokenUsage
from otel_eval.reconstruct._built import built_from
from otel_eval.reconstruct._flattened import first_int


@dataclass(slots=True)
class Usage:
    """Token counts of one span (None = not reported)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None

    def reported(self) -> bool:
        """Whether any count is present."""
        return self.input_tokens is not None or self.output_tokens is not None


def usage_from(attributes: Mapping[str, Any]) -> Usage:
    """Token counts from the GenAI ``gen_ai.usage.*`` attributes (current names first, then the deprecated ones)."""
    # What first_int gives, without its call where the current name holds an int or neither name is there.
    get = attributes.get
    counts: list[int | None] = []
    for key, legacy in _USAGE_KEYS:
        value = get(key)
        if type(value) is not int:
            value = None if value is None and legacy not in attributes else first_int(attributes, key, legacy)
        counts.append(value)
    return Usage(*counts)


_USAGE_KEYS = (
    (semconv.GEN_AI_USAGE_INPUT_TOKENS, semconv.GEN_AI_USAGE_PROMPT_TOKENS),
    (semconv.GEN_AI_USAGE_OUTPUT_TOKENS, semconv.GEN_AI_USAGE_COMPLETION_TOKENS),
    (semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS_LEGACY),
    (semconv.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, semconv.GEN_AI_USAGE_REASONING_TOKENS_LEGACY),
)
""":class:`Usage`'s counts in its field order, each under its current name and its deprecated one."""


def usage_by_first_int(attributes: Mapping[str, Any]) -> Usage:
    """:func:`usage_from` by the general rule, key by key (what the tests compare it with)."""
    return Usage(*(first_int(attributes, key, legacy) for key, legacy in _USAGE_KEYS))


class TokenCounts(Protocol):
    """Token counts of one model call or span (:class:`Usage`, :class:`~otel_eval.model.TokenUsage`)."""

    @property
    def input_tokens(self) -> int | None: ...
    @property
    def output_tokens(self) -> int | None: ...
    @property
    def cached_input_tokens(self) -> int | None: ...
    @property
    def reasoning_tokens(self) -> int | None: ...


def sum_token_counts(counts: Iterable[TokenCounts]) -> TokenUsage:
    """Each count summed over the items that report it; None where none does (a ``TokenUsage`` of the sums, which
    are ``int`` or None: assembled without validating them again, :mod:`otel_eval.reconstruct._built`)."""
    totals: list[int | None] = [None, None, None, None]
    for item in counts:
        for index, value in enumerate(
            (item.input_tokens, item.output_tokens, item.cached_input_tokens, item.reasoning_tokens)
        ):
            if value is not None:
                known = totals[index]
                totals[index] = 0 + value if known is None else known + value
    return built_from(
        TokenUsage,
        {
            "input_tokens": totals[0],
            "output_tokens": totals[1],
            "cached_input_tokens": totals[2],
            "reasoning_tokens": totals[3],
        },
    )


__all__ = ["TokenCounts", "Usage", "sum_token_counts", "usage_from"]
