"""OpenLLMetry / Traceloop traces (``opentelemetry-instrumentation-openai``, ``-anthropic``, ``-langchain``, ... with
``gen_ai.prompt.<i>.*`` / ``gen_ai.completion.<i>.*`` and ``traceloop.*`` attributes) -> ADK invocations.

* **Model calls** are spans with indexed prompts or completions (``openai.chat``, ``anthropic.chat``, ...):
  ``gen_ai.prompt.<i>.{role,content,tool_call_id,tool_calls.<j>.{id,name,arguments}}`` and
  ``gen_ai.completion.<i>.{role,content,finish_reason,tool_calls.<j>.{id,name,arguments}}`` (also the legacy
  ``function_call.{name,arguments}``); offered tools from ``llm.request.functions.<i>.{name,description,parameters}``;
  tokens from ``gen_ai.usage.{input,output}_tokens`` or the deprecated ``prompt_tokens``/``completion_tokens``.
* **Tool runs** are ``traceloop.span.kind = tool`` spans: arguments from ``traceloop.entity.input`` (the
  ``{"inputs": ...}`` and ``{"args", "kwargs"}`` wrappers are unwrapped), result from ``traceloop.entity.output``
  (``{"outputs": ...}`` unwrapped, a LangChain ``ToolMessage`` reduced to its content).
* **Invocation roots** are ``workflow``/``agent`` spans with no such span above them; their
  ``traceloop.entity.input``/``output`` are the user message and the final response when they hold text. Without
  them, each root span holding model calls is a unit, and the model calls of a unit are split into user turns: a call
  whose input ends with tool results continues the turn before it (so a tool loop of bare ``openai.chat`` spans is one
  invocation, and the cumulative history a later turn re-sends is not counted twice).
* Agents used as tools: spans below a tool span are not part of the trajectory (same rule as the other conventions).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from otel_eval import semconv
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct import _langchain as lc
from otel_eval.reconstruct._draft import (
    InvocationDraft,
    ModelCall,
    ToolRun,
    function_call_part,
    normalize_role,
    text_content,
    texts_of,
)
from otel_eval.reconstruct._flattened import first_str, has_indexed, indexed
from otel_eval.reconstruct._grouping import (
    InvocationReader,
    invocations_of_roots,
    trace_invocations,
    turn_invocations,
)
from otel_eval.reconstruct._span_tree import SpanTree, nested_span_ids
from otel_eval.reconstruct._token_usage import usage_from
from otel_eval.reconstruct._values import nonempty_str, parse_json, tool_call_args, tool_response_payload
from otel_eval.reconstruct.base import Convention, TraceInvocations
from otel_eval.reconstruct.reads import Reads
from otel_eval.reconstruct.sessions import session_id_of
from otel_eval.traces.span import Span

WORKFLOW = "workflow"
AGENT = "agent"
TOOL = "tool"
_TEXT_KEYS = ("input", "question", "query", "prompt", "task", "output", "answer", "content", "text")


class OpenLLMetryConvention(Convention):
    """Traceloop's OpenLLMetry: indexed ``gen_ai.prompt``/``gen_ai.completion`` and ``traceloop.*`` spans."""

    name = "openllmetry"

    def detect(self, spans: Sequence[Span]) -> bool:
        """Indexed prompts/completions or ``traceloop.span.kind``, and no new-style GenAI messages (GenAI's job)."""
        found = False
        for span in spans:
            attributes = span.attributes
            if semconv.GEN_AI_INPUT_MESSAGES in attributes or semconv.GEN_AI_OUTPUT_MESSAGES in attributes:
                return False
            if any(e.name == semconv.GEN_AI_OPERATION_DETAILS_EVENT for e in span.events):
                return False
            found = found or (
                is_model_call(span) or semconv.TRACELOOP_SPAN_KIND in attributes or _has_entity_io(attributes)
            )
        return found

    def rebuild(self, spans: Sequence[Span], reads: Reads = Reads.ALL) -> TraceInvocations:
        """One invocation per workflow/agent root, or per user turn of bare model calls, built with the parts ``reads``
        asks for."""
        tree = SpanTree(spans)
        roots = _agent_roots(tree)
        if roots:
            invocations = invocations_of_roots(tree, roots, lambda root, members: _Reader(tree, root, members), reads)
        else:
            invocations = turn_invocations(tree, self.name, lambda root, members: _Reader(tree, root, members), reads)
        return trace_invocations(tree, self.name, invocations, "OpenLLMetry spans but no workflow, agent or model call")


def _has_entity_io(attributes: Mapping[str, Any]) -> bool:
    return semconv.TRACELOOP_ENTITY_INPUT in attributes or semconv.TRACELOOP_ENTITY_OUTPUT in attributes


