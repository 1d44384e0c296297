"""What an OpenInference span's ``input.value`` / ``output.value`` says beyond the flattened ``llm.*_messages``.

OpenInference instrumentations write a framework's own objects there, as JSON or as ``str()`` text. The rules, each
proven on what the real instrumentation emits (``tests/data/frameworks``):

* **Root text** (:func:`value_text`): plain text is the text; a JSON string is its text; a JSON object is its
  messages' last text of the role (LangGraph's ``{"messages"}``), or the first text field of a known key
  (``task``, ``input``, ``output``, ...), or the ``raw`` text of a CrewAI ``CrewOutput``/``TaskOutput``; a JSON list
  is its messages' last text of the role. **A Python repr of an object** (LlamaIndex's
  ``StopEvent(result=AgentOutput(response=ChatMessage(...`` as ``text/plain``, cut short by the instrumentation) is
  no text: the caller falls back to the last model output.
* **CrewAI kickoff inputs** (:func:`kickoff_inputs_text`): a ``Crew.kickoff`` span names its inputs (``crew_inputs``,
  else its ``input.value`` object) and its tasks (``crew_tasks``, whose descriptions hold ``{name}`` placeholders for
  the inputs they use). The user's text is the value of the inputs the tasks use (all inputs, when no task names
  one), whatever their key: one input is its text, several are ``key: value`` lines. A kickoff without inputs
  (``crew.kickoff()``, the request written in the task): the first task's description, unless it is a template.
* **Tool calls in an LLM span's ``output.value``** (:func:`output_tool_calls`): CrewAI's event listener writes the
  model's tool calls there, as the OpenAI list ``[{"id", "function": {"name", "arguments"}}]``, and no
  ``llm.output_messages``.
* **A CrewAI ``TaskOutput``'s messages** (:func:`task_messages`): the ``output.value`` of an agent's task span holds
  the conversation the agent had with its model (OpenAI chat messages: tool calls with ids, the text each tool result
  was sent back as, the final text); CrewAI's default instrumentation emits no LLM span, so this is its only record.
* **The name the model calls a CrewAI tool by** (:func:`crewai_model_tool_name`): CrewAI gives the model a tool's name
  made safe for the provider (``Delegate work to coworker`` is ``delegate_work_to_coworker``, ``@tool("Local
  time")`` is ``local_time``), and its default instrumentation names the tool span by the display name; the tool's
  description, which CrewAI writes from the model's name (``Tool Name: local_time``), says which it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from otel_eval import semconv
from otel_eval.model import genai as genai_types
from otel_eval.reconstruct import _langchain as lc
from otel_eval.reconstruct._flattened import MAPPINGS
from otel_eval.reconstruct._genai_messages import contents_from_messages
from otel_eval.reconstruct._values import as_text, parse_json
from otel_eval.traces.span import Span

REDACTED = "__REDACTED__"
"""What OpenInference's ``TraceConfig`` writes for a value it hides."""
CREW_INPUTS = "crew_inputs"
CREW_TASKS = "crew_tasks"
_OBJECT_REPR = re.compile(r"^[A-Z][A-Za-z0-9_]*\([A-Za-z_][A-Za-z0-9_]*=")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_\-]*)\}")
_CREWAI_TOOL_NAME = re.compile(r"Tool Name: ([A-Za-z0-9_-]+)\n")
_CREW_OUTPUT_KEYS = frozenset({"tasks_output", "output_format", "token_usage"})
_CHAT_ROLES = frozenset({"system", "user", "assistant", "tool"})


def is_object_repr(text: str) -> bool:
    """Whether text is a Python repr of an object built with keyword arguments (``Name(field=...``)."""
    return _OBJECT_REPR.match(text.strip()) is not None


def value_text(value: Any, *, role: str, keys: Sequence[str]) -> str | None:
    """Text of an ``input.value``/``output.value`` (see the module docstring), or None."""
    parsed_value, ok = parse_json(value)
    if not ok:
        if not isinstance(value, str) or not value.strip() or is_object_repr(value):
            return None
        return value
    if isinstance(parsed_value, str):
        return parsed_value if parsed_value.strip() else None
    if isinstance(parsed_value, dict):
        raw = crew_output_text(parsed_value)
        if raw is not None:
            return raw
        messages = lc.messages_of(parsed_value)
        if messages:
            return lc.last_text(messages, role)
        for key in keys:
            field = parsed_value.get(key)
            if isinstance(field, str) and field.strip():
                return field
        return None
    if isinstance(parsed_value, list):
        items = [m for m in (lc.unwrap(item) for item in parsed_value) if m is not None]
        return lc.last_text(items, role)
    return value if isinstance(value, str) and value.strip() else None


