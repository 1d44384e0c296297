"""An invocation rebuilt from spans, with the telemetry facts metrics and emitters need."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from otel_eval.model.eval_case import Invocation


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


class TracedInvocation(BaseModel):
    """An ADK :class:`Invocation` plus where it came from in the trace.

    ``invocation`` is exactly what ADK builds from the session events; everything else is metadata read from the
    spans (ids for parenting emitted telemetry, token usage, timings, counts).
    """

    invocation: Invocation
    trace_id: str = Field(description="32 lowercase hex digits.")
    span_id: str = Field(description="16 lowercase hex digits: the invocation's root span.")
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
    warnings: list[str] = Field(default_factory=list, description="Problems met while rebuilding, one line each.")
    ended_in_error: bool = Field(default=False, description="True when the invocation's root span has status ERROR.")
    feedback: str | None = Field(
        default=None,
        description="The user's feedback on the invocation: the root span's feedback attribute "
        "(OTEL_EVAL_PRIORITY_FEEDBACK_ATTRIBUTE, default user.feedback) as text, when it has one.",
    )

    @property
    def duration_seconds(self) -> float | None:
        """Wall-clock seconds of the invocation's root span."""
        if self.end_time_ns <= 0 or self.end_time_ns < self.start_time_ns:
            return None
        return (self.end_time_ns - self.start_time_ns) / 1e9