def _is_agent(span: Span) -> bool:
    return _kind(span) == AGENT


def _kind(span: Span) -> str:
    value = span.attributes.get(semconv.TRACELOOP_SPAN_KIND)
    return value.lower() if isinstance(value, str) else ""


def is_model_call(span: Span) -> bool:
    """A span with indexed prompts or completions, or an LLM request type."""
    attributes = span.attributes
    if has_indexed(attributes, semconv.GEN_AI_PROMPT) or has_indexed(attributes, semconv.GEN_AI_COMPLETION):
        return True
    return attributes.get(semconv.LLM_REQUEST_TYPE) in ("chat", "completion") and _kind(span) == ""


def _agent_roots(tree: SpanTree) -> list[Span]:
    def is_container(span: Span) -> bool:
        return _kind(span) in (WORKFLOW, AGENT)

    return tree.tops(tree.spans, is_container)


def indexed_message(entry: Mapping[str, Any], warnings: list[str], where: str) -> genai_types.Content:
    """One ``gen_ai.prompt.<i>.*`` / ``gen_ai.completion.<i>.*`` entry as a genai ``Content``."""
    role = normalize_role(entry.get("role") or "assistant")
    parts: list[genai_types.Part] = []
    content = entry.get("content")
    call_id = entry.get("tool_call_id")
    if role == "tool" and isinstance(call_id, str) and call_id:
        response = genai_types.FunctionResponse(id=call_id, response=tool_response_payload(content))
        parts.append(genai_types.Part(function_response=response))
    elif _is_text_blocks(content):
        text = lc.message_text({"content": parse_json(content)[0]})
        if text:
            parts.append(genai_types.Part(text=text))
    elif isinstance(content, str) and content:
        parts.append(genai_types.Part(text=content))
    calls = indexed(entry, "tool_calls")
    if isinstance(entry.get("function_call.name"), str):
        calls.append({"name": entry["function_call.name"], "arguments": entry.get("function_call.arguments")})
    for call in calls:
        part = function_call_part(call.get("name"), call.get("arguments"), call.get("id"), warnings, where)
        if part is not None:
            parts.append(part)
    return genai_types.Content(role=role, parts=parts)


def _is_text_blocks(content: Any) -> bool:
    """Whether a content string is a JSON list of text blocks (multimodal prompts), not just JSON-looking text."""
    blocks, ok = parse_json(content)
    return (
        ok
        and isinstance(blocks, list)
        and bool(blocks)
        and all(isinstance(b, dict) and ("text" in b or b.get("type") in ("text", "image_url")) for b in blocks)
    )


def _unwrap_entity(value: Any, key: str) -> Any:
    parsed, ok = parse_json(value)
    if ok and isinstance(parsed, dict) and key in parsed:
        return parsed[key]
    return parsed if ok else value


def _entity_text(value: Any, role: str) -> str | None:
    """Text of a ``traceloop.entity.input``/``output`` value (plain, a messages list/dict, or a known text field)."""
    inner = _unwrap_entity(_unwrap_entity(value, "inputs"), "outputs")
    if isinstance(inner, str):
        return inner if inner.strip() else None
    if isinstance(inner, dict):
        messages = lc.messages_of(inner)
        if messages:
            return lc.last_text(messages, role)
        args = inner.get("args")
        if isinstance(args, list) and args and isinstance(args[0], str):
            return args[0]
        for key in _TEXT_KEYS:
            field = inner.get(key)
            if isinstance(field, str) and field.strip():
                return field
            if isinstance(field, dict):
                nested = _entity_text(field, role)
                if nested:
                    return nested
    if isinstance(inner, list):
        messages = [m for m in (lc.unwrap(item) for item in inner) if m is not None]
        return lc.last_text(messages, role)
    return None


