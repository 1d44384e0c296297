"""Google ADK, semconv-aligned telemetry schema v2 (the ADK 2.13 default, ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=2``).

Spans: ``invoke_workflow {root_agent}`` (the runner turn), ``invoke_agent {name}``, ``generate_content {model}`` (one
per model call, carrying ``gcp.vertex.agent.invocation_id`` and, when span content capture is on, the GenAI messages
``gen_ai.input.messages`` / ``gen_ai.output.messages`` / ``gen_ai.system_instructions``; ``gen_ai.tool.definitions``
always) and ``execute_tool {tool}`` (``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result`` with content).
There is no ``call_llm`` span. Content capture is off by default
(``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``): ``SPAN_ONLY`` / ``SPAN_AND_EVENT`` put it on the span;
``EVENT_ONLY`` on a ``gen_ai.client.inference.operation.details`` log record, read here once joined onto its span as
an event. Without content only tool names, token counts and timings can be rebuilt.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from otel_eval import semconv
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._adk_events import rebuild_invocations
from otel_eval.reconstruct._adk_spans import ModelCall, invocation_of, is_run_root, usage_of
from otel_eval.reconstruct._genai_agent_details import system_instruction_text, tools_from_definitions
from otel_eval.reconstruct._genai_events import content_value, details_value
from otel_eval.reconstruct._genai_messages import contents_from_messages
from otel_eval.reconstruct._span_tree import SpanTree
from otel_eval.reconstruct.base import Convention, TraceInvocations
from otel_eval.reconstruct.reads import Reads
from otel_eval.traces.span import Span

CONVENTION_NAME = "adk_v2"
GENERATE_CONTENT = "generate_content"
GEN_AI_WORKFLOW_NAME = "gen_ai.workflow.name"


def is_generate_content(span: Span) -> bool:
    """An inference span (``generate_content {model}``)."""
    operation = span.str_attr(semconv.GEN_AI_OPERATION_NAME)
    return operation == GENERATE_CONTENT or (operation is None and span.name.startswith(GENERATE_CONTENT))


def _is_adk_model_span(span: Span) -> bool:
    return is_generate_content(span) and invocation_of(span) is not None


class AdkV2Convention(Convention):
    """Rebuilds invocations from ADK's schema-v2 spans (``invoke_workflow``, ``generate_content`` GenAI messages)."""

    name = CONVENTION_NAME

    def detect(self, spans: Sequence[Span]) -> bool:
        """ADK v2: ``generate_content`` spans carrying ADK's invocation id, or ``invoke_workflow`` roots of ADK's
        instrumentation scope (a plain GenAI-semconv workflow is not ADK's); no ``call_llm`` (those are legacy)."""
        found = False
        for span in spans:  # _is_adk_model_span inline: every trace of every convention is asked
            name = span.name
            if name == "call_llm":
                return False
            if found:
                continue
            operation = span.attributes.get(semconv.GEN_AI_OPERATION_NAME)
            if not isinstance(operation, str):
                operation = None
            found = (
                (operation == GENERATE_CONTENT or (operation is None and name.startswith(GENERATE_CONTENT)))
                and invocation_of(span) is not None
            ) or (span.scope_name == semconv.ADK_SCOPE and name.startswith("invoke_workflow") and is_run_root(span))
        return found

    def rebuild(self, spans: Sequence[Span], reads: Reads = Reads.ALL) -> TraceInvocations:
        """One invocation per ADK invocation id (user turn); AgentTool inner runs are dropped as ADK drops them.
        The session events are replayed whole unless ``reads`` asks only for the tool calls among what the replay gives;
        the user message and the app details are read only when asked."""
        tree = SpanTree(spans)
        model_spans = [s for s in tree.spans if _is_adk_model_span(s)]
        result = rebuild_invocations(
            tree,
            model_spans,
            _model_call,
            convention=self.name,
            model_timing=[(s, s.end_time_ns) for s in model_spans],
            tool_args_key=semconv.GEN_AI_TOOL_CALL_ARGUMENTS,
            reads=reads,
            tool_result_key=semconv.GEN_AI_TOOL_CALL_RESULT,
        )
        if not result.invocations:
            result.warnings.append(f"trace {result.trace_id}: ADK workflow spans but no model call span")
        return result


