"""What the consumers of a rebuilt invocation read of it: the rebuild produces only that (rebuild on demand).

Each metric declares its :class:`Reads` (:attr:`otel_eval.metrics.Evaluator.reads`), the evaluation plan takes their
union once per criteria, and :func:`otel_eval.reconstruct.rebuild_traces` is handed it: a part no consumer reads is
left at its empty default (no message history parsed, no tool result converted, no agent details read), so a
deterministic count does not pay for pydantic contents nobody looks at. :data:`Reads.ALL` (the default everywhere) is
the full rebuild.

Always rebuilt, whatever is asked (cheap facts read from the root span and the span kinds): the ids (trace, root span,
session, ``invocation_id``), the convention, the agent name, the root's start and end, ``creation_timestamp``, the
model name, ``content_captured``, ``ended_in_error`` and the feedback. :func:`read_of` is each part's value, what the
property test (``tests/reconstruct/test_rebuild_on_demand.py``) compares between the rebuild asked for a metric's reads
and the full one on every recorded trace.

A convention may produce more than it is asked for, never less: the ADK conventions replay the session events whole
(tool calls, texts and final response come out of one replay; only the events that call tools when no other of these
is asked) and skip only the user message and the app details; the
GenAI reader also skips the model calls' messages (their input histories above all), the root's input and output and
the tool results when no part asked needs them, and converts the model calls' outputs into contents only when a text
is asked (else it takes only their function calls, :mod:`otel_eval.reconstruct._genai_calls`: made without validating
again when their arguments are a JSON object, and not looked for in an output whose JSON text holds no call word,
which is still parsed so that its problems are reported alike), and parses a tool run's own arguments only when
something reads them (a run no function call accounts for; the full rebuild parses them at once, so that their
problems are reported); OpenInference and OpenLLMetry read their spans whole
and skip what :func:`otel_eval.reconstruct._trajectory.build_invocation` builds from them.

What every rebuild still pays, whatever is asked: converting the spans, the span tree (its pre-order made only when a
step walks it), the span kinds and roots, matching the tool calls to the tool runs (by id without queues when the
ids pair one to one) and the pydantic ``TracedInvocation``, ``Invocation`` and ``IntermediateData`` (assembled
without validating again, :mod:`otel_eval.reconstruct._built`). The GenAI, OpenInference and OpenLLMetry conventions
extract each invocation as a plain view first (:mod:`otel_eval.reconstruct.plain`, ``TraceInvocations.plain``), the
models being that view's assembly; the efficiency metrics score plain views without them
(:meth:`otel_eval.metrics.Evaluator.score_plain`). The span processor hands them on to its embedded core as they are
(:class:`~otel_eval.reconstruct.plain.PlainRequest`) when the metrics read no more than they hold and no eval set
pairs the requests, and ``TraceInvocations.invocations`` makes the models only when read: on that path no model and
no request validation is paid (round 9).
"""

from __future__ import annotations

import enum
from typing import Any

from otel_eval.model import TracedInvocation


class Reads(enum.Flag):
    """Parts of a :class:`~otel_eval.model.TracedInvocation` beyond the facts that are always rebuilt."""

    NONE = 0
    USER_CONTENT = enum.auto()
    """``invocation.user_content`` (may read a model call's whole input history when the root has no input)."""
    FINAL_RESPONSE = enum.auto()
    """``invocation.final_response``."""
    TOOL_CALLS = enum.auto()
    """``intermediate_data.tool_uses``: the function calls, in order, with their arguments."""
    TOOL_RESPONSES = enum.auto()
    """``intermediate_data.tool_responses`` (may read the responses sent back in the model calls' histories)."""
    INTERMEDIATE_TEXTS = enum.auto()
    """``intermediate_data.intermediate_responses``: the texts of the model outputs other than the final one."""
    USAGE = enum.auto()
    """``model_call_count`` and ``token_usage``."""
    TIMING = enum.auto()
    """``model_seconds`` and ``tool_seconds`` (the root's start and end are always there)."""
    EVENTS = enum.auto()
    """``event_outline``: the session events in outline (ADK traces)."""
    APP_DETAILS = enum.auto()
    """``invocation.app_details``: each agent's instructions and tool declarations."""
    ALL = (
        USER_CONTENT
        | FINAL_RESPONSE
        | TOOL_CALLS
        | TOOL_RESPONSES
        | INTERMEDIATE_TEXTS
        | USAGE
        | TIMING
        | EVENTS
        | APP_DETAILS
    )
    """Everything: the full rebuild (a judge prompt, an ADK custom metric, a result file, a conversation)."""


def read_of(traced: TracedInvocation, part: Reads) -> Any:
    """The value of one part (a single flag) of ``traced``, as plain data (pydantic models dumped)."""
    invocation = traced.invocation
    data = invocation.intermediate_data
    value: Any
    if part is Reads.USER_CONTENT:
        value = invocation.user_content
    elif part is Reads.FINAL_RESPONSE:
        value = invocation.final_response
    elif part is Reads.TOOL_CALLS:
        value = None if data is None else getattr(data, "tool_uses", None)
    elif part is Reads.TOOL_RESPONSES:
        value = None if data is None else getattr(data, "tool_responses", None)
    elif part is Reads.INTERMEDIATE_TEXTS:
        value = None if data is None else getattr(data, "intermediate_responses", None)
    elif part is Reads.USAGE:
        value = (traced.model_call_count, traced.token_usage)
    elif part is Reads.TIMING:
        value = (traced.model_seconds, traced.tool_seconds, invocation.duration)
    elif part is Reads.EVENTS:
        value = traced.event_outline
    elif part is Reads.APP_DETAILS:
        value = invocation.app_details
    else:
        raise ValueError(f"not a single part: {part!r}")
    return _plain(value)


def always_read(traced: TracedInvocation) -> dict[str, Any]:
    """The facts every rebuild produces whatever is asked (see the module docstring)."""
    return {
        "trace_id": traced.trace_id,
        "span_id": traced.span_id,
        "session_id": traced.session_id,
        "invocation_id": traced.invocation.invocation_id,
        "creation_timestamp": traced.invocation.creation_timestamp,
        "convention": traced.convention,
        "agent_name": traced.agent_name,
        "model": traced.model,
        "start_time_ns": traced.start_time_ns,
        "end_time_ns": traced.end_time_ns,
        "content_captured": traced.content_captured,
        "ended_in_error": traced.ended_in_error,
        "feedback": traced.feedback,
    }


def parts_of(reads: Reads) -> list[Reads]:
    """The single parts ``reads`` holds, in declaration order."""
    return [part for part in Reads if part.value and part in reads and part is not Reads.ALL and _single(part)]


def _single(part: Reads) -> bool:
    return part.value & (part.value - 1) == 0


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value
