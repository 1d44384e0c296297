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
import marshal
from collections.abc import Sequence
from typing import Any

import pydantic

from otel_eval import semconv
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._adk_events import rebuild_invocations
from otel_eval.reconstruct._adk_spans import (
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
        tree = SpanTree(spans)
        model_spans = [s for s in tree.spans if is_call_llm(s)]
        agent_above = tree.nearest(is_agent_span)
        timing = _ModelTiming(tree)
        contents: _Contents = {}  # each request repeats the history, earlier responses included: validated once
        result = rebuild_invocations(
            tree,
            model_spans,
            lambda span, warnings: _model_call(tree, span, agent_above.get(span.span_id), warnings, contents),
            convention=self.name,
            model_timing=[timing.of(s) for s in model_spans],
            tool_args_key=semconv.ADK_TOOL_CALL_ARGS,
            tool_result_key=semconv.ADK_TOOL_RESPONSE,
        )
        if not model_spans and any(is_run_root(s) or is_agent_span(s) for s in spans):
            result.warnings.append(f"trace {result.trace_id}: ADK agent spans but no model call span")
        return result


def _is_inference(span: Span) -> bool:
    return is_generate_content(span) or span.attr(semconv.GEN_AI_REQUEST_MODEL) is not None


class _ModelTiming:
    """The span timing the wait on the model for each ``call_llm``: the innermost inference span under it (ADK's
    ``generate_content``, or another instrumentation's client span such as OpenLLMetry's ``openai.chat``), ended where
    the first tool nested in it starts.

    On ADK 1.x ``call_llm`` and ``generate_content`` stay open while the tools they asked for run (the span context
    leaks out of an async generator), so taken whole they would count tool time as model time. Both facts are
    computed for every span in one pass from the leaves up.
    """

    def __init__(self, tree: SpanTree) -> None:
        self._innermost: dict[str, Span] = {}
        self._first_tool: dict[str, int] = {}
        for span in reversed(tree.order):
            kids = tree.children(span)
            if not kids:
                self._innermost[span.span_id] = span
                continue
            inner = next((c for c in kids if _is_inference(c)), None)
            self._innermost[span.span_id] = span if inner is None else self._innermost[inner.span_id]
            starts = [c.start_time_ns for c in kids if c.name.startswith("execute_tool")]
            starts += [self._first_tool[c.span_id] for c in kids if c.span_id in self._first_tool]
            if starts:
                self._first_tool[span.span_id] = min(starts)

    def of(self, call_llm: Span) -> Span:
        """The timing span of one ``call_llm`` span."""
        timing = self._innermost.get(call_llm.span_id, call_llm)
        first_tool = self._first_tool.get(timing.span_id)
        if first_tool is not None and first_tool < timing.end_time_ns:
            return dataclasses.replace(timing, end_time_ns=max(timing.start_time_ns, first_tool))
        return timing


_Contents = dict[bytes | str, genai_types.Content]
"""Request and response contents of one trace already validated, by :func:`_value_key` of their JSON value (shared
between its model calls, a response with the next request that repeats it: not mutated)."""


def _value_key(value: Any) -> bytes | str:
    """A parsed JSON value as a cache key: equal keys for equal values of the same types (``1``, ``1.0`` and ``True``
    differ, as their validation may). Its ``marshal`` form (version 2: no back-references, so two parses of one text
    give one key), about a third of the cost of its ``repr``; the ``repr`` for a value marshal cannot write."""
    try:
        return marshal.dumps(value, 2)
    except ValueError:
        return repr(value)


def _model_call(tree: SpanTree, span: Span, agent: Span | None, warnings: list[str], contents: _Contents) -> ModelCall:
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
            _read_request(call, request, warnings, contents)
        if response:
            call.response = _response_content(span, response, warnings, contents)
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


def _read_request(call: ModelCall, request: dict[str, Any], warnings: list[str], seen: _Contents) -> None:
    where = f"span {call.span.span_id} ({call.span.name!r}): {semconv.ADK_LLM_REQUEST}"
    contents: list[genai_types.Content] = []
    raw_contents = request.get("contents") or []
    if not isinstance(raw_contents, list):
        warnings.append(f"{where}: 'contents' is not a list")
        raw_contents = []
    for position, raw in enumerate(raw_contents):
        try:
            contents.append(_validated_content(raw, seen))
        except pydantic.ValidationError as exc:
            warnings.append(f"{where}: contents[{position}] is not a genai Content: {exc.errors()[0]['msg']}")
    call.request = contents
    config = request.get("config") or {}
    if not isinstance(config, dict):
        return
    call.system_instruction = _instruction_text(config.get("system_instruction"))
    raw_tools = config.get("tools")
    if isinstance(raw_tools, list):
        declarations, problems = _genai_tools(raw_tools)
        warnings.extend(f"{where}: {problem}" for problem in problems)
        call.tools = list(declarations)


_Tools = tuple[tuple[dict[str, Any], ...], tuple[str, ...]]
"""The declarations of the valid genai ``Tool``s (each dumped as ``app_details`` holds it), and one problem line
per entry that is not a genai ``Tool``."""


def _genai_tools(raw_tools: list[Any]) -> _Tools:
    """``config.tools`` validated as genai ``Tool`` objects, and dumped as ``app_details`` holds them.

    Validating tool declarations (large schemas, and genai's slow per-model checks) and dumping them again is most of
    the cost of reading a ``call_llm`` span, and an agent sends the same declarations on every call: the result is
    cached by their value. The cached declarations are shared, so they must not be mutated.
    """
    return _validate_tools_once(_ByValue(raw_tools))


class _ByValue:
    """A parsed JSON value as a cache key, compared by :func:`_value_key`."""

    __slots__ = ("key", "value")

    def __init__(self, value: Any) -> None:
        self.value, self.key = value, _value_key(value)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ByValue) and other.key == self.key