def _model_call(span: Span, warnings: list[str]) -> ModelCall:
    call = ModelCall(
        span=span,
        author=span.str_attr(semconv.GEN_AI_AGENT_NAME),
        model=span.str_attr(semconv.GEN_AI_REQUEST_MODEL),
        request=None,
        response=None,
        captured=False,
        usage=usage_of(span),
    )
    genai_model_content(span, call, warnings)
    return call


def genai_model_content(span: Span, call: ModelCall, warnings: list[str]) -> None:
    """Fills ``call`` from the GenAI-semconv attributes of an inference span (request, response, instructions, tools),
    or from its ``gen_ai.client.inference.operation.details`` event where the span lacks them (content captured as
    events: the log record joined onto the span, :mod:`otel_eval.traces.log_records`).

    ``call.captured`` becomes True when the span carries input or output messages.
    """
    where = f"span {span.span_id} ({span.name!r})"
    raw_input = content_value(span, semconv.GEN_AI_INPUT_MESSAGES)
    raw_output = content_value(span, semconv.GEN_AI_OUTPUT_MESSAGES)
    if raw_input is not None:
        call.request = contents_from_messages(raw_input, warnings, f"{where}: {semconv.GEN_AI_INPUT_MESSAGES}")
    if raw_output is not None:
        outputs = contents_from_messages(raw_output, warnings, f"{where}: {semconv.GEN_AI_OUTPUT_MESSAGES}")
        call.response = _without_fallback_ids(_merge_streamed(outputs))
    call.captured = raw_input is not None or raw_output is not None
    instructions = content_value(span, semconv.GEN_AI_SYSTEM_INSTRUCTIONS)
    if instructions is not None:
        call.system_instruction = system_instruction_text(
            instructions, warnings, f"{where}: {semconv.GEN_AI_SYSTEM_INSTRUCTIONS}"
        )
    definitions = _richer(
        span.attr(semconv.GEN_AI_TOOL_DEFINITIONS), details_value(span, semconv.GEN_AI_TOOL_DEFINITIONS)
    )
    if definitions is not None:
        tools = tools_from_definitions(definitions, warnings, f"{where}: {semconv.GEN_AI_TOOL_DEFINITIONS}")
        call.tools = [tool.model_dump(mode="json", exclude_none=True) for tool in tools]


def _richer(on_span: Any, on_event: Any) -> Any:
    """ADK records the tool definitions on both the span and the log record, with their parameters only on the side
    that gets content (the span for ``SPAN_ONLY``, the log record for ``EVENT_ONLY``): the longer one is that side."""
    if on_span is None or on_event is None:
        return on_event if on_span is None else on_span
    return on_event if len(_text(on_event)) > len(_text(on_span)) else on_span


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _merge_streamed(outputs: Sequence[genai_types.Content]) -> genai_types.Content | None:
    """One content from the output messages of one call: a streamed answer is recorded as one message per chunk,
    which ADK's aggregator joins (consecutive text parts of the same kind merged)."""
    if not outputs:
        return None
    if len(outputs) == 1:
        return outputs[0]
    parts: list[genai_types.Part] = []
    for content in outputs:
        for part in content.parts or []:
            previous = parts[-1] if parts else None
            if (
                previous is not None
                and part.text is not None
                and previous.text is not None
                and bool(part.thought) == bool(previous.thought)
            ):
                parts[-1] = previous.model_copy(update={"text": previous.text + part.text})
            else:
                parts.append(part)
    return genai_types.Content(role="model", parts=parts)


def _without_fallback_ids(content: genai_types.Content | None) -> genai_types.Content | None:
    """Drops the ``{name}_{index}`` ids ADK invents for calls the model sent without one (ADK's events carry the
    ``adk-...`` id instead, which the tool span names)."""
    if content is None:
        return None
    for position, part in enumerate(content.parts or []):
        call = part.function_call
        if call is not None and call.id in (f"{call.name}_{position}", str(position)):
            call.id = None
    return content
