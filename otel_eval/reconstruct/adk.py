"""Google ADK, legacy telemetry schema (ADK 1.x, and 2.x with ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``).

Spans: ``invocation`` (the runner turn), ``invoke_agent {name}`` (``agent_run [{name}]`` before ADK 1.16),
``call_llm`` carrying ``gcp.vertex.agent.llm_request`` (JSON ``{model, config, contents}``, the whole history sent)
and ``gcp.vertex.agent.llm_response`` (JSON ``LlmResponse``), ``generate_content {model}`` under it, and
``execute_tool {tool}`` with ``gcp.vertex.agent.tool_call_args`` / ``tool_response`` (plus an ``execute_tool (merged)``
summary after parallel calls). Both JSON attributes are ``"{}"`` when ADK content capture is off.

Recorded traces may carry other instrumentations' spans around and below (HTTP, a2a, OpenLLMetry ``openai.chat``):
only ADK's own spans are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from otel_eval import semconv
from otel_eval.reconstruct._adk_contents import Contents, read_request, response_content
from otel_eval.reconstruct._adk_events import ModelWait, rebuild_invocations
from otel_eval.reconstruct._adk_spans import (
    TOOL_PREFIX,
    ModelCall,
    agent_name,
    is_agent_span,
    is_run_root,
    parse_json_object,
    usage_of,
)
from otel_eval.reconstruct._span_tree import SpanTree
from otel_eval.reconstruct.adk_v2 import genai_model_content, is_generate_content
from otel_eval.reconstruct.base import Convention, TraceInvocations
from otel_eval.reconstruct.reads import Reads
from otel_eval.traces.span import Span

CONVENTION_NAME = "adk"
CALL_LLM = "call_llm"


def is_call_llm(span: Span) -> bool:
    """A legacy ADK model call span."""
    return span.name == CALL_LLM or (
        semconv.ADK_LLM_REQUEST in span.attributes and not span.name.startswith("execute_tool")
    )


class AdkConvention(Convention):
    """Rebuilds invocations from ADK's legacy spans (``call_llm`` with JSON request/response attributes)."""

    name = CONVENTION_NAME

    def detect(self, spans: Sequence[Span]) -> bool:
        """ADK legacy: a ``call_llm`` span, an ``agent_run [..]`` span of very old ADK, or an ``invocation`` span of
        ADK's instrumentation scope (a run no model call was made in has no other)."""
        for span in spans:  # is_call_llm inline: every trace of every convention is asked
            name = span.name
            if (
                name == CALL_LLM
                or name.startswith("agent_run [")
                or (name == "invocation" and span.scope_name == semconv.ADK_SCOPE)
                or (semconv.ADK_LLM_REQUEST in span.attributes and not name.startswith("execute_tool"))
            ):
                return True
        return False

    def rebuild(self, spans: Sequence[Span], reads: Reads = Reads.ALL) -> TraceInvocations:
        """One invocation per ADK invocation id (user turn); AgentTool inner runs are dropped as ADK drops them.
        The session events are replayed whole unless ``reads`` asks only for the tool calls among what the replay gives;
        the user message and the app details are read only when asked."""
        tree = SpanTree(spans)
        model_spans = [s for s in tree.spans if is_call_llm(s)]
        agent_above = tree.nearest(is_agent_span)
        timing = _ModelTiming(tree)
        contents: Contents = {}  # each request repeats the history, earlier responses included: validated once
        result = rebuild_invocations(
            tree,
            model_spans,
            lambda span, warnings: _model_call(tree, span, agent_above.get(span.span_id), warnings, contents),
            convention=self.name,
            model_timing=[timing.of(s) for s in model_spans],
            tool_args_key=semconv.ADK_TOOL_CALL_ARGS,
            reads=reads,
            tool_result_key=semconv.ADK_TOOL_RESPONSE,
        )
        if not result.invocations and any(is_run_root(s) or is_agent_span(s) for s in spans):
            result.warnings.append(f"trace {result.trace_id}: ADK agent spans but no model call span")
        return result


def _is_inference(span: Span) -> bool:
    return is_generate_content(span) or span.attr(semconv.GEN_AI_REQUEST_MODEL) is not None


