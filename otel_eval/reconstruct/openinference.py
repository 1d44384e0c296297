"""OpenInference traces (Arize ``openinference-instrumentation-*``: LangChain/LangGraph, smolagents, Claude Agent SDK,
OpenAI Agents SDK, ...) -> ADK invocations.

Spans are typed by ``openinference.span.kind``. An **invocation root** is an ``AGENT`` span, or a ``CHAIN`` span that is
a LangGraph graph (``LangGraph``) or a root of the trace with model/tool spans below it, that has no such span above it;
so the OpenAI Agents ``Agent workflow`` span (whose agents hand off to each other) is one invocation, and the LangGraph
routing nodes that LangChain labels ``AGENT`` inside a graph are not invocations of their own. A trace with no such
span yields one invocation per root span that is or contains an ``LLM`` span.

Inside an invocation:

* model calls are the ``LLM`` spans (``llm.input_messages.<i>.message.*`` / ``llm.output_messages.<i>.message.*``:
  ``role``, ``content`` (or ``content.<j>`` strings), ``contents.<j>.message_content.{type,text}`` (``reasoning``
  becomes a thought part), ``tool_calls.<k>.tool_call.{id,function.name,function.arguments}``, ``tool_call_id``);
  when there is no ``LLM`` span (the Claude Agent SDK emits none), the root's own ``llm.output_messages`` are read as
  the model's outputs, one per message; an ``LLM`` span that records content but no messages, tool calls or tokens
  only prepared a request (LlamaIndex's ``_prepare_chat_with_tools``) and is no model call;
* tool runs are the ``TOOL`` spans: ``tool.name`` (a CrewAI tool's: the name the model calls it by, see
  ``_openinference_values``), ``tool.id``, arguments from ``input.value`` (smolagents'
  ``{"args", "kwargs"}`` wrapper is unwrapped, positional args named from ``tool.parameters``; when ``input.value``
  is absent, ``tool.parameters`` holds the arguments as the Claude Agent SDK writes them), result from
  ``output.value`` (a LangChain ``ToolMessage`` or LlamaIndex ``ToolOutput`` is unwrapped, see ``_envelopes``);
  ``handoff to <agent>`` spans are not tool runs (the model's ``transfer_to_<agent>`` call is);
* the user message is the root's ``input.value`` (plain text, smolagents' ``{"task"}``, LangGraph's
  ``{"messages"}``, a CrewAI kickoff's inputs), else the last user message of the first model call; the final
  response is the root's ``output.value`` when it has text (not a Python repr), else the last model text (see
  ``_openinference_values`` and ``_trajectory``);
* without LLM spans (CrewAI's default instrumentation), an agent span's ``TaskOutput`` messages are the model turns;
* a value OpenInference's ``TraceConfig`` hid (``OPENINFERENCE_HIDE_INPUTS``, ``OPENINFERENCE_HIDE_OUTPUTS``, ...:
  the placeholder ``__REDACTED__``) is read as absent, so spans whose content is all hidden are content not captured.

**Agents used as tools** (the OpenAI Agents ``ask_<specialist>`` tools, Claude's ``Agent`` tool with its sub-agent):
the tool call and its result are part of the trajectory, the sub-agent's own model calls and tools are not -- what the
user saw the top-level agent do, and what ADK does with ``AgentTool``. Their tokens still count in ``token_usage``.

ADOT (CloudWatch) exports of LangChain carry no span kinds: every span is named after the instrumentation scope,
has no parent, and holds its content in an event body ``{"input": {"messages"}, "output": {"messages"}}``. The kind is
then inferred from that body (see ``_adot_bodies``), and spans are placed under the root whose time range contains
them.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from otel_eval import semconv
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct import _langchain as lc
from otel_eval.reconstruct._adot_bodies import AGENT, CHAIN, LLM, TOOL, body_messages, body_model_call, span_kind
from otel_eval.reconstruct._draft import (
    InvocationDraft,
    ModelCall,
    ToolRun,
    function_call_part,
    last_user_text,
    normalize_role,
    text_content,
    texts_of,
)
from otel_eval.reconstruct._flattened import first_int, first_str, has_indexed, indexed, string_list
from otel_eval.reconstruct._grouping import InvocationReader, invocations_of_roots, trace_invocations
from otel_eval.reconstruct._openinference_values import (
    REDACTED,
    crewai_model_tool_name,
    kickoff_inputs_text,
    output_tool_calls,
    run_method_agent,
    task_messages,
    value_text,
)
from otel_eval.reconstruct._span_tree import SpanTree, nested_span_ids
from otel_eval.reconstruct._token_usage import Usage
from otel_eval.reconstruct._values import nonempty_str, parse_json, tool_call_args, tool_response_payload
from otel_eval.reconstruct.base import Convention, TraceInvocations
from otel_eval.reconstruct.reads import Reads
from otel_eval.reconstruct.sessions import session_id_of
from otel_eval.traces.span import Span

_LANGGRAPH = "LangGraph"
_HANDOFF_PREFIX = "handoff to "
_THOUGHT_TYPES = frozenset({"reasoning", "thinking"})
_INPUT_KEYS = ("task", "input", "query", "question", "prompt")
_OUTPUT_KEYS = ("output", "answer", "final_answer", "content")


class OpenInferenceConvention(Convention):
    """OpenInference span kinds and flattened ``llm.*_messages`` attributes."""

    name = "openinference"

    def detect(self, spans: Sequence[Span]) -> bool:
        """Any span with ``openinference.span.kind``, or from an ``openinference.instrumentation.*`` scope."""
        return any(
            semconv.OPENINFERENCE_SPAN_KIND in s.attributes
            or (s.scope_name or "").startswith(semconv.OPENINFERENCE_SCOPE_PREFIX)
            for s in spans
        )

    def rebuild(self, spans: Sequence[Span], reads: Reads = Reads.ALL) -> TraceInvocations:
        """One invocation per invocation root (see the module docstring), built with the parts ``reads`` asks for."""
        tree = SpanTree([_unredacted(s) for s in spans])
        kinds = {s.span_id: span_kind(s) for s in tree.spans}
        invocations = invocations_of_roots(
            tree, _invocation_roots(tree, kinds), lambda root, members: _Reader(tree, kinds, root, members), reads
        )
        return trace_invocations(
            tree, self.name, invocations, "OpenInference spans but no agent, chain or LLM span to rebuild"
        )


def _unredacted(span: Span) -> Span:
    """``span`` without the attributes OpenInference's ``TraceConfig`` hid (``OPENINFERENCE_HIDE_INPUTS``, ...): their
    value is its placeholder, which is no content. With its input hidden, a tool span's ``tool.parameters`` is not
    read as the arguments either (CrewAI's is the tool's schema)."""
    attributes = span.attributes
    if REDACTED not in attributes.values():
        return span
    hidden = {k for k, v in attributes.items() if v == REDACTED}
    if semconv.INPUT_VALUE in hidden:
        hidden.add(semconv.TOOL_PARAMETERS)
    return replace(span, attributes={k: v for k, v in attributes.items() if k not in hidden})


def _invocation_roots(tree: SpanTree, kinds: Mapping[str, str]) -> list[Span]:
    # Only tree roots look below themselves, and their subtrees are disjoint: linear in all.
    def has_work_below(span: Span) -> bool:
        return any(kinds.get(d.span_id) in (LLM, TOOL, AGENT) for d in tree.subtree(span)[1:])

    candidates = {
        s.span_id
        for s in tree.spans
        if kinds[s.span_id] == AGENT
        or (kinds[s.span_id] == CHAIN and (s.name == _LANGGRAPH or (tree.parent(s) is None and has_work_below(s))))
    }
    roots = tree.tops(tree.spans, lambda s: s.span_id in candidates)
    if roots:
        return roots
    return [r for r in tree.roots if kinds[r.span_id] == LLM or any(kinds[d.span_id] == LLM for d in tree.subtree(r))]


def _usage(attributes: Mapping[str, Any]) -> Usage:
    return Usage(
        input_tokens=first_int(attributes, semconv.LLM_TOKEN_COUNT_PROMPT, semconv.GEN_AI_USAGE_INPUT_TOKENS),
        output_tokens=first_int(attributes, semconv.LLM_TOKEN_COUNT_COMPLETION, semconv.GEN_AI_USAGE_OUTPUT_TOKENS),
        cached_input_tokens=first_int(attributes, semconv.LLM_TOKEN_COUNT_CACHE_READ),
        reasoning_tokens=first_int(attributes, semconv.LLM_TOKEN_COUNT_REASONING),
    )


def _model_name(attributes: Mapping[str, Any]) -> str | None:
    return first_str(attributes, semconv.LLM_MODEL_NAME, semconv.GEN_AI_REQUEST_MODEL, semconv.GEN_AI_RESPONSE_MODEL)


def flat_message(entry: Mapping[str, Any], warnings: list[str], where: str) -> genai_types.Content:
    """One flattened ``message.*`` entry as a genai ``Content`` (role normalised, tool results as responses)."""
    role = normalize_role(entry.get("message.role"))
    parts: list[genai_types.Part] = []
    contents = indexed(entry, "message.contents")
    if contents:
        for item in contents:
            text = item.get("message_content.text")
            if isinstance(text, str) and text:
                thought = str(item.get("message_content.type", "text")).lower() in _THOUGHT_TYPES
                parts.append(genai_types.Part(text=text, thought=True if thought else None))
    else:
        parts.extend(genai_types.Part(text=t) for t in string_list(entry, "message.content") if t)
    call_id = entry.get("message.tool_call_id")
    if role == "tool" and isinstance(call_id, str) and call_id:
        text = "\n".join(p.text for p in parts if p.text)
        name = entry.get("message.name")
        parts = [
            genai_types.Part(
                function_response=genai_types.FunctionResponse(
                    id=call_id, name=name if isinstance(name, str) else None, response=tool_response_payload(text)
                )
            )
        ]
    for call in indexed(entry, "message.tool_calls"):
        part = function_call_part(
            call.get("tool_call.function.name"),
            call.get("tool_call.function.arguments"),
            call.get("tool_call.id"),
            warnings,
            where,
        )
        if part is not None:
            parts.append(part)
    return genai_types.Content(role=role, parts=parts)


def _tool_declarations(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    declarations: list[dict[str, Any]] = []
    for entry in indexed(attributes, semconv.LLM_TOOLS):
        schema, _ = parse_json(entry.get("tool.json_schema"))
        if isinstance(schema, dict) and isinstance(schema.get("function"), dict):
            schema = schema["function"]
        if not isinstance(schema, dict) or not isinstance(schema.get("name"), str):
            continue
        declaration: dict[str, Any] = {"name": schema["name"]}
        if isinstance(schema.get("description"), str):
            declaration["description"] = schema["description"]
        parameters = schema.get("parameters", schema.get("input_schema"))
        if isinstance(parameters, dict):
            declaration["parameters_json_schema"] = parameters
        declarations.append(declaration)
    return declarations


class _Reader(InvocationReader):
    """Reads one invocation's spans into an :class:`InvocationDraft`."""

    def __init__(self, tree: SpanTree, kinds: Mapping[str, str], root: Span, members: Sequence[Span]) -> None:
        super().__init__(tree, root, members)
        self.kinds = kinds

    def kind(self, span: Span) -> str:
        return self.kinds.get(span.span_id, "")

    def agent_label(self, span: Span) -> str | None:
        return first_str(span.attributes, semconv.AGENT_NAME, semconv.GEN_AI_AGENT_NAME, semconv.GRAPH_NODE_ID)

    @functools.cached_property
    def labelled_agent_above(self) -> dict[str, Span]:
        return self.tree.nearest(lambda a: self.kind(a) == AGENT and bool(self.agent_label(a)), within=self.member_ids)

    def author(self, span: Span) -> str | None:
        agent = self.labelled_agent_above.get(span.span_id)
        return None if agent is None else self.agent_label(agent)

    def draft(self) -> InvocationDraft:
        root = self.root
        nested = nested_span_ids(
            self.tree,
            root,
            self.members,
            is_tool=lambda s: self.kind(s) == TOOL,
            is_agent=lambda s: self.kind(s) == AGENT,
        )
        draft = InvocationDraft(convention=OpenInferenceConvention.name, root=root)
        for span in self.members:
            kind = self.kind(span)
            if kind == LLM and not self.prepares_only(span):
                call = self.model_call(span)
                (draft.nested_model_calls if span.span_id in nested else draft.model_calls).append(call)
            elif kind == TOOL and span.span_id not in nested and span.span_id != root.span_id:
                run = self.tool_run(span)
                if run is not None:
                    draft.tool_runs.append(run)
        if not draft.model_calls:
            draft.model_calls = self.task_model_calls()
        draft.agent_name = (
            self.agent_label(root)
            or next((c.author for c in draft.model_calls if c.author), None)
            or next((self.agent_label(s) for s in self.members if self.kind(s) == AGENT and self.agent_label(s)), None)
            or run_method_agent(root, self.members)
            or (None if root.name.startswith(semconv.OPENINFERENCE_SCOPE_PREFIX) else root.name)
        )
        if not draft.model_calls and has_indexed(root.attributes, semconv.LLM_OUTPUT_MESSAGES):
            draft.model_calls = [
                ModelCall(span=root, author=draft.agent_name, outputs=[content], synthetic=True)
                for content in self.flat_messages(root, semconv.LLM_OUTPUT_MESSAGES)
            ]
        if self.kind(root) != LLM:
            draft.root_input = self.root_text(root, "input")
            draft.root_output = self.root_text(root, "output") or self.final_answer(draft.tool_runs)
        draft.root_usage = _usage(root.attributes)
        draft.root_model = _model_name(root.attributes)
        draft.session_id = self.session_id()
        draft.content_captured = any(self.has_content(s) for s in self.members)
        draft.warnings = self.warnings
        return draft

    def session_id(self) -> str | None:
        return session_id_of([self.root, *self.members])

    def has_content(self, span: Span) -> bool:
        attributes = span.attributes
        if semconv.INPUT_VALUE in attributes or semconv.OUTPUT_VALUE in attributes:
            return True
        if has_indexed(attributes, semconv.LLM_INPUT_MESSAGES) or has_indexed(attributes, semconv.LLM_OUTPUT_MESSAGES):
            return True
        inputs, outputs = body_messages(span)
        return bool(inputs or outputs)

    def flat_messages(self, span: Span, prefix: str) -> list[genai_types.Content]:
        where = f"span {span.span_id} ({span.name!r}) {prefix}"
        return [flat_message(entry, self.warnings, where) for entry in indexed(span.attributes, prefix)]

    def model_call(self, span: Span) -> ModelCall:
        call = ModelCall(
            span=span,
            author=self.author(span),
            model=_model_name(span.attributes),
            usage=_usage(span.attributes),
            tool_declarations=_tool_declarations(span.attributes),
        )
        call.inputs = self.flat_messages(span, semconv.LLM_INPUT_MESSAGES)
        call.outputs = self.flat_messages(span, semconv.LLM_OUTPUT_MESSAGES)
        if not call.outputs and semconv.OUTPUT_VALUE in span.attributes:
            where = f"span {span.span_id} ({span.name!r}) output.value"
            calls = output_tool_calls(span.attributes.get(semconv.OUTPUT_VALUE), self.warnings, where)
            call.outputs = [calls] if calls is not None else []
        if not call.inputs and not call.outputs:
            body_model_call(span, call, self.warnings)
        system = [t for m in call.inputs if m.role == "system" for t in texts_of(m)]
        call.system_instruction = "\n".join(system) or None
        return call

    def prepares_only(self, span: Span) -> bool:
        """An LLM span whose content was captured (``input.value`` and ``output.value``) but that holds no model
        messages, tool calls or token counts only prepared a request (LlamaIndex's ``_prepare_chat_with_tools``,
        beside the model call it prepares); one with an LLM span under it wraps that call (LlamaIndex's
        ``StructuredLLM.achat``): neither is a model call."""
        if any(self.kind(child) == LLM for child in self.tree.children(span)):
            return True
        attributes = span.attributes
        if semconv.INPUT_VALUE not in attributes or semconv.OUTPUT_VALUE not in attributes:
            return False
        if has_indexed(attributes, semconv.LLM_INPUT_MESSAGES) or has_indexed(attributes, semconv.LLM_OUTPUT_MESSAGES):
            return False
        usage = _usage(attributes)
        if usage.input_tokens is not None or usage.output_tokens is not None:
            return False
        where = f"span {span.span_id} ({span.name!r}) output.value"
        return output_tool_calls(attributes.get(semconv.OUTPUT_VALUE), [], where) is None

    def task_model_calls(self) -> list[ModelCall]:
        """Without LLM spans, the model turns an agent span's task output records (CrewAI's ``TaskOutput``): one
        synthetic call per model message, its inputs the messages before it (their system text its instructions)."""
        calls: list[ModelCall] = []
        for span in self.members:
            if self.kind(span) != AGENT:
                continue
            where = f"span {span.span_id} ({span.name!r}) output.value"
            messages = task_messages(span.attributes.get(semconv.OUTPUT_VALUE), self.warnings, where)
            for index, message in enumerate(messages):
                if message.role == "model":
                    call = ModelCall(span=span, author=self.agent_label(span), outputs=[message], synthetic=True)
                    call.inputs = messages[:index]
                    system = [t for m in call.inputs if m.role == "system" for t in texts_of(m)]
                    call.system_instruction = "\n".join(system) or None
                    calls.append(call)
        return calls

    def tool_run(self, span: Span) -> ToolRun | None:
        attributes = span.attributes
        name = crewai_model_tool_name(attributes.get(semconv.TOOL_DESCRIPTION)) or attributes.get(semconv.TOOL_NAME)
        if not isinstance(name, str) or not name:
            if span.name.startswith(_HANDOFF_PREFIX) or span.name.startswith(semconv.OPENINFERENCE_SCOPE_PREFIX):
                name = None
            else:
                name = span.name
        run = ToolRun(span=span, name=name, call_id=nonempty_str(attributes.get(semconv.TOOL_ID)))
        where = f"span {span.span_id} ({span.name!r})"
        if semconv.INPUT_VALUE in attributes:
            run.args = self.tool_input(
                attributes.get(semconv.INPUT_VALUE), attributes.get(semconv.TOOL_PARAMETERS), where
            )
        elif semconv.TOOL_PARAMETERS in attributes:
            run.args = tool_call_args(attributes.get(semconv.TOOL_PARAMETERS), self.warnings, where)
        if semconv.OUTPUT_VALUE in attributes:
            self.set_result(run, attributes.get(semconv.OUTPUT_VALUE))
        inputs, outputs = body_messages(span)
        if run.args is None and inputs:
            run.args = tool_call_args(inputs[-1].get("content"), self.warnings, where)
        if run.response is None and outputs:
            self.set_result(run, outputs[-1].get("content"))
        if span.status_code == "ERROR":
            run.error = _tool_error(span)
        if run.name is None:
            if span.name.startswith(_HANDOFF_PREFIX):
                return None
            run.name = "unknown_tool"
        return run

    def set_result(self, run: ToolRun, value: Any) -> None:
        message = lc.tool_message(lc.parsed(value))
        if message is None:
            run.response = tool_response_payload(value)
            return
        run.response, call_id, name = message
        run.call_id = run.call_id or call_id
        run.name = run.name or name

    def tool_input(self, value: Any, parameters: Any, where: str) -> dict[str, Any]:
        args = tool_call_args(value, self.warnings, where)
        if not (set(args) <= {"args", "kwargs", "sanitize_inputs_outputs"} and ({"args", "kwargs"} & set(args))):
            return args
        # smolagents: {"args": [...], "kwargs": {...}}; name positional args after the tool's parameters.
        named: dict[str, Any] = {}
        positional = args.get("args")
        schema, _ = parse_json(parameters)
        if isinstance(positional, list) and positional:
            names = list(schema) if isinstance(schema, dict) else []
            if len(names) >= len(positional):
                named.update(zip(names, positional, strict=False))
            else:
                named["args"] = positional
        keywords = args.get("kwargs")
        if isinstance(keywords, dict):
            named.update(keywords)
        return named

    def final_answer(self, runs: Sequence[ToolRun]) -> genai_types.Content | None:
        """A smolagents agent's answer when its span's output is not it (a run with ``stream=True`` records every
        streamed step's repr there): its last ``final_answer`` tool's output."""
        if semconv.SMOLAGENTS_TOOLS_NAMES not in self.root.attributes:
            return None
        for run in reversed(runs):
            if run.name == semconv.SMOLAGENTS_FINAL_ANSWER:
                output = run.span.attributes.get(semconv.OUTPUT_VALUE)
                return text_content(value_text(output, role="model", keys=_OUTPUT_KEYS), "model")
        return None

    def root_text(self, span: Span, direction: str) -> genai_types.Content | None:
        role = "user" if direction == "input" else "model"
        key = semconv.INPUT_VALUE if direction == "input" else semconv.OUTPUT_VALUE
        keys = _INPUT_KEYS if direction == "input" else _OUTPUT_KEYS
        text = kickoff_inputs_text(span.attributes, span.attributes.get(key)) if direction == "input" else None
        if text is None:
            text = value_text(span.attributes.get(key), role=role, keys=keys)
        if text is None:
            inputs, outputs = body_messages(span)
            messages = inputs if direction == "input" else outputs
            for message in reversed(messages):
                text = value_text(message.get("content"), role=role, keys=keys)
                if text is not None:
                    break
        if text is None and direction == "input":
            return last_user_text(self.flat_messages(span, semconv.LLM_INPUT_MESSAGES))
        return text_content(text, role)


_TRACEBACK = "Traceback (most recent call last):"


def _tool_error(span: Span) -> str:
    """The span's status message; when it carries a traceback (OpenInference's LangChain tool spans: the exception's
    repr, then its whole traceback with file paths and source lines), the message of its ``exception`` event instead,
    else the text before the traceback."""
    message = span.status_message or ""
    if _TRACEBACK not in message:
        return message or "error"
    for event in reversed(span.events):
        if event.name == semconv.EXCEPTION_EVENT:
            found = nonempty_str(event.attributes.get(semconv.EXCEPTION_MESSAGE))
            if found is not None:
                return found
    return message.split(_TRACEBACK, 1)[0].strip() or "error"
