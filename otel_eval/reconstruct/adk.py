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

import dataclasses
import functools
import json
from collections.abc import Sequence
from typing import Any

import pydantic

from otel_eval import semconv
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._adk_events import rebuild_invocations
from otel_eval.reconstruct._adk_spans import (
    ModelCall,
    SpanIndex,
    agent_name,
    is_agent_span,
    is_run_root,
    parse_json_object,
    usage_of,
)
from otel_eval.reconstruct.adk_v2 import genai_model_content, is_generate_content
from otel_eval.reconstruct.base import Convention, TraceInvocations
from otel_eval.traces.span import Span

CONVENTION_NAME = "adk"
CALL_LLM = "call_llm"
_TOOLS_CACHE_SIZE = 64


def is_call_llm(span: Span) -> bool:
    """A legacy ADK model call span."""
    return span.name == CALL_LLM or (
        semconv.ADK_LLM_REQUEST in span.attributes and not span.name.startswith("execute_tool")
    )


class AdkConvention(Convention):
    """Rebuilds invocations from ADK's legacy spans (``call_llm`` with JSON request/response attributes)."""

    name = CONVENTION_NAME

    def detect(self, spans: Sequence[Span]) -> bool:
        """ADK legacy: a ``call_llm`` span, or an ``agent_run [..]`` span of very old ADK."""
        return any(is_call_llm(s) or s.name.startswith("agent_run [") for s in spans)

    def rebuild(self, spans: Sequence[Span]) -> TraceInvocations:
        """One invocation per ADK invocation id (user turn); AgentTool inner runs are dropped as ADK drops them."""
        index = SpanIndex(spans)
        children = _children_by_parent(spans)
        model_spans = [s for s in spans if is_call_llm(s)]
        result = rebuild_invocations(
            spans,
            model_spans,
            lambda span, warnings: _model_call(index, span, children, warnings),
            convention=self.name,
            model_timing=[_timing_span(s, children) for s in model_spans],
            tool_args_key=semconv.ADK_TOOL_CALL_ARGS,
            tool_result_key=semconv.ADK_TOOL_RESPONSE,
        )
        if not model_spans and any(is_run_root(s) or is_agent_span(s) for s in spans):
            result.warnings.append(f"trace {result.trace_id}: ADK agent spans but no model call span")
        return result


def _children_by_parent(spans: Sequence[Span]) -> dict[str, list[Span]]:
    children: dict[str, list[Span]] = {}
    for span in spans:
        if span.parent_span_id:
            children.setdefault(span.parent_span_id, []).append(span)
    return children


def _timing_span(call_llm: Span, children: dict[str, list[Span]]) -> Span:
    """A span timing the wait on the model: the innermost inference span under ``call_llm`` (ADK's
    ``generate_content``, or another instrumentation's client span such as OpenLLMetry's ``openai.chat``), ended
    where the first tool nested in it starts.

    On ADK 1.x ``call_llm`` and ``generate_content`` stay open while the tools they asked for run (the span context
    leaks out of an async generator), so taken whole they would count tool time as model time.
    """
    timing = call_llm
    while True:
        kids = children.get(timing.span_id, [])
        inner = next(
            (c for c in kids if is_generate_content(c) or c.attr(semconv.GEN_AI_REQUEST_MODEL) is not None), None
        )
        if inner is None:
            break
        timing = inner
    tool_starts = [c.start_time_ns for c in _descendants(timing, children) if c.name.startswith("execute_tool")]
    if tool_starts and min(tool_starts) < timing.end_time_ns:
        return dataclasses.replace(timing, end_time_ns=max(timing.start_time_ns, min(tool_starts)))
    return timing


def _descendants(span: Span, children: dict[str, list[Span]]) -> list[Span]:
    found: list[Span] = []
    pending = list(children.get(span.span_id, []))
    seen = {span.span_id}
    while pending:
        child = pending.pop()
        if child.span_id in seen:
            continue
        seen.add(child.span_id)
        found.append(child)
        pending.extend(children.get(child.span_id, []))
    return found


