"""Reading the spans of one GenAI invocation into an :class:`~otel_eval.reconstruct._trajectory.InvocationDraft`
(see :mod:`otel_eval.reconstruct.genai` for the rules): its model calls, tool runs, agent, user message and answer,
only what the parts asked for need (rebuild on demand, :mod:`otel_eval.reconstruct.reads`).

What each part costs to read, and when it is read:

* a model call's **output messages** are parsed for every part that reads them; converted into contents only when a
  text is read (the final response, the intermediate texts), else only their function calls are taken
  (:mod:`otel_eval.reconstruct._genai_calls`);
* its **input messages** (the whole history again, on every call) are parsed for the agent details, and converted
  only when a rule reads them (:attr:`~otel_eval.reconstruct._trajectory.ModelCall.read_inputs`);
* the **root's input and output**, the **tool results**, the **usage** and the **agent details** only when a part
  that needs them is asked.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from otel_eval import semconv
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct import _genai_events as events
from otel_eval.reconstruct._draft import (
    InvocationDraft,
    ModelCall,
    ToolRun,
    last_user_text,
    text_content,
    texts_of,
)
from otel_eval.reconstruct._flattened import first_str
from otel_eval.reconstruct._genai_agent_details import declarations_from_definitions, system_instruction_text
from otel_eval.reconstruct._genai_calls import function_calls, may_hold_calls
from otel_eval.reconstruct._genai_kinds import CONVENTION_NAME, TOOL_OPERATION, SpanKinds, traceloop_kind
from otel_eval.reconstruct._genai_messages import ParsedMessages, parse_messages, sound_message_list
from otel_eval.reconstruct._grouping import InvocationReader
from otel_eval.reconstruct._span_tree import SpanTree, nested_span_ids
from otel_eval.reconstruct._token_usage import Usage, usage_from
from otel_eval.reconstruct._values import parse_json_value, tool_call_args, tool_response_payload
from otel_eval.reconstruct.reads import Reads
from otel_eval.reconstruct.sessions import session_id_of
from otel_eval.traces.span import Span

_GENERIC_AGENT_NAMES = frozenset({"OpenAI Agent"})
"""What names an invocation's session (per span, in this order): OpenLLMetry's instrumentations write GenAI spans and
a LangChain run's ``session_id`` metadata as an association property (the processor samples sessions by it too)."""
_CONTENT_KEYS = frozenset(
    {
        semconv.GEN_AI_INPUT_MESSAGES,
        semconv.GEN_AI_OUTPUT_MESSAGES,
        semconv.GEN_AI_TOOL_CALL_ARGUMENTS,
        semconv.GEN_AI_TOOL_CALL_RESULT,
        semconv.PYDANTIC_AI_ALL_MESSAGES,
        semconv.PYDANTIC_AI_FINAL_RESULT,
    }
)

# What each part is read for, as ints (a Flag's operators are Python calls).
_MESSAGE_READS = (
    Reads.USER_CONTENT
    | Reads.FINAL_RESPONSE
    | Reads.TOOL_CALLS
    | Reads.TOOL_RESPONSES
    | Reads.INTERMEDIATE_TEXTS
    | Reads.APP_DETAILS
).value
"""What a model call's messages are read for (its count, usage and timing are not)."""
_TEXT_READS = (Reads.FINAL_RESPONSE | Reads.INTERMEDIATE_TEXTS).value
"""What a model call's outputs are converted into contents for (the rest reads only their function calls)."""
_ROOT_IO_READS = (Reads.USER_CONTENT | Reads.FINAL_RESPONSE | Reads.INTERMEDIATE_TEXTS).value
_TOOL_READS = (Reads.TOOL_CALLS | Reads.TOOL_RESPONSES).value
_USER = Reads.USER_CONTENT.value
_USAGE = Reads.USAGE.value
_DETAILS = Reads.APP_DETAILS.value
_RESPONSES = Reads.TOOL_RESPONSES.value


def _flags(value: int) -> tuple[bool, bool, bool, bool, bool, bool, bool, bool]:
    """What a reader reads for the parts ``value`` asks (see :class:`GenAIReader`'s attributes)."""
    return (
        bool(value & _ROOT_IO_READS),
        bool(value & _USER),
        bool(value & _USAGE),
        bool(value & _DETAILS),
        bool(value & _MESSAGE_READS),
        not value & _TEXT_READS,
        bool(value & _TOOL_READS),
        bool(value & _RESPONSES),
    )


