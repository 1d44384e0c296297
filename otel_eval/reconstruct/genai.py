"""OpenTelemetry GenAI semantic-convention traces (Strands, Pydantic AI, OpenAI Agents via the OTel-contrib or
OpenLLMetry instrumentations, AutoGen, hand-instrumented apps, ...) -> ADK invocations.

**Invocation roots** are agent spans -- ``gen_ai.operation.name`` ``invoke_agent``/``invoke_workflow`` (or another
``invoke_*``, e.g. Strands' ``invoke_swarm``), span names starting so, or ``traceloop.span.kind`` ``agent``/``workflow``
-- that have no agent span above them. So an OpenAI Agents ``Agent workflow`` span whose agents hand off to one another
is one invocation (one user turn), and its agents' model calls and tools are its trajectory in time order. A trace
without agent spans yields one invocation per user turn of its model calls: a model call whose input ends with tool
results continues the turn before it.

**Content** is read, per span, from the ``gen_ai.input.messages``/``gen_ai.output.messages`` attributes (JSON strings
or structured), from ``gen_ai.client.inference.operation.details`` events, or from the deprecated per-message events
(``gen_ai.user.message`` ... ``gen_ai.choice``, see ``_genai_events``); parts-based and content-based messages are both
accepted (``_genai_messages``). Model calls are ``chat``/``generate_content``/``text_completion`` spans. Tool runs are
``execute_tool`` spans: ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments`` (parsed to a
dict) and ``gen_ai.tool.call.result`` (see ``_values`` for how results become response dicts, and ``_envelopes`` for the
framework wrappers unwrapped first, e.g. OpenLLMetry's LangChain callback envelopes); a failed tool without a
result (``error.type``, error status) gets the result the model was sent back, else ``{"error": <the status
description>}`` (the exception's text), else ``{"error": <error.type>}``.

The user message is the last user text of the root's input messages (or its deprecated ``gen_ai.user.message``
events), else of the first model call's input. Only that message is taken from the input: the cumulative history a
later turn re-sends never adds earlier turns' content. The final response is the root's output text when present
(Pydantic AI's ``final_result`` too), else the last model output without tool calls.

**Handoffs and agents used as tools.** Agents that take over from each other (OpenAI Agents handoffs, ``agent_handoff``
spans, ``transfer_to_*`` tool calls) are all part of the one invocation: their model calls and tool calls are the
trajectory, like ADK's sub-agent transfer. An agent used as a tool (``ask_<specialist>``) contributes only the tool
call and its result: its inner model calls and tools are excluded, as ADK excludes ``AgentTool`` inner calls, because
the top-level trajectory is what the user saw the agent do. The OpenLLMetry OpenAI-Agents instrumentation starts such
an agent's span as a sibling of the tool span, not a child; an agent span inside a tool span's time range is treated as
nested too. Their tokens still count in ``token_usage``.

**Quirks handled.** Pydantic AI: tool results sent back as ``user`` messages with ``tool_call_response`` parts carrying
``result``; the run's answer in ``final_result``. OpenAI Agents (OTel-contrib/ADOT): output messages holding printed
``ResponseFunctionToolCall(...)`` text are turned back into tool calls, and chat spans named after the generic
``OpenAI Agent`` are attributed to the enclosing ``invoke_agent`` span. OpenAI Agents (OpenLLMetry): ``execute_tool``
spans without call ids are matched to the model's calls by name, in order. AutoGen and other content-free traces
(capture off): the invocation has ``content_captured=False``, tool names only, and a warning -- no invented text.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from otel_eval import semconv
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct import _genai_events as events
from otel_eval.reconstruct._flattened import first_str
from otel_eval.reconstruct._genai_agent_details import system_instruction_text, tools_from_definitions
from otel_eval.reconstruct._genai_messages import ParsedMessages, parse_messages
from otel_eval.reconstruct._grouping import (
    InvocationReader,
    invocations_of_roots,
    session_id_of,
    trace_invocations,
    turn_invocations,
)
from otel_eval.reconstruct._span_tree import SpanTree, nested_span_ids
from otel_eval.reconstruct._token_usage import Usage, usage_from
from otel_eval.reconstruct._trajectory import (
    InvocationDraft,
    ModelCall,
    ToolRun,
    last_user_text,
    text_content,
    texts_of,
)
from otel_eval.reconstruct._values import parse_json_value, record_warning, tool_call_args, tool_response_payload
from otel_eval.reconstruct.base import Convention, TraceInvocations
from otel_eval.reconstruct.reads import Reads
from otel_eval.traces.span import Span

MODEL_OPERATIONS = frozenset({"chat", "generate_content", "text_completion"})
TOOL_OPERATION = "execute_tool"
_AGENT_PREFIX = "invoke_"
_TRACELOOP_CONTAINERS = frozenset({"agent", "workflow"})
_TRACELOOP_TOOL = "tool"
_KNOWN_OPERATIONS = MODEL_OPERATIONS | {TOOL_OPERATION, "invoke_agent", "invoke_workflow", "create_agent"}
_GENERIC_AGENT_NAMES = frozenset({"OpenAI Agent"})
_DECLARATIONS_CACHE_SIZE = 64


class GenAIConvention(Convention):
    """OpenTelemetry GenAI semantic conventions (all message forms), see the module docstring."""

    name = "genai"

    def detect(self, spans: Sequence[Span]) -> bool:
        """A GenAI operation name or GenAI message content, unless the content is OpenInference's or OpenLLMetry's.

        OpenInference spans sometimes carry ``gen_ai.request.model``/``gen_ai.usage.*`` too, and OpenLLMetry's indexed
        ``gen_ai.prompt.<i>.*`` share the namespace; neither makes a trace GenAI without an operation name or
        new-style messages.
        """
        operation = content = False
        for span in spans:
            attributes = span.attributes
            op = attributes.get(semconv.GEN_AI_OPERATION_NAME)
            operation = operation or (isinstance(op, str) and (op in _KNOWN_OPERATIONS or op.startswith(_AGENT_PREFIX)))
            content = content or (
                semconv.GEN_AI_INPUT_MESSAGES in attributes
                or semconv.GEN_AI_OUTPUT_MESSAGES in attributes
                or events.has_content_events(span)
            )
            if operation and content:
                return True
        return operation or content

    def rebuild(self, spans: Sequence[Span], reads: Reads = Reads.ALL) -> TraceInvocations:
        """One invocation per agent root, or per user turn of model calls without an agent span; only what the
        parts ``reads`` asks for need is read (no message history parsed for a tool count)."""
        tree = SpanTree(spans)
        kinds = _SpanKinds(tree.spans)
        roots = tree.tops(tree.spans, kinds.is_agent)

        # Without agent roots the model calls are grouped into turns by their inputs, and the turn's agent is its
        # calls' author: those are read whatever is asked.
        read = reads if roots else reads | Reads.USER_CONTENT
        authors = not roots or bool(reads & _AUTHOR_READS)

        def reader(root: Span, members: Sequence[Span]) -> _Reader:
            return _Reader(tree, root, members, kinds, read, authors=authors)

        if roots:
            invocations = invocations_of_roots(tree, roots, reader, reads)
        else:
            invocations = turn_invocations(tree, self.name, reader, reads)
        names = sorted({s.name for s in tree.spans})[:5]
        return trace_invocations(
            tree, self.name, invocations, f"GenAI spans {names} but no agent invocation or model call"
        )


def _operation(span: Span) -> str:
    op = span.attributes.get(semconv.GEN_AI_OPERATION_NAME)
    if isinstance(op, str) and op and op != "unknown":
        return op
    return span.name.split(" ", 1)[0]


def _traceloop_kind(span: Span) -> str:
    kind = span.attributes.get(semconv.TRACELOOP_SPAN_KIND)
    return kind.lower() if isinstance(kind, str) else ""


def is_agent(span: Span) -> bool:
    """An agent or workflow span (an invocation root when nothing above it is one)."""
    return _operation(span).startswith(_AGENT_PREFIX) or _traceloop_kind(span) in _TRACELOOP_CONTAINERS


def is_model_call(span: Span) -> bool:
    """An inference span."""
    return _operation(span) in MODEL_OPERATIONS and _traceloop_kind(span) not in _TRACELOOP_CONTAINERS


def is_tool(span: Span) -> bool:
    """A tool execution span."""
    return _operation(span) == TOOL_OPERATION or _traceloop_kind(span) == _TRACELOOP_TOOL


_CONTENT_KEYS = (
    semconv.GEN_AI_INPUT_MESSAGES,
    semconv.GEN_AI_OUTPUT_MESSAGES,
    semconv.GEN_AI_TOOL_CALL_ARGUMENTS,
    semconv.GEN_AI_TOOL_CALL_RESULT,
    semconv.PYDANTIC_AI_ALL_MESSAGES,
    semconv.PYDANTIC_AI_FINAL_RESULT,
)


class _SpanKinds:
    """Which spans of a trace are agents, model calls and tools, worked out once (every step of a rebuild asks)."""

    def __init__(self, spans: Sequence[Span]) -> None:
        self.agents = {s.span_id for s in spans if is_agent(s)}
        self.model_calls = {s.span_id for s in spans if is_model_call(s)}
        self.tools = {s.span_id for s in spans if is_tool(s)}

    def is_agent(self, span: Span) -> bool:
        return span.span_id in self.agents

    def is_model_call(self, span: Span) -> bool:
        return span.span_id in self.model_calls

    def is_tool(self, span: Span) -> bool:
        return span.span_id in self.tools


_MESSAGE_READS = (
    Reads.USER_CONTENT
    | Reads.FINAL_RESPONSE
    | Reads.TOOL_CALLS
    | Reads.TOOL_RESPONSES
    | Reads.INTERMEDIATE_TEXTS
    | Reads.APP_DETAILS
)
"""What a model call's messages are read for (its count, usage and timing are not)."""
_ROOT_IO_READS = Reads.USER_CONTENT | Reads.FINAL_RESPONSE | Reads.INTERMEDIATE_TEXTS
_TOOL_READS = Reads.TOOL_CALLS | Reads.TOOL_RESPONSES
_AUTHOR_READS = Reads.INTERMEDIATE_TEXTS | Reads.APP_DETAILS


