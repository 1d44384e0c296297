"""What a convention reads of one invocation, before the ADK rules apply: :class:`ModelCall`, :class:`ToolRun` and
:class:`InvocationDraft`, and the helpers that make and read their contents.

Each convention module fills an :class:`InvocationDraft` from its own attributes; :mod:`otel_eval.reconstruct._trajectory`
turns it into an invocation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._token_usage import Usage
from otel_eval.reconstruct._values import nonempty_str, tool_call_args
from otel_eval.reconstruct.reads import Reads
from otel_eval.traces.span import Span

DEFAULT_AUTHOR = "agent"


@dataclass(slots=True)
class ModelCall:
    """One model call: what was sent (``inputs``) and what came back (``outputs``).

    A convention may give ``read_inputs`` instead of setting ``inputs``: the inputs are then read on first use. The
    rules need them only now and then (the user message when the root has none, a response sent back for a tool run
    without one, turn grouping), and each call re-sends the whole history, so converting them is most of a rebuild.
    """

    span: Span
    author: str | None = None
    outputs: list[genai_types.Content] = field(default_factory=list)
    model: str | None = None
    usage: Usage = field(default_factory=Usage)
    system_instruction: str | None = None
    tool_declarations: list[dict[str, Any]] = field(default_factory=list)
    synthetic: bool = False
    """True when the outputs were read from an agent span (no model span exists); not counted as a model call."""
    read_inputs: Callable[[], list[genai_types.Content]] | None = field(default=None, repr=False)
    """Reads ``inputs`` on first use, when they were not set."""
    calls: list[genai_types.FunctionCall] | None = None
    """The function calls of the outputs, when only they were read (``outputs`` then left empty): what the rules read
    of the outputs when no text is asked for (see :mod:`otel_eval.reconstruct.reads`)."""
    _inputs: list[genai_types.Content] | None = field(default=None, init=False, repr=False)

    @property
    def inputs(self) -> list[genai_types.Content]:
        """The messages sent (read by ``read_inputs`` the first time when it was given)."""
        if self._inputs is None:
            read, self.read_inputs = self.read_inputs, None
            self._inputs = read() if read is not None else []
        return self._inputs

    @inputs.setter
    def inputs(self, contents: list[genai_types.Content]) -> None:
        self._inputs, self.read_inputs = contents, None


@dataclass(slots=True)
class ToolRun:
    """One tool execution span.

    A convention may give ``read_args`` instead of setting ``args``: the arguments are then read on first use. The
    rules need a run's own arguments only for a run no function call accounts for (a call's arguments are the call's),
    so a rebuild that matches every run to its call reads none.
    """

    span: Span
    name: str | None
    call_id: str | None = None
    response: dict[str, Any] | None = None
    error: str | None = None
    """Why the tool failed (``error.type``, span status), used as ``{"error": ...}`` when no result is recorded."""
    read_args: Callable[[], dict[str, Any]] | None = field(default=None, repr=False)
    """Reads ``args`` on first use, when they were not set."""
    _args: dict[str, Any] | None = field(default=None, init=False, repr=False)

    @property
    def args(self) -> dict[str, Any] | None:
        """The recorded arguments (read by ``read_args`` the first time when it was given), None when none were."""
        read = self.read_args
        if read is not None:
            self.read_args = None
            self._args = read()
        return self._args

    @args.setter
    def args(self, value: dict[str, Any] | None) -> None:
        self._args, self.read_args = value, None

    @property
    def has_args(self) -> bool:
        """Whether arguments were recorded (without reading them)."""
        return self.read_args is not None or self._args is not None


@dataclass(slots=True)
class InvocationDraft:
    """Everything a convention read for one invocation root."""

    convention: str
    root: Span
    session_id: str | None = None
    agent_name: str | None = None
    root_input: genai_types.Content | None = None
    root_output: genai_types.Content | None = None
    model_calls: list[ModelCall] = field(default_factory=list)
    nested_model_calls: list[ModelCall] = field(default_factory=list)
    tool_runs: list[ToolRun] = field(default_factory=list)
    root_usage: Usage = field(default_factory=Usage)
    root_model: str | None = None
    content_captured: bool = True
    warnings: list[str] = field(default_factory=list)
    end_time_ns: int | None = None
    """End of the invocation when it is not the root's end (model calls grouped without an agent span)."""
    guardrail_tripped: str | None = None
    """The status message of the span that says a guardrail's tripwire stopped the run (the OpenAI Agents SDK's
    ``Guardrail tripwire triggered``), when one does: the run raised instead of answering."""
    reads: Reads = Reads.ALL
    """What :func:`build_invocation` produces (the rest left empty; see :mod:`otel_eval.reconstruct.reads`); a
    convention's reader may also skip reading what only those parts need."""


_ROLES = {
    "user": "user",
    "human": "user",
    "assistant": "model",
    "ai": "model",
    "model": "model",
    "bot": "model",
    "tool": "tool",
    "function": "tool",
    "tool-response": "tool",
    "ipython": "tool",
    "system": "system",
    "developer": "system",
}


def normalize_role(role: object) -> str:
    """A message role as ``user``, ``model``, ``tool`` or ``system`` (other roles lower-cased as they are)."""
    text = str(role or "").strip().lower()
    return _ROLES.get(text, text)


def text_content(text: str | None, role: str) -> genai_types.Content | None:
    """A one-part text content, or None for empty text."""
    if text is None or not text.strip():
        return None
    return genai_types.Content(role=role, parts=[genai_types.Part.trusted(text=text)])


def function_call_part(
    name: Any, arguments: Any, call_id: Any, warnings: list[str], where: str
) -> genai_types.Part | None:
    """A function-call part from recorded values (arguments by the rule of ``_values``); None without a tool name."""
    if not isinstance(name, str) or not name:
        return None
    return genai_types.Part(
        function_call=genai_types.FunctionCall(
            name=name, args=tool_call_args(arguments, warnings, where), id=nonempty_str(call_id)
        )
    )


def texts_of(content: genai_types.Content | None, *, thoughts: bool = False) -> list[str]:
    """The text parts of a content (reasoning parts only when ``thoughts``)."""
    if content is None or not content.parts:
        return []
    return [p.text for p in content.parts if p.text and (thoughts or not p.thought)]


def last_user_text(messages: Iterable[genai_types.Content]) -> genai_types.Content | None:
    """The last user message that carries text (tool results sent as user messages are skipped), text parts only."""
    found: genai_types.Content | None = None
    for message in messages:
        if (message.role or "").lower() not in ("user", "human"):
            continue
        parts = [genai_types.Part.trusted(text=t) for t in texts_of(message)]
        if parts and not any(p.function_response for p in message.parts or []):
            found = genai_types.Content(role="user", parts=parts)
    return found


def function_calls_in(contents: Sequence[genai_types.Content]) -> list[genai_types.FunctionCall]:
    """The function calls of ``contents``, in order."""
    return [p.function_call for c in contents for p in c.parts or [] if p.function_call]


def calls_of(call: ModelCall) -> list[genai_types.FunctionCall]:
    """The function calls a model call made: its ``calls`` when only they were read, else those of its outputs."""
    return call.calls if call.calls is not None else function_calls_in(call.outputs)