_NO_USAGE = Usage()
"""A model call's usage when it is not read (shared: a ``Usage`` is never changed once made)."""

_FLAGS: dict[Reads, tuple[bool, bool, bool, bool, bool, bool, bool, bool]] = {}
""":func:`_flags` per parts asked (a few per process)."""


class GenAIReader(InvocationReader):
    """Reads the spans of one invocation (a :class:`~otel_eval.reconstruct._grouping.TurnReader`), only what the parts
    ``reads`` asks for need."""

    def __init__(
        self,
        tree: SpanTree,
        root: Span,
        members: Sequence[Span],
        kinds: SpanKinds,
        reads: Reads = Reads.ALL,
        *,
        authors: bool = True,
    ) -> None:
        super().__init__(tree, root, members)
        self.kinds = kinds
        flags = _FLAGS.get(reads)
        if flags is None:
            flags = _FLAGS[reads] = _flags(reads.value)
        (
            self.read_root_io,
            self.read_user,
            self.read_usage,
            self.read_details,
            self.read_messages,
            self.read_calls_only,
            self.read_tools,
            self.read_responses,
        ) = flags
        """``read_calls_only``: the outputs are read for their function calls only (no text of theirs is asked)."""
        self.read_everything = reads is Reads.ALL
        """Everything is asked: what is read lazily otherwise is read at once (its problems reported alike)."""
        self.read_authors = authors
        """Each model call's author (for the texts' authors and the agent details; else only when no agent span
        names the invocation's agent)."""

    def is_model_call(self, span: Span) -> bool:
        return self.kinds.is_model_call(span)

    def is_tool(self, span: Span) -> bool:
        return self.kinds.is_tool(span)

    def nested(self) -> set[str]:
        kinds = self.kinds
        tools, agents, root_id, tree = kinds.tools, kinds.agents, self.root.span_id, self.tree
        for span in self.members:
            span_id = span.span_id
            if (span_id in agents and span_id != root_id) or (span_id in tools and tree.children(span)):
                break
        else:  # no span below a tool, no agent to lie within one's time: nothing is nested
            return set()
        return nested_span_ids(tree, self.root, self.members, is_tool=kinds.is_tool, is_agent=kinds.is_agent)

    def agent_label(self, span: Span) -> str | None:
        label = first_str(span.attributes, semconv.GEN_AI_AGENT_NAME)
        if label is None and traceloop_kind(span) == "agent":
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
        draft = InvocationDraft(convention=CONVENTION_NAME, root=root)
        agents: list[Span] = []
        kinds = self.kinds
        model_calls, tools, agent_ids = kinds.model_calls, kinds.tools, kinds.agents
        for span in self.members:
            span_id = span.span_id
            if span_id == root.span_id:
                continue
            if span_id in model_calls:
                call = self.model_call(span)
                (draft.nested_model_calls if span_id in nested else draft.model_calls).append(call)
            elif span_id in nested:
                continue
            elif span_id in tools:
                draft.tool_runs.append(self.tool_run(span))
            elif span_id in agent_ids:
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
        members = self.members
        # The root first, then the members (the root among them, usually first: not read twice).
        spans = members if members and members[0] is self.root else [self.root, *members]
        return session_id_of(spans)

    def has_content(self, span: Span) -> bool:
        attributes = span.attributes
        return not _CONTENT_KEYS.isdisjoint(attributes) or (bool(span.events) and events.has_content_events(span))

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
        call = ModelCall(
            span=span,
            author=self.author(span) if self.read_authors else None,
            model=first_str(attributes, semconv.GEN_AI_REQUEST_MODEL, semconv.GEN_AI_RESPONSE_MODEL),
            usage=usage_from(attributes) if self.read_usage else _NO_USAGE,
        )
        if not self.read_messages:
            return call
        if self.read_calls_only and not span.events:
            # Only the outputs' function calls are read: the same calls converting them gives (without events there
            # are no deprecated message events to fall back on when no output converts).
            raw = attributes.get(semconv.GEN_AI_OUTPUT_MESSAGES)
            if type(raw) is str and not may_hold_calls(raw):
                # No call in it: parsed only for its problems (parsed again, to name them, when it has some).
                if not sound_message_list(raw):
                    self.parsed_messages(span, semconv.GEN_AI_OUTPUT_MESSAGES)
                call.calls = []
            else:
                call.calls = function_calls(self.parsed_messages(span, semconv.GEN_AI_OUTPUT_MESSAGES), self.warnings)
            call.read_inputs = functools.partial(self.input_contents, span, parsed_inputs)
        else:
            outputs = self.messages(span, semconv.GEN_AI_OUTPUT_MESSAGES)
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
        return declarations_from_definitions(
            value, self.warnings, f"span {span.span_id} ({span.name!r}): tool definitions"
        )

    def tool_run(self, span: Span) -> ToolRun:
        if not self.read_tools:
            return ToolRun(span=span, name=None)  # its time only
        attributes = span.attributes
        name = first_str(attributes, semconv.GEN_AI_TOOL_NAME)
        if name is None:
            head, _, rest = span.name.partition(" ")
            name = rest if head == TOOL_OPERATION and rest else span.name.removesuffix(".tool")
        run = ToolRun(span=span, name=name, call_id=first_str(attributes, semconv.GEN_AI_TOOL_CALL_ID))
        if semconv.GEN_AI_TOOL_CALL_ARGUMENTS in attributes:
            # Parsed on first use when less than everything is asked (only a run no call accounts for reads them); at
            # once for the full rebuild, which reports every problem of the span's arguments.
            if self.read_everything:
                run.args = self.tool_args(span)
            else:
                run.read_args = functools.partial(self.tool_args, span)
        if semconv.GEN_AI_TOOL_CALL_RESULT in attributes and self.read_responses:
            run.response = tool_response_payload(attributes[semconv.GEN_AI_TOOL_CALL_RESULT])
        if span.events or semconv.GEN_AI_INPUT_MESSAGES in attributes or semconv.GEN_AI_OUTPUT_MESSAGES in attributes:
            self.tool_details(span, run)
        if not run.has_args or (run.response is None and self.read_responses):
            args, result, call_id = events.deprecated_tool_io(span, self.warnings)
            if not run.has_args:
                run.args = args
            run.call_id = run.call_id or call_id
            if run.response is None and result is not None:
                run.response = tool_response_payload(result)
        # The status description is the exception's text (what frameworks such as AutoGen send the model); the
        # error.type beside it is only its class. Without a description (Pydantic AI), the exception event's.
        if span.status_code == "ERROR":
            run.error = (
                span.status_message or _exception_text(span) or first_str(attributes, semconv.ERROR_TYPE) or "error"
            )
        elif semconv.ERROR_TYPE in attributes:
            run.error = first_str(attributes, semconv.ERROR_TYPE)
        return run

    def tool_args(self, span: Span) -> dict[str, Any]:
        """The span's ``gen_ai.tool.call.arguments`` as the args dict (its problems recorded in ``warnings``)."""
        where = f"span {span.span_id} ({span.name!r})"
        return tool_call_args(span.attributes[semconv.GEN_AI_TOOL_CALL_ARGUMENTS], self.warnings, where)

    def tool_details(self, span: Span, run: ToolRun) -> None:
        """Strands (``gen_ai_latest_experimental``): the call and its response as messages in details events."""
        for key in (semconv.GEN_AI_INPUT_MESSAGES, semconv.GEN_AI_OUTPUT_MESSAGES):
            for content in self.messages(span, key):
                for part in content.parts or []:
                    if part.function_call is not None and not run.has_args:
                        run.args = dict(part.function_call.args or {})
                        run.call_id = run.call_id or part.function_call.id
                    if part.function_response is not None and run.response is None:
                        run.response = tool_response_payload(_unwrapped_result(part.function_response.response))


def _unwrapped_result(response: dict[str, Any] | None) -> Any:
    """A response already wrapped as ``{"result": x}`` by the message converter, unwrapped so text blocks join."""
    if response is not None and set(response) == {"result"}:
        return parse_json_value(response["result"])
    return response


def _exception_text(span: Span) -> str | None:
    """The last ``exception`` event's ``<type>: <message>``, as the OpenTelemetry SDK writes a status description."""
    for event in reversed(span.events):
        if event.name == semconv.EXCEPTION_EVENT:
            message = first_str(event.attributes, semconv.EXCEPTION_MESSAGE)
            kind = first_str(event.attributes, semconv.EXCEPTION_TYPE)
            if message:
                return f"{kind}: {message}" if kind else message
    return None
