"""An invocation rebuilt from spans, with the telemetry facts metrics and emitters need."""

from __future__ import annotations

from itertools import islice

from pydantic import BaseModel, ConfigDict, Field

from otel_eval.model import genai as genai_types
from otel_eval.model.eval_case import IntermediateData, Invocation, InvocationEvent, InvocationEvents

TRACE_ID_PATTERN = r"^[0-9a-f]{32}$"
"""A trace id as every part of otel-eval writes it: 32 lowercase hex digits."""
SPAN_ID_PATTERN = r"^[0-9a-f]{16}$"
"""A span id as every part of otel-eval writes it: 16 lowercase hex digits."""
PRIORITY_REASON_PATTERN = r"^[a-z][a-z_]{0,31}$"
"""A priority sampling reason (``otel_eval.priority.reason``, a metric label): a short lowercase word."""


def _is_none(value: object) -> bool:
    return value is None


class TokenUsage(BaseModel):
    """Token counts summed over an invocation's model calls (None = never reported)."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None

    @property
    def total_tokens(self) -> int | None:
        """Input plus output tokens, or None when neither was reported."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


class EventOutline(BaseModel):
    """One of the session events ADK kept for an invocation, in outline: its author and which entries of the
    invocation's :class:`~otel_eval.model.IntermediateData` it holds (the next ``calls`` tool calls, the next
    ``responses`` tool responses, the next intermediate text when ``text``). ``final`` marks the final-response
    event, whose text is the invocation's ``final_response``. With the intermediate data it gives back ADK's
    ``InvocationEvents`` (see :func:`otel_eval.model.invocation_events`) at a fraction of their size."""

    model_config = ConfigDict(frozen=True)

    author: str
    calls: int = 0
    responses: int = 0
    text: bool = False
    final: bool = False


class TracedInvocation(BaseModel):
    """An ADK :class:`Invocation` plus where it came from in the trace.

    ``invocation`` is exactly what ADK builds from the session events; everything else is metadata read from the
    spans (ids for parenting emitted telemetry, token usage, timings, counts).
    """

    invocation: Invocation
    # Validated where they enter (requests and the sessions topic are JSON from outside; spans are normalised by
    # otel_eval.traces): they travel into URL paths, metric labels and record keys.
    trace_id: str = Field(pattern=TRACE_ID_PATTERN, description="32 lowercase hex digits.")
    span_id: str = Field(pattern=SPAN_ID_PATTERN, description="16 lowercase hex digits: the invocation's root span.")
    session_id: str | None = Field(default=None, description="Conversation/session id, when the spans carry one.")
    convention: str = Field(description="The trace convention it was rebuilt from (e.g. adk, genai, openinference).")
    agent_name: str | None = None
    model: str | None = Field(default=None, description="Model of the first model call.")
    start_time_ns: int = 0
    end_time_ns: int = 0
    model_call_count: int = 0
    token_usage: TokenUsage = Field(default_factory=TokenUsage)
    model_seconds: float | None = Field(default=None, description="Seconds with a model call in flight (union).")
    tool_seconds: float | None = Field(default=None, description="Seconds in tools not awaiting a model (union).")
    content_captured: bool = Field(
        default=True, description="False when the spans carried no message content (capture disabled)."
    )
    content_truncated: bool = Field(
        default=False,
        description="True when otel-eval's own limits cut message or tool content while rebuilding, so judged "
        "metrics do not judge it (no limit of ours cuts content today: over-limit traces are dropped whole).",
    )
    event_outline: list[EventOutline] | None = Field(
        default=None,
        description="The session events ADK kept for this invocation, in order and in outline (see EventOutline); "
        "None when the trace does not say (conventions other than ADK's).",
    )
    warnings: list[str] = Field(default_factory=list, description="Problems met while rebuilding, one line each.")
    ended_in_error: bool = Field(
        default=False,
        description="True when the invocation's root span has status ERROR, or a span of the "
        "invocation says a guardrail's tripwire stopped the run (the OpenAI Agents SDK's ``Guardrail tripwire "
        "triggered``).",
    )
    feedback: str | None = Field(
        default=None,
        description="The user's feedback on the invocation: the root span's feedback attribute "
        "(OTEL_EVAL_PRIORITY_FEEDBACK_ATTRIBUTE, default user.feedback) as text, when it has one.",
    )
    # Serialised only when set: a request without it reads as before in a worker that does not know the field.
    priority_reason: str | None = Field(
        default=None,
        pattern=PRIORITY_REASON_PATTERN,
        exclude_if=_is_none,
        description="``otel_eval.priority.reason``: why priority sampling evaluated the invocation although the "
        "sample rate left its session or trace out (error, negative_feedback); None when it is in the sample.",
    )

    def join_session(self, session_id: str | None) -> None:
        """Joins the session an ancestor span names (its own spans name none): as
        :meth:`~otel_eval.reconstruct.plain.PlainInvocation.join_session` does for the plain view."""
        self.session_id = session_id

    @property
    def invocation_id(self) -> str:
        """The ADK invocation's id (``invocation.invocation_id``)."""
        return self.invocation.invocation_id

    @property
    def duration_seconds(self) -> float | None:
        """Wall-clock seconds of the invocation's root span (:func:`duration_of` its start and end)."""
        return duration_of(self.start_time_ns, self.end_time_ns)


def duration_of(start_time_ns: int, end_time_ns: int) -> float | None:
    """Seconds from ``start_time_ns`` to ``end_time_ns``; None when the end is unknown (not after 0) or before the
    start."""
    if end_time_ns <= 0 or end_time_ns < start_time_ns:
        return None
    return (end_time_ns - start_time_ns) / 1e9


def invocation_events(traced: TracedInvocation) -> InvocationEvents | None:
    """ADK's ``InvocationEvents`` of ``traced``: the invocation's own when it carries them, else rebuilt from its
    :attr:`~TracedInvocation.event_outline` and its intermediate data; None when neither says what the events were.

    ADK drops the final-response event's content (its text is the invocation's ``final_response``) unless it calls
    functions; so does this.
    """
    data = traced.invocation.intermediate_data
    if isinstance(data, InvocationEvents):
        return data
    outline = traced.event_outline
    if outline is None:
        return None
    data = data or IntermediateData()
    calls = iter(data.tool_uses)
    responses = iter(data.tool_responses)
    texts = iter(data.intermediate_responses)
    events = []
    for shape in outline:
        parts: list[genai_types.Part] = []
        if shape.text:
            parts.extend(next(texts, ("", []))[1])
        parts.extend(genai_types.Part(function_call=call) for call in islice(calls, shape.calls))
        parts.extend(genai_types.Part(function_response=response) for response in islice(responses, shape.responses))
        role = "user" if shape.responses and not shape.calls else "model"
        content = None if shape.final and not shape.calls else genai_types.Content(role=role, parts=parts)
        events.append(InvocationEvent(author=shape.author, content=content))
    return InvocationEvents(invocation_events=events)