class _ModelTiming:
    """The span timing the wait on the model for each ``call_llm``: the innermost inference span under it (ADK's
    ``generate_content``, or another instrumentation's client span such as OpenLLMetry's ``openai.chat``), ended where
    the first tool nested in it starts.

    On ADK 1.x ``call_llm`` and ``generate_content`` stay open while the tools they asked for run (the span context
    leaks out of an async generator), so taken whole they would count tool time as model time. The first tool below
    each span is found for every span in one pass from the leaves up; the wait is a ``(span, end)`` pair, not a
    shortened copy of the span.
    """

    def __init__(self, tree: SpanTree) -> None:
        self._tree = tree
        self._innermost: dict[str, Span] = {}
        self._first_tool: dict[str, int] = {}
        for span in reversed(tree.order):
            first: int | None = None
            for kid in tree.children(span):
                below = self._first_tool.get(kid.span_id)
                if kid.name.startswith(TOOL_PREFIX) and (below is None or kid.start_time_ns < below):
                    below = kid.start_time_ns
                if below is not None and (first is None or below < first):
                    first = below
            if first is not None:
                self._first_tool[span.span_id] = first

    def of(self, call_llm: Span) -> ModelWait:
        """The timing span of one ``call_llm`` span, and where the wait on the model ends."""
        timing = self._innermost_of(call_llm)
        first_tool = self._first_tool.get(timing.span_id)
        if first_tool is not None and first_tool < timing.end_time_ns:
            return timing, max(timing.start_time_ns, first_tool)
        return timing, timing.end_time_ns

    def _innermost_of(self, span: Span) -> Span:
        """The innermost inference span at or below ``span`` through inference children (the first at each level).
        Each span's answer is kept, so the chains below all ``call_llm`` spans are walked once in all."""
        path: list[Span] = []
        current = span
        while current.span_id not in self._innermost:
            inner = next((c for c in self._tree.children(current) if _is_inference(c)), None)
            path.append(current)
            if inner is None:
                break
            current = inner
        innermost = self._innermost.get(current.span_id, current)
        for walked in path:
            self._innermost[walked.span_id] = innermost
        return innermost


def _model_call(tree: SpanTree, span: Span, agent: Span | None, warnings: list[str], contents: Contents) -> ModelCall:
    inference = next((c for c in tree.children(span) if is_generate_content(c)), None)
    request = parse_json_object(span, semconv.ADK_LLM_REQUEST, warnings)
    response = parse_json_object(span, semconv.ADK_LLM_RESPONSE, warnings)
    author = (
        (inference.str_attr(semconv.GEN_AI_AGENT_NAME) if inference is not None else None)
        or (agent_name(agent) if agent is not None else None)
        or _label_agent(request)
    )
    model = span.str_attr(semconv.GEN_AI_REQUEST_MODEL) or (request or {}).get("model")
    call = ModelCall(
        span=span,
        author=author,
        model=model if isinstance(model, str) else None,
        request=None,
        response=None,
        captured=not (_placeholder(span, semconv.ADK_LLM_REQUEST) and _placeholder(span, semconv.ADK_LLM_RESPONSE)),
        usage=usage_of(span),
    )
    if call.captured:
        # A malformed attribute was reported by parse_json_object; the other one may still be readable.
        if request:
            read_request(call, request, warnings, contents)
        if response:
            call.response = response_content(span, response, warnings, contents)
    elif inference is not None:
        # Legacy content capture off, but the GenAI semconv content of the inference span may be there.
        genai_model_content(inference, call, warnings)
    return call


def _placeholder(span: Span, key: str) -> bool:
    """Whether a content attribute is absent or ADK's ``"{}"`` placeholder for content it did not capture."""
    value = span.attr(key)
    return value is None or value == {} or (isinstance(value, str) and value.strip() == "{}")


def _label_agent(request: dict[str, Any] | None) -> str | None:
    labels = ((request or {}).get("config") or {}).get("labels")
    name = labels.get("adk_agent_name") if isinstance(labels, dict) else None
    return name if isinstance(name, str) else None