class _Reader(InvocationReader):
    """Reads one invocation's spans."""

    def is_model_call(self, span: Span) -> bool:
        return is_model_call(span)

    def is_tool(self, span: Span) -> bool:
        return _kind(span) == TOOL

    def nested(self) -> set[str]:
        return nested_span_ids(self.tree, self.root, self.members, is_tool=self.is_tool, is_agent=_is_agent)

    @functools.cached_property
    def agent_above(self) -> dict[str, Span]:
        return self.tree.nearest(_is_agent, within=self.member_ids)

    def author(self, span: Span) -> str | None:
        if _is_agent(span):
            return _entity_name(span)
        agent = self.agent_above.get(span.span_id)
        return None if agent is None else _entity_name(agent)

    def draft(self) -> InvocationDraft:
        root = self.root
        nested = self.nested()
        draft = InvocationDraft(convention=OpenLLMetryConvention.name, root=root)
        for span in self.members:
            if span.span_id == root.span_id:
                continue
            if is_model_call(span):
                call = self.model_call(span)
                (draft.nested_model_calls if span.span_id in nested else draft.model_calls).append(call)
            elif _kind(span) == TOOL and span.span_id not in nested:
                draft.tool_runs.append(self.tool_run(span))
        draft.agent_name = _entity_name(root) if _kind(root) == AGENT else None
        draft.agent_name = draft.agent_name or next((c.author for c in draft.model_calls if c.author), None)
        draft.agent_name = draft.agent_name or _entity_name(root)
        draft.root_input = text_content(
            _entity_text(root.attributes.get(semconv.TRACELOOP_ENTITY_INPUT), "user"), "user"
        )
        draft.root_output = text_content(
            _entity_text(root.attributes.get(semconv.TRACELOOP_ENTITY_OUTPUT), "model"), "model"
        )
        draft.root_usage = usage_from(root.attributes)
        draft.session_id = self.session_id()
        draft.content_captured = any(self.has_content(s) for s in self.members)
        draft.warnings = self.warnings
        return draft

    def session_id(self) -> str | None:
        return session_id_of([self.root, *self.members])

    def has_content(self, span: Span) -> bool:
        attributes = span.attributes
        return (
            has_indexed(attributes, semconv.GEN_AI_PROMPT)
            or has_indexed(attributes, semconv.GEN_AI_COMPLETION)
            or _has_entity_io(attributes)
        )

    def model_call(self, span: Span) -> ModelCall:
        where = f"span {span.span_id} ({span.name!r})"
        attributes = span.attributes
        inputs = [indexed_message(e, self.warnings, where) for e in indexed(attributes, semconv.GEN_AI_PROMPT)]
        outputs = [indexed_message(e, self.warnings, where) for e in indexed(attributes, semconv.GEN_AI_COMPLETION)]
        system = [t for m in inputs if m.role == "system" for t in texts_of(m)]
        call = ModelCall(
            span=span,
            author=self.author(span),
            outputs=outputs,
            model=first_str(attributes, semconv.GEN_AI_REQUEST_MODEL, semconv.GEN_AI_RESPONSE_MODEL),
            usage=usage_from(attributes),
            system_instruction="\n".join(system) or None,
            tool_declarations=_functions(attributes),
        )
        call.inputs = inputs
        return call

    def tool_run(self, span: Span) -> ToolRun:
        attributes = span.attributes
        where = f"span {span.span_id} ({span.name!r})"
        name = attributes.get(semconv.GEN_AI_TOOL_NAME) or attributes.get(semconv.TRACELOOP_ENTITY_NAME)
        if not isinstance(name, str) or not name:
            name = span.name.removesuffix(".tool")
        run = ToolRun(span=span, name=name, call_id=nonempty_str(attributes.get(semconv.GEN_AI_TOOL_CALL_ID)))
        if semconv.TRACELOOP_ENTITY_INPUT in attributes:
            raw = _unwrap_entity(attributes[semconv.TRACELOOP_ENTITY_INPUT], "inputs")
            args = tool_call_args(raw, self.warnings, where)
            keywords = args.get("kwargs")
            if set(args) <= {"args", "kwargs"} and isinstance(keywords, dict) and not args.get("args"):
                args = dict(keywords)
            run.args = args
        if semconv.TRACELOOP_ENTITY_OUTPUT in attributes:
            output = _unwrap_entity(attributes[semconv.TRACELOOP_ENTITY_OUTPUT], "outputs")
            message = lc.tool_message(output)
            if message is not None:
                run.response, call_id, _ = message
                run.call_id = run.call_id or call_id
            else:
                run.response = tool_response_payload(output)
        if span.status_code == "ERROR":
            run.error = span.status_message or "error"
        return run


def _entity_name(span: Span) -> str | None:
    name = first_str(
        span.attributes, semconv.GEN_AI_AGENT_NAME, semconv.TRACELOOP_ENTITY_NAME, semconv.TRACELOOP_WORKFLOW_NAME
    )
    return name or span.name.removesuffix(".agent").removesuffix(".workflow") or None


def _functions(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    declarations: list[dict[str, Any]] = []
    for entry in indexed(attributes, semconv.LLM_REQUEST_FUNCTIONS):
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            continue
        declaration: dict[str, Any] = {"name": name}
        if isinstance(entry.get("description"), str):
            declaration["description"] = entry["description"]
        parameters, _ = parse_json(entry.get("parameters"))
        if isinstance(parameters, dict):
            declaration["parameters_json_schema"] = parameters
        declarations.append(declaration)
    return declarations