class _Reader(InvocationReader):
    """Reads the spans of one invocation (a :class:`~otel_eval.reconstruct._grouping.TurnReader`), only what the parts
    ``reads`` asks for need."""

    def __init__(
        self,
        tree: SpanTree,
        root: Span,
        members: Sequence[Span],
        kinds: _SpanKinds,
        reads: Reads = Reads.ALL,
        *,
        authors: bool = True,
    ) -> None:
        super().__init__(tree, root, members)
        self.kinds = kinds
        # What to read, worked out once (a Flag's operators are Python calls): see _Reader.draft and model_call.
        self.read_root_io = bool(reads & _ROOT_IO_READS)
        self.read_user = Reads.USER_CONTENT in reads
        self.read_usage = Reads.USAGE in reads
        self.read_details = Reads.APP_DETAILS in reads
        self.read_messages = bool(reads & _MESSAGE_READS)
        self.read_tools = bool(reads & _TOOL_READS)
        self.read_responses = Reads.TOOL_RESPONSES in reads
        self.read_authors = authors
        """Each model call's author (for the texts' authors and the agent details; else only when no agent span
        names the invocation's agent)."""

    def is_model_call(self, span: Span) -> bool:
        return self.kinds.is_model_call(span)

    def is_tool(self, span: Span) -> bool:
        return self.kinds.is_tool(span)

    def nested(self) -> set[str]:
        kinds = self.kinds
        return nested_span_ids(self.tree, self.root, self.members, is_tool=kinds.is_tool, is_agent=kinds.is_agent)

    def agent_label(self, span: Span) -> str | None:
        label = first_str(span.attributes, semconv.GEN_AI_AGENT_NAME)
        if label is None and _traceloop_kind(span) == "agent":
            label = span.name.removesuffix(".agent")
        return None if label in _GENERIC_AGENT_NAMES else label

    @functools.cached_property
    def labelled_agent_above(self) -> dict[str, Span]:
        is_agent = self.kinds.is_agent
        return self.tree.nearest(lambda a: is_agent(a) and bool(self.agent_label(a)), within=self.member_ids)

    @functools.cached_property
    def agent_above(self) -> dict[str, Span]:
        return self.tree.nearest(self.kinds.is_agent, within=self.member_ids)

    def author(self, span: Span) -> str | None:
        agent = self.labelled_agent_above.get(span.span_id)
        return self.agent_label(agent if agent is not None else span)

    def draft(self) -> InvocationDraft:
        root = self.root
        nested = self.nested()
        draft = InvocationDraft(convention=GenAIConvention.name, root=root)
        agents: list[Span] = []
        kinds = self.kinds
        for span in self.members:
            if span.span_id == root.span_id:
                continue
            if kinds.is_model_call(span):
                call = self.model_call(span)
                (draft.nested_model_calls if span.span_id in nested else draft.model_calls).append(call)
            elif span.span_id in nested:
                continue
            elif kinds.is_tool(span):
                draft.tool_runs.append(self.tool_run(span))
            elif kinds.is_agent(span):
                agents.append(span)
        draft.agent_name = self.agent_label(root) or next(
            (label for label in (self.agent_label(a) for a in agents) if label), None
        )
        if draft.agent_name is None:
            authors = (c.author if self.read_authors else self.author(c.span) for c in draft.model_calls)
            draft.agent_name = next((author for author in authors if author), None)
        if self.read_root_io:
            draft.root_input, draft.root_output = self.agent_io(root)
        if draft.root_input is None and self.read_user:
            draft.root_input = next((i for i in (self.agent_io(a)[0] for a in agents) if i is not None), None)
        if self.read_usage:
            draft.root_usage = usage_from(root.attributes)
        draft.root_model = first_str(root.attributes, semconv.GEN_AI_REQUEST_MODEL, semconv.GEN_AI_RESPONSE_MODEL)
        draft.session_id = self.session_id()
        draft.content_captured = any(self.has_content(s) for s in self.members)
        draft.warnings = self.warnings
        return draft

    def session_id(self) -> str | None:
        return session_id_of([self.root, *self.members], (semconv.GEN_AI_CONVERSATION_ID, semconv.SESSION_ID))

    def has_content(self, span: Span) -> bool:
        return any(key in span.attributes for key in _CONTENT_KEYS) or events.has_content_events(span)

    def messages(self, span: Span, key: str) -> list[genai_types.Content]:
        return self.contents(self.parsed_messages(span, key))

    def parsed_messages(self, span: Span, key: str) -> list[ParsedMessages]:
        """The span's message lists under ``key`` (attribute, then details events), JSON read and not converted."""
        raws = events.details_messages(span, key)
        where = f"span {span.span_id} ({span.name!r}): {key}" if raws else ""
        return [parse_messages(raw, self.warnings, where) for raw in raws]

    def contents(self, parsed: Sequence[ParsedMessages]) -> list[genai_types.Content]:
        """Parsed message lists converted, printed OpenAI Agents tool calls turned back into calls."""
        if not parsed:
            return []
        contents = [content for messages in parsed for content in messages.contents(self.warnings)]
        return events.unstringify_tool_calls(contents, self.warnings, parsed[0].where)

    def span_messages(self, span: Span) -> tuple[list[genai_types.Content], list[genai_types.Content]]:
        inputs = self.messages(span, semconv.GEN_AI_INPUT_MESSAGES)
        outputs = self.messages(span, semconv.GEN_AI_OUTPUT_MESSAGES)
        if not inputs and not outputs:
            inputs, outputs = events.deprecated_messages(span, self.warnings)
        return inputs, outputs

    def agent_io(self, span: Span) -> tuple[genai_types.Content | None, genai_types.Content | None]:
        inputs, outputs = self.span_messages(span)
        user = last_user_text(inputs)
        texts = [t for c in outputs if c.role == "model" for t in texts_of(c)]
        final = first_str(span.attributes, semconv.PYDANTIC_AI_FINAL_RESULT)
        if final is None and texts:
            final = "\n".join(texts)
        return user, text_content(final, "model")

    def model_call(self, span: Span) -> ModelCall:
        attributes = span.attributes
        # The system instruction may be in the input history: read at once for the app details, else only if a rule
        # reads the inputs (the whole history again).
        with_details = self.read_details
        parsed_inputs = self.parsed_messages(span, semconv.GEN_AI_INPUT_MESSAGES) if with_details else None
        outputs = self.messages(span, semconv.GEN_AI_OUTPUT_MESSAGES) if self.read_messages else []
        call = ModelCall(
            span=span,
            author=self.author(span) if self.read_authors else None,
            model=first_str(attributes, semconv.GEN_AI_REQUEST_MODEL, semconv.GEN_AI_RESPONSE_MODEL),
            usage=usage_from(attributes) if self.read_usage else Usage(),
        )
        if not self.read_messages:
            return call
        if outputs:
            # The inputs are converted only if a rule reads them.
            call.read_inputs = functools.partial(self.input_contents, span, parsed_inputs)
        else:
            call.inputs = self.input_contents(span, parsed_inputs)
            if not call.inputs:
                call.inputs, outputs = events.deprecated_messages(span, self.warnings)
        call.outputs = [c for c in outputs if c.role != "system"]
        if with_details:
            assert parsed_inputs is not None
            self.agent_details(span, call, parsed_inputs)
        return call

    def input_contents(self, span: Span, parsed: list[ParsedMessages] | None) -> list[genai_types.Content]:
        """A model call's input messages converted (their JSON read first unless ``parsed`` already holds it)."""
        return self.contents(
            parsed if parsed is not None else self.parsed_messages(span, semconv.GEN_AI_INPUT_MESSAGES)
        )

    def agent_details(self, span: Span, call: ModelCall, parsed_inputs: list[ParsedMessages]) -> None:
        """The call's system instruction and tool declarations (its own, else the agent's above it)."""
        agent = self.agent_above.get(span.span_id)
        system = self.system_instruction(span)
        if not system and (call.read_inputs is None or any(p.has_role("system") for p in parsed_inputs)):
            system = "\n".join(t for m in call.inputs if m.role == "system" for t in texts_of(m))
        if not system and agent is not None:
            system = self.system_instruction(agent)
        call.system_instruction = system or None
        call.tool_declarations = self.tool_declarations(span)
        if not call.tool_declarations and agent is not None:
            call.tool_declarations = self.tool_declarations(agent)

    def system_instruction(self, span: Span) -> str:
        """``gen_ai.system_instructions`` (or Strands' ``gen_ai.agent.system_prompt``) as text."""
        value = span.attributes.get(semconv.GEN_AI_SYSTEM_INSTRUCTIONS)
        if value is None:
            value = span.attributes.get(semconv.GEN_AI_AGENT_SYSTEM_PROMPT)
        if value is None:
            return ""
        where = f"span {span.span_id} ({span.name!r}): system instructions"
        return system_instruction_text(value, self.warnings, where)

    def tool_declarations(self, span: Span) -> list[dict[str, Any]]:
        """``gen_ai.tool.definitions`` as function-declaration dicts (shared between the calls that declared the same
        JSON text: not mutated)."""
        value = span.attributes.get(semconv.GEN_AI_TOOL_DEFINITIONS)
        if value is None:
            return []
        where = f"span {span.span_id} ({span.name!r}): tool definitions"
        if isinstance(value, str):
            declarations, problems = _declarations_of_text(value)
            for problem in problems:
                record_warning(self.warnings, where + problem)
            return list(declarations)
        return _declarations(tools_from_definitions(value, self.warnings, where))

    def tool_run(self, span: Span) -> ToolRun:
        if not self.read_tools:
            return ToolRun(span=span, name=None)  # its time only
        attributes = span.attributes
        where = f"span {span.span_id} ({span.name!r})"
        name = first_str(attributes, semconv.GEN_AI_TOOL_NAME)
        if name is None:
            head, _, rest = span.name.partition(" ")
            name = rest if head == TOOL_OPERATION and rest else span.name.removesuffix(".tool")
        run = ToolRun(span=span, name=name, call_id=first_str(attributes, semconv.GEN_AI_TOOL_CALL_ID))
        if semconv.GEN_AI_TOOL_CALL_ARGUMENTS in attributes:
            run.args = tool_call_args(attributes[semconv.GEN_AI_TOOL_CALL_ARGUMENTS], self.warnings, where)
        if semconv.GEN_AI_TOOL_CALL_RESULT in attributes and self.read_responses:
            run.response = tool_response_payload(attributes[semconv.GEN_AI_TOOL_CALL_RESULT])
        self.tool_details(span, run)
        if run.args is None or (run.response is None and self.read_responses):
            args, result, call_id = events.deprecated_tool_io(span, self.warnings)
            run.args = run.args if run.args is not None else args
            run.call_id = run.call_id or call_id
            if run.response is None and result is not None:
                run.response = tool_response_payload(result)
        # The status description is the exception's text (what frameworks such as AutoGen send the model); the
        # error.type beside it is only its class.
        description = span.status_message if span.status_code == "ERROR" else None
        error = description or first_str(attributes, semconv.ERROR_TYPE)
        if error is None and span.status_code == "ERROR":
            error = "error"
        run.error = error
        return run

    def tool_details(self, span: Span, run: ToolRun) -> None:
        """Strands (``gen_ai_latest_experimental``): the call and its response as messages in details events."""
        for key in (semconv.GEN_AI_INPUT_MESSAGES, semconv.GEN_AI_OUTPUT_MESSAGES):
            for content in self.messages(span, key):
                for part in content.parts or []:
                    if part.function_call is not None and run.args is None:
                        run.args = dict(part.function_call.args or {})
                        run.call_id = run.call_id or part.function_call.id
                    if part.function_response is not None and run.response is None:
                        run.response = tool_response_payload(_unwrapped_result(part.function_response.response))


def _declarations(tools: Sequence[genai_types.Tool]) -> list[dict[str, Any]]:
    return [
        declaration.model_dump(mode="json", exclude_none=True)
        for tool in tools
        for declaration in tool.function_declarations or []
    ]


@functools.lru_cache(maxsize=_DECLARATIONS_CACHE_SIZE)
def _declarations_of_text(text: str) -> tuple[tuple[dict[str, Any], ...], tuple[str, ...]]:
    """The declarations of a JSON text of definitions, dumped once (an agent declares the same tools on every call),
    and the problems met, each written relative to the caller's ``where``."""
    problems: list[str] = []
    return tuple(_declarations(tools_from_definitions(text, problems, ""))), tuple(problems)


def _unwrapped_result(response: dict[str, Any] | None) -> Any:
    """A response already wrapped as ``{"result": x}`` by the message converter, unwrapped so text blocks join."""
    if response is not None and set(response) == {"result"}:
        return parse_json_value(response["result"])
    return response
