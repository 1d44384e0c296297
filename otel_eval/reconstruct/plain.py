"""The plain view of a rebuilt invocation: what the deterministic metrics read, before any ADK pydantic object is made.

A rebuild asked only for :data:`PLAIN_READS` (the tool calls, the usage, the timing: what ``tool_call_count_v1``,
``inference_call_count_v1``, ``token_usage_v1`` and ``invocation_duration_v1`` read) needs of an invocation a few ids,
counts and times and the function calls; ADK's ``Invocation``, ``IntermediateData`` and the ``TracedInvocation`` around
them are wanted only by a consumer of the ADK object (a judge prompt, an ADK custom metric, a result file, a
conversation, the wire). :class:`PlainInvocation` is what :func:`otel_eval.reconstruct._trajectory.plain_invocation`
extracts from a convention's draft (the one extraction: :func:`~otel_eval.reconstruct._trajectory.build_invocation` is
that view's :meth:`PlainInvocation.traced`), so the plain facts and the ADK objects cannot disagree. The function calls
stay ``FunctionCall`` models (made without validating, the cheapest part): as tuples made models later they cost the
full rebuild more than they save.

:class:`PlainRequest` carries the views from the span processor to its embedded evaluation core (in process only;
what a transport ships is its full ``EvaluationRequest``). ``tests/reconstruct/test_rebuild_on_demand.py`` proves on
every recorded, framework, hostile and session trace that every efficiency metric scores the plain views as it scores
the full rebuild (``Evaluator.score_plain``); ``tests/evaluation/test_plain_requests.py`` that plain requests give the
records and telemetry of the full requests.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from otel_eval.model import IntermediateData, Invocation, TokenUsage, TracedInvocation
from otel_eval.model import genai as genai_types
from otel_eval.model.messages import EvaluationRequest
from otel_eval.model.traced import duration_of
from otel_eval.reconstruct._built import built_from, root_values_trusted, traced_invocation
from otel_eval.reconstruct.reads import Reads

PLAIN_READS = Reads.TOOL_CALLS | Reads.USAGE | Reads.TIMING
"""What a plain view holds beyond the facts every rebuild has: a plan reading no more is served by plain views."""
_NO_USAGE = TokenUsage()


@dataclass(slots=True)
class PlainInvocation:
    """One rebuilt invocation as plain values (see the module docstring): the values of its ``TracedInvocation``
    (``facts``), of its ``Invocation`` (``invocation_values``) and of its ``IntermediateData`` (``data``), each without
    the model nested in it. Not changed once made, but by :meth:`traced`, which adds each nested model to its dict."""

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
    def session_id(self) -> str | None:
        """The session id, when the spans carry one."""
        session_id: str | None = self.facts["session_id"]
        return session_id

    @property
    def agent_name(self) -> str | None:
        """The agent's name, when the spans carry one."""
        agent_name: str | None = self.facts["agent_name"]
        return agent_name

    @property
    def invocation_id(self) -> str:
        """The ADK invocation id (``Invocation.invocation_id``: the root span id)."""
        invocation_id: str = self.invocation_values["invocation_id"]
        return invocation_id

    @property
    def start_time_ns(self) -> int:
        """When the root span started."""
        start: int = self.facts["start_time_ns"]
        return start

    @property
    def end_time_ns(self) -> int:
        """When the invocation ended."""
        end: int = self.facts["end_time_ns"]
        return end

    @property
    def priority_reason(self) -> str | None:
        """Why priority sampling evaluated it although the sample rate left it out (:meth:`rescued`); None when in
        the sample."""
        reason: str | None = self.facts.get("priority_reason")
        return reason

    def rescued(self, reason: str) -> None:
        """Marks the view evaluated by priority sampling for ``reason`` (before its model is made: the model holds
        it too)."""
        self.facts["priority_reason"] = reason
        if self._traced is not None:
            self._traced.priority_reason = reason

    def join_session(self, session_id: str | None) -> None:
        """Gives the view (and its model, when made) the session an ancestor span names: its own spans name none."""
        self.facts["session_id"] = session_id
        if self._traced is not None:
            self._traced.session_id = session_id

    @property
    def content_captured(self) -> bool:
        """Whether the spans carried message content (``TracedInvocation.content_captured``)."""
        captured: bool = self.facts["content_captured"]
        return captured

    @property
    def trusted(self) -> bool:
        """Whether the ids and times read from the root span are what the model holds (its patterns and types): a view
        that is not (a malformed id) is not handed on; its model is made at once, and fails as it always did."""
        return root_values_trusted(self.facts)

    @property
    def tool_uses(self) -> list[genai_types.FunctionCall]:
        """The function calls, in order (``IntermediateData.tool_uses``)."""
        calls: list[genai_types.FunctionCall] = self.data["tool_uses"]
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
    value was validated, or typed by the rebuild, when it was made. Each model's values are handed over as they are
    (the dicts are the view's own: each then holds its nested model too)."""
    invocation = plain.invocation_values
    if invocation["user_content"] is None:  # not asked for, or none found: ADK's Invocation requires one
        invocation["user_content"] = genai_types.Content.trusted(parts=[])
    invocation["intermediate_data"] = built_from(IntermediateData, plain.data)
    facts = plain.facts
    facts["invocation"] = built_from(Invocation, invocation)
    return traced_invocation(facts)


@dataclass(slots=True)
class PlainRequest:
    """An evaluation request of plain views, in process only: what the span processor hands its embedded evaluation
    core when the metrics read no more than :data:`PLAIN_READS` and no eval set pairs the requests
    (:meth:`otel_eval.evaluation.core.EvaluationCore.start` scores it with
    :meth:`~otel_eval.metrics.Evaluator.score_plain`, making no model). It answers what an
    :class:`~otel_eval.model.messages.EvaluationRequest` answers in process (``trace_id``, ``record_key``,
    ``invocations``, ``criteria``, ``eval_case``, ``eval_set_id``); its models are made only when asked for. Never
    on a wire: :meth:`full` is the ``EvaluationRequest`` it stands for.
    """

    plain: list[PlainInvocation]
    """The views, in order (usually one)."""
    criteria: dict[str, Any] | None = None
    """As ``EvaluationRequest.criteria``."""
    created_at: float = field(default_factory=time.time)
    """As ``EvaluationRequest.created_at``."""

    eval_case: ClassVar[None] = None
    """A plain request is paired with no case (pairing reads the user message)."""
    eval_set_id: ClassVar[None] = None

    def rescued(self, reason: str) -> None:
        """Marks its views evaluated by priority sampling for ``reason`` (``otel_eval.priority.reason``)."""
        for view in self.plain:
            view.rescued(reason)

    @property
    def trace_id(self) -> str:
        """Trace id of the (first) invocation."""
        return self.plain[0].trace_id if self.plain else ""

    @property
    def record_key(self) -> str:
        """As ``EvaluationRequest.record_key``: the (first) invocation's session id, else its trace id."""
        session_id = self.plain[0].session_id if self.plain else None
        return session_id or self.trace_id

    @property
    def invocations(self) -> list[TracedInvocation]:
        """The views' models (made on the first ask, then the same objects)."""
        return [plain.traced() for plain in self.plain]

    def full(self) -> EvaluationRequest:
        """The ``EvaluationRequest`` this request stands for (validated, as the processor made it before)."""
        return EvaluationRequest(invocations=self.invocations, criteria=self.criteria, created_at=self.created_at)


__all__ = ["PLAIN_READS", "PlainInvocation", "PlainRequest"]