@functools.lru_cache(maxsize=_TOOLS_CACHE_SIZE)
def _validate_tools_once(raw_tools: _ByValue) -> _Tools:
    return _validate_tools(raw_tools.value)


def _validate_tools(raw_tools: list[Any]) -> _Tools:
    declarations: list[dict[str, Any]] = []
    problems: list[str] = []
    for position, raw in enumerate(raw_tools):
        try:
            tool = genai_types.Tool.model_validate(raw)
        except pydantic.ValidationError as exc:
            problems.append(f"config.tools[{position}] is not a genai Tool: {exc.errors()[0]['msg']}")
        else:
            declarations.append(tool.model_dump(mode="json", exclude_none=True))
    return tuple(declarations), tuple(problems)


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


def _validated_content(raw: Any, seen: _Contents) -> genai_types.Content:
    """A request or response content, validated once per trace.

    Raises:
        pydantic.ValidationError: it is not a genai ``Content``.
    """
    key = _value_key(raw)
    content = seen.get(key)
    if content is None:
        content = seen[key] = genai_types.Content.model_validate(strip_thought_signatures(raw))
    return content


def _response_content(
    span: Span, response: dict[str, Any], warnings: list[str], seen: _Contents
) -> genai_types.Content | None:
    raw = response.get("content")
    if raw is None:
        return None
    try:
        return _validated_content(raw, seen)
    except pydantic.ValidationError as exc:
        warnings.append(
            f"span {span.span_id} ({span.name!r}): {semconv.ADK_LLM_RESPONSE} content is not a genai Content: "
            f"{exc.errors()[0]['msg']}"
        )
        return None


_THOUGHT_SIGNATURE_KEYS = ("thought_signature", "thoughtSignature")


def strip_thought_signatures(content: Any) -> Any:
    """A genai ``Content`` JSON value whose parts carry no thought signature (opaque bytes ADK itself clears from the
    parts it traces); a value without any, or not a content, is returned as it is. Only what changes is copied."""
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list) or not any(
        isinstance(part, dict) and any(key in part for key in _THOUGHT_SIGNATURE_KEYS) for part in parts
    ):
        return content
    return {
        **content,
        "parts": [
            {k: v for k, v in part.items() if k not in _THOUGHT_SIGNATURE_KEYS} if isinstance(part, dict) else part
            for part in parts
        ],
    }