def _model_call(index: SpanIndex, span: Span, children: dict[str, list[Span]], warnings: list[str]) -> ModelCall:
    inference = next((c for c in children.get(span.span_id, []) if is_generate_content(c)), None)
    request = parse_json_object(span, semconv.ADK_LLM_REQUEST, warnings)
    response = parse_json_object(span, semconv.ADK_LLM_RESPONSE, warnings)
    author = (
        (inference.str_attr(semconv.GEN_AI_AGENT_NAME) if inference is not None else None)
        or next((agent_name(a) for a in index.ancestors(span) if is_agent_span(a)), None)
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
            _read_request(call, request, warnings)
        if response:
            call.response = _response_content(span, response, warnings)
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


def _read_request(call: ModelCall, request: dict[str, Any], warnings: list[str]) -> None:
    where = f"span {call.span.span_id} ({call.span.name!r}): {semconv.ADK_LLM_REQUEST}"
    contents: list[genai_types.Content] = []
    raw_contents = request.get("contents") or []
    if not isinstance(raw_contents, list):
        warnings.append(f"{where}: 'contents' is not a list")
        raw_contents = []
    for position, raw in enumerate(raw_contents):
        try:
            contents.append(genai_types.Content.model_validate(strip_thought_signatures(raw)))
        except pydantic.ValidationError as exc:
            warnings.append(f"{where}: contents[{position}] is not a genai Content: {exc.errors()[0]['msg']}")
    call.request = contents
    config = request.get("config") or {}
    if not isinstance(config, dict):
        return
    call.system_instruction = _instruction_text(config.get("system_instruction"))
    raw_tools = config.get("tools")
    if isinstance(raw_tools, list):
        tools, problems = _genai_tools(raw_tools)
        warnings.extend(f"{where}: {problem}" for problem in problems)
        call.tools = list(tools)


_Tools = tuple[tuple[genai_types.Tool, ...], tuple[str, ...]]
"""Validated tools and one problem line per entry that is not a genai ``Tool``."""


def _genai_tools(raw_tools: list[Any]) -> _Tools:
    """``config.tools`` as genai ``Tool`` objects.

    Validating tool declarations (large schemas, and genai's slow per-model checks) is most of the cost of reading a
    ``call_llm`` span, and an agent sends the same declarations on every call: the result is cached by their JSON.
    The cached ``Tool`` objects are shared, so they must not be mutated (they are only dumped, into ``app_details``).
    """
    try:
        key = json.dumps(raw_tools, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError):
        return _validate_tools(raw_tools)
    return _validate_tools_json(key)


@functools.lru_cache(maxsize=_TOOLS_CACHE_SIZE)
def _validate_tools_json(key: str) -> _Tools:
    return _validate_tools(json.loads(key))


def _validate_tools(raw_tools: list[Any]) -> _Tools:
    tools: list[genai_types.Tool] = []
    problems: list[str] = []
    for position, raw in enumerate(raw_tools):
        try:
            tools.append(genai_types.Tool.model_validate(raw))
        except pydantic.ValidationError as exc:
            problems.append(f"config.tools[{position}] is not a genai Tool: {exc.errors()[0]['msg']}")
    return tuple(tools), tuple(problems)


def _instruction_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        parts = value.get("parts") or []
        return "\n".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))
    if isinstance(value, list):
        return "\n".join(v if isinstance(v, str) else _instruction_text(v) or "" for v in value)
    return None


def _response_content(span: Span, response: dict[str, Any], warnings: list[str]) -> genai_types.Content | None:
    raw = response.get("content")
    if raw is None:
        return None
    try:
        return genai_types.Content.model_validate(strip_thought_signatures(raw))
    except pydantic.ValidationError as exc:
        warnings.append(
            f"span {span.span_id} ({span.name!r}): {semconv.ADK_LLM_RESPONSE} content is not a genai Content: "
            f"{exc.errors()[0]['msg']}"
        )
        return None


def strip_thought_signatures(value: Any) -> Any:
    """A genai JSON value without ``thought_signature`` keys (opaque bytes ADK itself strips from traces)."""
    if isinstance(value, dict):
        return {
            k: strip_thought_signatures(v)
            for k, v in value.items()
            if k not in ("thought_signature", "thoughtSignature")
        }
    if isinstance(value, list):
        return [strip_thought_signatures(v) for v in value]
    return value