def crew_output_text(value: Mapping[str, Any]) -> str | None:
    """The ``raw`` text of a CrewAI ``CrewOutput`` or ``TaskOutput`` (``raw`` beside its other fields), or None."""
    raw = value.get("raw")
    if not isinstance(raw, str) or not raw.strip():
        return None
    if _CREW_OUTPUT_KEYS & set(value) or ("agent" in value and "expected_output" in value):
        return raw
    return None


def kickoff_inputs_text(attributes: Mapping[str, Any], input_value: Any) -> str | None:
    """The user's text from a CrewAI kickoff's inputs (see the module docstring), or None when the span is no
    kickoff (it names no crew tasks nor inputs); a kickoff without inputs: its first task's description."""
    if CREW_TASKS not in attributes and CREW_INPUTS not in attributes:
        return None
    inputs, _ = parse_json(attributes.get(CREW_INPUTS, input_value))
    if not isinstance(inputs, dict) or not inputs:
        return _first_task_description(attributes.get(CREW_TASKS))
    used = [key for key in _task_placeholders(attributes.get(CREW_TASKS)) if key in inputs] or list(inputs)
    texts = [(key, as_text(inputs[key])) for key in used]
    texts = [(key, text) for key, text in texts if text is not None and text.strip()]
    if len(texts) == 1:
        return texts[0][1]
    return "\n".join(f"{key}: {text}" for key, text in texts) or None


def _first_task_description(tasks: Any) -> str | None:
    parsed, _ = parse_json(tasks)
    first = parsed[0] if isinstance(parsed, list) and parsed else None
    description = first.get("description") if isinstance(first, MAPPINGS) else None
    if not isinstance(description, str) or not description.strip() or _PLACEHOLDER.search(description):
        return None  # a template whose inputs did not come is not what the user asked
    return description


def _task_placeholders(tasks: Any) -> list[str]:
    parsed, _ = parse_json(tasks)
    names: list[str] = []
    for task in parsed if isinstance(parsed, list) else ():
        if not isinstance(task, MAPPINGS):
            continue
        for field in ("description", "expected_output"):
            text = task.get(field)
            for name in _PLACEHOLDER.findall(text) if isinstance(text, str) else ():
                if name not in names:
                    names.append(name)
    return names


def output_tool_calls(value: Any, warnings: list[str], where: str) -> genai_types.Content | None:
    """The model's tool calls when ``output.value`` is an OpenAI tool-call list (see the module docstring)."""
    parsed, _ = parse_json(value)
    if not isinstance(parsed, list) or not parsed:
        return None
    if not all(isinstance(c, MAPPINGS) and isinstance(c.get("function"), Mapping) for c in parsed):
        return None
    contents = contents_from_messages([{"role": "assistant", "tool_calls": parsed}], warnings, where)
    return contents[0] if contents else None


def task_messages(value: Any, warnings: list[str], where: str) -> list[genai_types.Content]:
    """The messages of a CrewAI ``TaskOutput`` in ``output.value`` (see the module docstring); [] for anything else."""
    parsed, _ = parse_json(value)
    if not isinstance(parsed, MAPPINGS) or crew_output_text(parsed) is None:
        return []
    messages = parsed.get("messages")
    if not isinstance(messages, list) or not all(
        isinstance(m, MAPPINGS) and m.get("role") in _CHAT_ROLES for m in messages
    ):
        return []
    return contents_from_messages(messages, warnings, where)


def crewai_model_tool_name(description: Any) -> str | None:
    """The name the model called a CrewAI tool by: the first line of its ``tool.description``, ``Tool Name: <name>``
    (None for any other description)."""
    if not isinstance(description, str):
        return None
    found = _CREWAI_TOOL_NAME.match(description)
    return None if found is None else found.group(1)


_LLAMA_INDEX_AGENT = re.compile(semconv.LLAMA_INDEX_AGENT_NAME + r"""=(['"])(.+?)\1""")


def run_method_agent(root: Span, members: Sequence[Span]) -> str | None:
    """The agent's name where its span is named after its run method: smolagents' ``<name>.run``; LlamaIndex's
    ``<class>.run``, whose agent is named only in its steps' Python reprs (``current_agent_name='<name>'``, the
    agent the run started with first)."""
    if semconv.SMOLAGENTS_TOOLS_NAMES in root.attributes:
        return root.name.removesuffix(".run") or None
    if root.scope_name != semconv.LLAMA_INDEX_SCOPE:
        return None
    for span in members:
        for key in (semconv.INPUT_VALUE, semconv.OUTPUT_VALUE):
            value = span.attributes.get(key)
            found = _LLAMA_INDEX_AGENT.search(value) if isinstance(value, str) else None
            if found is not None:
                return found.group(2)
    return None
