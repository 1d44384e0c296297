"""The plain view of a rebuilt invocation: what the deterministic metrics read, before any ADK pydantic object is made.

A rebuild asked only for :data:`PLAIN_READS` (the tool calls, the usage, the timing: what ``tool_call_count_v1``,
``inference_call_count_v1``, ``token_usage_v1`` and ``invocation_duration_v1`` read) needs of an invocation a few ids,
counts and times and the function calls; ADK's ``Invocation``, ``IntermediateData`` and the ``TracedInvocation`` around
them are wanted only by a consumer of the ADK object (a judge prompt, an ADK custom metric, a result file, a
conversation, the wire). :class:`PlainInvocation` is what :func:`otel_eval.reconstruct._trajectory.plain_invocation`
extracts from a convention's draft (the one extraction: :func:`~otel_eval.reconstruct._trajectory.build_invocation` is
that view's :meth:`PlainInvocation.traced`), so the plain facts and the ADK objects cannot disagree; the function calls
the GenAI reader takes from the model outputs are :class:`PlainCall` tuples until :meth:`PlainInvocation.traced` makes
them ``FunctionCall`` models.

``tests/reconstruct/test_rebuild_on_demand.py`` proves on every recorded, framework, hostile and session trace that
every efficiency metric scores the plain views as it scores the full rebuild (``Evaluator.score_plain``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from otel_eval.model import IntermediateData, Invocation, TokenUsage, TracedInvocation
from otel_eval.model import genai as genai_types
from otel_eval.model.traced import duration_of
from otel_eval.reconstruct._built import built_from, traced_invocation
from otel_eval.reconstruct.reads import Reads

PLAIN_READS = Reads.TOOL_CALLS | Reads.USAGE | Reads.TIMING
"""What a plain view holds beyond the facts every rebuild has: a plan reading no more is served by plain views."""
_NO_USAGE = TokenUsage()


class PlainCall(NamedTuple):
    """A function call as read from a model output, not yet a ``FunctionCall`` model: its ``args`` a dict with string
    keys (what validating them gives), so the model is made without validating again."""

    id: str | None
    name: str
    args: dict[str, Any]

    def model(self) -> genai_types.FunctionCall:
        """The ``FunctionCall`` model of this call (equal to the validated one)."""
        return genai_types.FunctionCall.trusted(id=self.id, name=self.name, args=self.args)


Call = PlainCall | genai_types.FunctionCall
"""A function call of a rebuilt invocation: plain when read as such, else the model a content's part holds."""


@dataclass(slots=True)
class PlainInvocation:
    """One rebuilt invocation as plain values (see the module docstring): the values of its ``TracedInvocation``
    (``facts``), of its ``Invocation`` (``invocation_values``) and of its ``IntermediateData`` (``data``), each without
    the model nested in it; the tool calls may be :class:`PlainCall` tuples. Not changed once made."""

    facts: dict[str, Any]
    invocation_values: dict[str, Any]
    data: dict[str, Any]
    _traced: TracedInvocation | None = field(default=None, repr=False)

    @property
    def trace_id(self) -> str:
        """The trace id."""
        trace_id: str = self.facts["trace_id"]
        return trace_id

    @property
    def span_id(self) -> str:
        """The invocation's root span id."""
        span_id: str = self.facts["span_id"]
        return span_id

    @property
    def tool_uses(self) -> list[Call]:
        """The function calls, in order (``IntermediateData.tool_uses``, some possibly still plain)."""
        calls: list[Call] = self.data["tool_uses"]
        return calls

    @property
    def model_call_count(self) -> int:
        """Model calls (0 unless :data:`Reads.USAGE` was asked)."""
        count: int = self.facts.get("model_call_count", 0)
        return count

    @property
    def token_usage(self) -> TokenUsage:
        """Token counts summed over the model calls (none unless :data:`Reads.USAGE` was asked)."""
        usage: TokenUsage = self.facts.get("token_usage", _NO_USAGE)
        return usage

    @property
    def model_seconds(self) -> float | None:
        """Seconds with a model call in flight (None unless :data:`Reads.TIMING` was asked)."""
        seconds: float | None = self.facts.get("model_seconds")
        return seconds

    @property
    def tool_seconds(self) -> float | None:
        """Seconds in tools not awaiting a model (None unless :data:`Reads.TIMING` was asked)."""
        seconds: float | None = self.facts.get("tool_seconds")
        return seconds

    @property
    def duration_seconds(self) -> float | None:
        """Wall-clock seconds of the root span (:attr:`TracedInvocation.duration_seconds`'s rule)."""
        return duration_of(self.facts["start_time_ns"], self.facts["end_time_ns"])

    def traced(self) -> TracedInvocation:
        """The ``TracedInvocation`` of these values (made on the first call, then the same object): what
        :func:`~otel_eval.reconstruct._trajectory.build_invocation` returns."""
        traced = self._traced
        if traced is None:
            traced = self._traced = _assemble(self)
        return traced


def _assemble(plain: PlainInvocation) -> TracedInvocation:
    """The models of ``plain``'s values, built without validating again (:mod:`otel_eval.reconstruct._built`): every
    value was validated, or typed by the rebuild, when it was made; the plain calls become ``FunctionCall`` models."""
    data = plain.data
    calls = data["tool_uses"]
    if any(type(call) is PlainCall for call in calls):
        data = {**data, "tool_uses": [call.model() if type(call) is PlainCall else call for call in calls]}
    invocation = built_from(
        Invocation, {**plain.invocation_values, "intermediate_data": built_from(IntermediateData, data)}
    )
    return traced_invocation({"invocation": invocation, **plain.facts})


__all__ = ["PLAIN_READS", "Call", "PlainCall", "PlainInvocation"]
