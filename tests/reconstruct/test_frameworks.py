"""Every convention proven on what its real instrumentation emits: the fixtures in ``tests/data/frameworks`` were
recorded by ``tests/data/frameworks/generate.py`` from real frameworks under their own OpenTelemetry instrumentation
(scripted models, offline), each run's spans beside the framework's own record of it (its message history).

For every fixture the invocations rebuilt from the spans must equal that record, turn by turn: the user text, the tool
calls (name and arguments) in order, each tool's result as a value, and the final text. The record is read here with
one small reader per framework, from the framework's own serialisation; a value is compared the way ADK holds it (a
dict as is, anything else as ``{"result": value}``; text holding a JSON or Python-literal object is that object).

AutoGen's spans carry no message content, nor do Microsoft Agent Framework's by default: what they do carry is proven in
``test_frameworks_uncaptured.py``.

Google ADK for Python (both telemetry schemas) is proven the same way, live, in ``test_adk_parity`` (the framework is a
test dependency, so its runs need no recording); ADK for JavaScript here, from runs recorded under Node.js.
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from otel_eval.model import IntermediateData, TracedInvocation, content_text
from otel_eval.reconstruct import UNKNOWN_CONVENTION, rebuild_traces
from otel_eval.reconstruct._values import tool_call_args, tool_response_payload
from otel_eval.traces import read_trace_file

FRAMEWORKS = Path(__file__).resolve().parents[1] / "data" / "frameworks"
INSTRUCTIONS = "You are a weather assistant. Use the tools."
"""The agents' instructions in every producer (``tests/data/frameworks/_common.py``)."""
FRAMEWORKS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "frameworks.md"
FIXTURES = sorted(FRAMEWORKS.glob("*/*.record.json"))


@dataclass
class Turn:
    """What one run did, by the framework's record or as rebuilt."""

    user: str
    calls: list[tuple[str, dict[str, Any]]]
    results: list[dict[str, Any]]
    final: str


def as_response(value: Any) -> dict[str, Any]:
    """A tool's result as ADK's ``FunctionResponse.response``: text holding an object is that object."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = json.loads(text) if text[:1] in "{[" else value
        except json.JSONDecodeError:
            with contextlib.suppress(ValueError, SyntaxError):
                value = ast.literal_eval(text)
    return value if isinstance(value, dict) else {"result": value}


def as_args(value: Any) -> dict[str, Any]:
    parsed = json.loads(value) if isinstance(value, str) else value
    assert isinstance(parsed, dict)
    return parsed


# --- one reader per framework record --------------------------------------------------------------------------------


def pydantic_ai_turn(record: list[dict[str, Any]] | dict[str, Any]) -> Turn:
    """A run's new messages; a run a tool's exception ended: its messages up to the call, and the exception, which is
    the call's result (the tool span's ``exception`` event; the run has no final text)."""
    turn = Turn("", [], [], "")
    messages = record["messages"] if isinstance(record, dict) else record
    if isinstance(record, dict):
        turn.results.append({"error": record["raised"]})
    for message in messages:
        for part in message["parts"]:
            kind = part["part_kind"]
            if kind == "user-prompt":
                turn.user = part["content"]
            elif kind == "tool-call":
                turn.calls.append((part["tool_name"], as_args(part["args"])))
            elif kind in ("tool-return", "retry-prompt"):
                turn.results.append(as_response(part["content"]))
            elif kind == "text":
                turn.final = part["content"]
    return turn


def openai_agents_turn(record: dict[str, Any]) -> Turn:
    turn = Turn(record["input"], [], [], record["final_output"])
    for item in record["new_items"]:
        if item["type"] == "function_call":
            turn.calls.append((item["name"], as_args(item["arguments"])))
        elif item["type"] == "function_call_output":
            turn.results.append(as_response(item["output"]))
    return turn


def langchain_turn(messages: list[dict[str, Any]]) -> Turn:
    turn = Turn("", [], [], "")
    for message in messages:
        data = message["data"]
        if message["type"] == "human":
            turn.user = data["content"]
        elif message["type"] == "ai":
            turn.calls.extend((call["name"], call["args"]) for call in data["tool_calls"])
            turn.final = data["content"] or turn.final
        elif message["type"] == "tool":
            turn.results.append(as_response(data["content"]))
    return turn


_SMOLAGENTS_ERROR = re.compile(
    r"^Error executing tool '[^']*' with arguments .*?: (?P<exception>\w+: [^\n]*)", re.DOTALL
)


def smolagents_turn(record: dict[str, Any]) -> Turn:
    """smolagents keeps one ``observations`` text per step (parallel results joined by lines), and a failed call only
    in the step's ``error`` (its sentence to the model around the exception, which the tool span records) and the
    step's model output. The agent answers by calling its ``final_answer`` tool, a tool use like any other."""
    turn = Turn(record["task"], [], [], record["output"])
    for step in record["steps"]:
        if "tool_calls" not in step:
            continue
        calls = [c["function"] for c in step["model_output_message"]["tool_calls"]]
        turn.calls.extend((c["name"], as_args(c["arguments"])) for c in calls)
        if step["error"] is not None:
            match = _SMOLAGENTS_ERROR.match(step["error"]["message"])
            assert match is not None, step["error"]
            turn.results.append({"error": match["exception"]})
        else:
            lines = step["observations"].split("\n")
            assert len(lines) == len(calls), step
            turn.results.extend(as_response(line) for line in lines)
    return turn


def google_genai_turn(history: list[dict[str, Any]]) -> Turn:
    """A chat's history (``Chat.get_history()``): ``Content`` dicts, tools run by automatic function calling."""
    turn = Turn("", [], [], "")
    for content in history:
        for part in content["parts"]:
            if content["role"] == "user" and "text" in part:
                turn.user = part["text"]
            elif "function_call" in part:
                turn.calls.append((part["function_call"]["name"], part["function_call"]["args"]))
            elif "function_response" in part:
                turn.results.append(as_response(part["function_response"]["response"]))
            elif content["role"] == "model" and "text" in part:
                turn.final = part["text"]
    return turn


def llama_index_turn(record: dict[str, Any]) -> Turn:
    """The ``ToolCallResult`` events of a ``FunctionAgent`` run and its ``AgentOutput``: a tool's value is its
    ``ToolOutput.raw_output`` (for a failing tool, the exception's text, which LlamaIndex sends the model)."""
    calls = record["tool_calls"]
    structured = record.get("structured_response")  # an output_cls: the model's JSON, what the last model call wrote
    return Turn(
        record["user_msg"],
        [(c["tool_name"], c["tool_kwargs"]) for c in calls],
        [as_response(c["raw_output"]) for c in calls],
        record["response"] if structured is None else json.dumps(structured, ensure_ascii=False),
    )


def strands_turn(record: dict[str, Any]) -> Turn:
    """The agent's Bedrock-style messages of one call: ``toolUse`` / ``toolResult`` content blocks (a failing tool's
    result is Strands' ``Error: <type> - <message>`` text, status ``error``)."""
    turn = Turn("", [], [], record["final"])
    for message in record["messages"]:
        for block in message["content"]:
            if message["role"] == "user" and "text" in block:
                turn.user = block["text"]
            elif "toolUse" in block:
                turn.calls.append((block["toolUse"]["name"], block["toolUse"]["input"]))
            elif "toolResult" in block:
                texts = [b["text"] for b in block["toolResult"]["content"]]
                turn.results.append(as_response("\n".join(texts)))
    return turn


def crewai_turn(record: dict[str, Any]) -> Turn:
    """One kickoff: its one input is the user's text (the task is only its template; a kickoff without inputs: the
    first task's description), the task's messages hold the calls and the text each result was sent to the model as
    (``Error executing tool: ...`` for a failing tool)."""
    (user,) = record["inputs"].values() or record["descriptions"][:1]
    turn = Turn(user, [], [], record["raw"])
    for message in record["messages"]:
        if message["role"] == "assistant":
            calls = [c["function"] for c in message.get("tool_calls") or []]
            turn.calls.extend((c["name"], as_args(c["arguments"])) for c in calls)
        elif message["role"] == "tool":
            turn.results.append(as_response(message["content"]))
    return turn


def agent_framework_turn(record: dict[str, Any]) -> Turn:
    """The messages one ``Agent.run`` added (``function_call`` and ``function_result`` contents; a failing tool's
    result is the framework's ``Error: Function failed.`` text, which it sends the model) and the response's text."""
    turn = Turn(record["user"], [], [], record["text"])
    for message in record["messages"]:
        for content in message["contents"]:
            if content["type"] == "function_call":
                turn.calls.append((content["name"], as_args(content["arguments"])))
            elif content["type"] == "function_result":
                turn.results.append(as_response(content["result"]))
    return turn


def adk_js_turn(record: dict[str, Any]) -> Turn:
    """The session events one ``runAsync`` yielded (camelCase: ``functionCall``, ``functionResponse``; a failing tool's
    response is ADK's ``{"error": "Error in tool '<name>': <message>"}``); the final text is the last model text."""
    turn = Turn(record["user"], [], [], "")
    for event in record["events"]:
        for part in (event.get("content") or {}).get("parts") or []:
            if "functionCall" in part:
                turn.calls.append((part["functionCall"]["name"], part["functionCall"].get("args") or {}))
            elif "functionResponse" in part:
                turn.results.append(part["functionResponse"]["response"])
            elif part.get("text") and event["content"]["role"] == "model":
                turn.final = part["text"]
    return turn


READERS: dict[str, Callable[[Any], Turn]] = {
    "pydantic_ai_v5": pydantic_ai_turn,
    "pydantic_ai_v6": pydantic_ai_turn,
    "openai_agents_openinference": openai_agents_turn,
    "openai_agents_openllmetry": openai_agents_turn,
    "langgraph_openinference": langchain_turn,
    "langgraph_openllmetry": langchain_turn,
    "smolagents_openinference": smolagents_turn,
    "google_genai": google_genai_turn,
    "llama_index_openinference": llama_index_turn,
    "strands": strands_turn,
    "strands_latest": strands_turn,
    "strands_span_attributes": strands_turn,
    "crewai_openinference": crewai_turn,
    "crewai_openinference_events": crewai_turn,
    "agent_framework": agent_framework_turn,
    "adk_js": adk_js_turn,
    "openai_agents_js": openai_agents_turn,  # its record is written in the Python SDK's item shape
}
CONTENT_NOT_CAPTURED = frozenset({"autogen", "agent_framework_no_content"})
"""Producers whose spans carry no message content (``test_frameworks_uncaptured.py``)."""
HIDDEN_CONTENT = "hidden_content"
"""A scenario whose spans carry no message content (``test_frameworks_uncaptured.py``)."""
FIVE_SCENARIOS = frozenset({"one_tool", "sequential_tools", "tool_error", "no_tool", "multi_turn"})
"""The scenarios of the producers added with LlamaIndex, CrewAI, Strands, AutoGen and Microsoft Agent Framework; the
first eight have three."""
EXTRA_SCENARIOS = {
    "adk_js": {"parallel_tools", "transfer", "agent_tool"},
    "openai_agents_js": {"parallel_tools"},
    "agent_framework": {"parallel_tools", "agent_tool", "workflow"},
    "pydantic_ai_v5": {"tool_raises"},
    "pydantic_ai_v6": {"tool_raises"},
    "smolagents_openinference": {"streamed"},
    "llama_index_openinference": {"structured_output"},
    "strands": {"structured_output"},
    "strands_latest": {"structured_output"},
    "strands_span_attributes": {"structured_output"},
    "crewai_openinference": {"crew", "hierarchical", "hidden_content", "no_inputs"},
    "crewai_openinference_events": {"crew", "hierarchical", "hidden_content", "no_inputs"},
}
"""A producer's scenarios beyond its set: parallel calls (ADK for JavaScript's ``execute_tool (merged)`` span), ADK for
JavaScript's root agent transferring to a sub-agent, an agent used as a tool (its calls are the parent's tool call),
Agent Framework's two-agent workflow (one invocation: :func:`workflow_run`) and CrewAI's two-agent crews (one
invocation per kickoff: in sequence every task's calls; under a manager its delegations, each one call, as an agent
used as a tool), a Pydantic AI tool raising (not ``ModelRetry``), a smolagents run streamed (``stream=True``), a LlamaIndex and a Strands run with a structured output model (its output tool is a call, its JSON the final text),
a CrewAI crew kicked off without inputs (the user's text is its task's description) and one with
OpenInference's inputs and outputs hidden (``test_frameworks_uncaptured``)."""
SHARED_ROWS = frozenset({"pydantic_ai_v6", "strands_latest", "strands_span_attributes", "agent_framework_no_content"})
"""Producers that share a README row with another (the same framework, another telemetry format or setting)."""


# --- the comparison -------------------------------------------------------------------------------------------------


def rebuilt_turn(traced: TracedInvocation) -> Turn:
    data = traced.invocation.intermediate_data
    assert isinstance(data, IntermediateData)
    return Turn(
        content_text(traced.invocation.user_content),
        [(c.name or "", dict(c.args or {})) for c in data.tool_uses],
        [dict(r.response or {}) for r in data.tool_responses],
        content_text(traced.invocation.final_response),
    )


def load(record_path: Path) -> tuple[dict[str, Any], list[TracedInvocation], list[str]]:
    record = json.loads(record_path.read_text(encoding="utf-8"))
    spans_path = record_path.with_name(record_path.name.replace(".record.json", ".otlp.json.gz"))
    spans = read_trace_file(spans_path).spans
    traces = rebuild_traces(spans)
    # Agent Framework's ``workflow.build`` is a trace of its own: no agent in it, no convention, nothing to evaluate.
    built = [t for t in traces if [s.name for s in spans if s.trace_id == t.trace_id] == ["workflow.build"]]
    assert all(t.convention == UNKNOWN_CONVENTION and not t.invocations for t in built)
    traces = [t for t in traces if t not in built]
    assert {t.convention for t in traces} == {record["convention"]}, [t.convention for t in traces]
    warnings = [w for t in traces for w in t.warnings] + [w for t in traces for i in t.invocations for w in i.warnings]
    return record, [i for t in traces for i in t.invocations], warnings


def test_every_producer_has_every_scenario() -> None:
    scenarios: dict[str, set[str]] = {}
    for path in FIXTURES:
        scenarios.setdefault(path.parent.name, set()).add(path.name.split(".")[0])
    assert set(scenarios) == set(READERS) | CONTENT_NOT_CAPTURED
    five = {"llama_index_openinference", "strands", "strands_latest", "strands_span_attributes"} | {
        "crewai_openinference",
        "crewai_openinference_events",
        "autogen",
        "agent_framework",
        "agent_framework_no_content",
        "adk_js",
        "openai_agents_js",
    }
    for producer, names in scenarios.items():
        expected = FIVE_SCENARIOS if producer in five else {"parallel_tools", "tool_error", "multi_turn"}
        assert names == expected | EXTRA_SCENARIOS.get(producer, set()), producer


def workflow_run(agents: list[Turn]) -> Turn:
    """Agent Framework's workflow run, one invocation whose record is each agent's response: the workflow's input,
    every agent's calls and results in order, the last agent's answer (the framework's ``evaluate_workflow`` overall
    item, and ADK's run of sequential agents)."""
    return Turn(
        agents[0].user,
        [call for agent in agents for call in agent.calls],
        [result for agent in agents for result in agent.results],
        agents[-1].final,
    )


@pytest.mark.parametrize(
    "record_path",
    [p for p in FIXTURES if p.parent.name not in CONTENT_NOT_CAPTURED and not p.name.startswith(HIDDEN_CONTENT)],
    ids=lambda p: f"{p.parent.name}/{p.name.split('.')[0]}",
)
def test_rebuilt_invocations_equal_the_framework_record(record_path: Path) -> None:
    record, invocations, warnings = load(record_path)
    expected = [READERS[record["producer"]](turn) for turn in record["turns"]]
    if record["scenario"] == "workflow":
        expected = [workflow_run(expected)]
    assert [rebuilt_turn(i) for i in invocations] == expected
    assert warnings == []
    assert all(i.content_captured for i in invocations)


MODEL_TURNS = {
    "one_tool": [2],
    "sequential_tools": [3],
    "tool_error": [2],
    "no_tool": [1],
    "multi_turn": [2, 2],
    "transfer": [3],
    "parallel_tools": [3],
    "agent_tool": [4],
    "workflow": [4],
    "crew": [4],
    "hierarchical": [7],
    "hidden_content": [2],
    "no_inputs": [2],
    "structured_output": [2],
    "streamed": [2],
    "tool_raises": [1],
}
"""How many times the scripted model answered in each turn of each scenario (parallel calls: one answer for both)."""
OWN_RUNS = {("adk_js", "agent_tool"): [2], ("llama_index_openinference", "structured_output"): [3]}
"""Where a producer's count differs: ADK runs an ``AgentTool``'s agent as an invocation of its own, so its two model
calls are not the parent's (as ADK for Python's, ``test_adk_parity``); LlamaIndex's ``output_cls`` asks the model once
more (three LLM spans, nested, for that one call)."""


@pytest.mark.parametrize(
    "record_path",
    [
        p
        for p in FIXTURES
        if p.parent.name
        in {
            "llama_index_openinference",
            "crewai_openinference_events",
            "strands",
            "agent_framework",
            "adk_js",
            "openai_agents_js",
        }
    ],
    ids=lambda p: f"{p.parent.name}/{p.name.split('.')[0]}",
)
def test_model_calls_are_counted_once(record_path: Path) -> None:
    """LlamaIndex labels its request-preparing step an LLM span too: it is not a model call of its own."""
    _, invocations, _ = load(record_path)
    scenario = record_path.name.split(".")[0]
    expected = OWN_RUNS.get((record_path.parent.name, scenario), MODEL_TURNS[scenario])
    assert [i.model_call_count for i in invocations] == expected


def test_adk_for_javascript_turns_share_their_session_and_the_agent_keeps_its_instructions() -> None:
    """ADK for JavaScript's session id (``gen_ai.conversation.id``) joins its turns; its request config, written in
    camelCase (``systemInstruction``), gives the agent's instructions (after the preamble ADK adds, naming the agent)."""
    _, invocations, _ = load(FRAMEWORKS / "adk_js" / "multi_turn.record.json")
    assert len(invocations) == 2 and invocations[0].session_id
    assert invocations[0].session_id == invocations[1].session_id
    for invocation in invocations:
        app = invocation.invocation.app_details
        assert app is not None
        instructions = app.agent_details["weather_agent"].instructions
        assert instructions.startswith('You are an agent. Your internal name is "weather_agent".')
        assert instructions.endswith(INSTRUCTIONS)


def test_adk_for_javascript_sub_agent_is_an_agent_of_the_invocation() -> None:
    """The transfer to a sub-agent: its calls are the invocation's (as ADK's session events say), its model calls are
    counted, and both agents are in the app details."""
    _, [invocation], _ = load(FRAMEWORKS / "adk_js" / "transfer.record.json")
    assert invocation.agent_name == "weather_agent" and invocation.model_call_count == 3
    app = invocation.invocation.app_details
    assert app is not None and set(app.agent_details) == {"weather_agent", "time_agent"}
    declared = {
        d["name"] for tool in app.agent_details["time_agent"].tool_declarations for d in tool["function_declarations"]
    }
    assert declared == {"get_time", "transfer_to_agent"}  # its own tool, and the transfer back


@pytest.mark.parametrize("producer", ["smolagents_openinference", "llama_index_openinference"])
def test_agent_is_labelled_by_its_name_not_its_run_method(producer: str) -> None:
    """smolagents names its agent's span ``<name>.run``, LlamaIndex ``FunctionAgent.run`` whatever the agent's name
    (which only its step spans' Python reprs hold, as ``current_agent_name``): the label is the agent's ``name``, as
    ``OTEL_EVAL_AGENT_NAMES`` and the per-agent alerts name it."""
    for path in sorted((FRAMEWORKS / producer).glob("*.record.json")):
        _, invocations, _ = load(path)
        assert {i.agent_name for i in invocations} == {"weather_agent"}, path.name
        details = invocations[0].invocation.app_details  # none where the model spans name no instructions or tools
        assert details is None or list(details.agent_details) == ["weather_agent"], path.name


def test_crewai_agents_keep_their_instructions_without_llm_spans() -> None:
    """CrewAI's default instrumentation has no LLM span: each agent's instructions (the system message CrewAI writes
    from its role, goal and backstory) are those its task's messages hold, as the event listener's LLM spans say."""
    details = []
    for producer in ("crewai_openinference", "crewai_openinference_events"):
        _, [invocation], _ = load(FRAMEWORKS / producer / "crew.record.json")
        app = invocation.invocation.app_details
        assert app is not None
        details.append({name: agent.instructions for name, agent in app.agent_details.items()})
    assert list(details[0]) == ["weather_agent", "time_agent"]
    assert details[0]["weather_agent"].startswith("You are weather_agent. A weather assistant.")
    assert details[0] == details[1]


def test_agent_framework_workflow_run_is_one_invocation_of_its_agents() -> None:
    """The workflow's ``workflow.run`` span (no GenAI attribute on it) is the invocation's root: the first agent's answer
    is an intermediate response, both agents are in the app details, and the invocation is labelled with the first
    agent (not the workflow's generated name). A ``workflow.run`` span of another instrumentation is no agent: the
    same spans then give an invocation per agent."""
    path = FRAMEWORKS / "agent_framework" / "workflow.otlp.json.gz"
    spans = read_trace_file(path).spans
    [invocation] = [i for t in rebuild_traces(spans) for i in t.invocations]
    [run] = [s for s in spans if s.name == "workflow.run"]
    assert invocation.span_id == run.span_id and invocation.agent_name == "weather_agent"
    data = invocation.invocation.intermediate_data
    assert isinstance(data, IntermediateData)
    assert [(author, [p.text for p in parts]) for author, parts in data.intermediate_responses] == [
        ("weather_agent", ["Paris is cloudy at 18 °C."])
    ]
    app = invocation.invocation.app_details
    assert app is not None and set(app.agent_details) == {"weather_agent", "time_agent"}

    other = [replace(s, scope_name="another.library") if s.name == "workflow.run" else s for s in spans]
    rebuilt = [i for t in rebuild_traces(other) for i in t.invocations]
    assert [i.agent_name for i in rebuilt] == ["weather_agent", "time_agent"]


def test_frameworks_table_lists_every_producer_with_the_versions_tested() -> None:
    text = FRAMEWORKS_PAGE.read_text(encoding="utf-8")
    table = text[: text.index("- **Google ADK**")]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "`" in line]
    for path in FIXTURES:
        record = json.loads(path.read_text(encoding="utf-8"))
        tested = {name: version for name, version in record["versions"].items() if name != "opentelemetry-sdk"}
        assert any(all(f"`{name}` {version}" in row for name, version in tested.items()) for row in rows), (
            f"no row of docs/frameworks.md names {tested} ({path.parent.name})"
        )
    assert len(rows) == len({p.parent.name for p in FIXTURES} - SHARED_ROWS) + 1  # + ADK


# --- envelopes no current producer emits (hand-typed, each a variant of a recorded one) ----------------------------


def tool_result(value: Any) -> tuple[dict[str, Any], list[str]]:
    warnings: list[str] = []
    return tool_response_payload(value, warnings, "span x"), warnings


def test_tool_message_in_either_serialisation_is_its_content() -> None:
    dumpd = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ToolMessage"]}
    dumpd["kwargs"] = {"content": '{"city": "Paris"}', "type": "tool", "tool_call_id": "call_1"}
    as_dict = {"type": "tool", "data": {"content": "14:05", "tool_call_id": "call_1", "status": "success"}}
    assert tool_result(json.dumps(dumpd)) == ({"city": "Paris"}, [])
    assert tool_result({"output": dumpd, "kwargs": {"name": "get_weather"}}) == ({"city": "Paris"}, [])
    assert tool_result(as_dict) == ({"result": "14:05"}, [])
    assert tool_result({"messages": [as_dict]}) == ({"result": "14:05"}, [])


def test_callback_argument_envelope_is_its_inputs_or_its_text() -> None:
    warnings: list[str] = []
    assert tool_call_args({"input_str": "{'city': 'Paris'}", "inputs": {"city": "Paris"}}, warnings) == {
        "city": "Paris"
    }
    assert tool_call_args(json.dumps({"input_str": "{'city': 'Rome'}", "tags": []}), warnings) == {"city": "Rome"}
    assert warnings == []


def test_unknown_envelopes_are_kept_with_a_warning() -> None:
    document = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "document", "Document"]}
    document["kwargs"] = {"page_content": "Paris"}
    response, warnings = tool_result(json.dumps(document))
    assert response == document
    assert warnings == [
        "span x: the value looks like a LangChain serialised object "
        "['langchain', 'schema', 'document', 'Document'], which is not unwrapped; kept as recorded"
    ]
    args_warnings: list[str] = []
    assert tool_call_args({"input_str": "Paris", "serialized": {}}, args_warnings, "span y") == {
        "input_str": "Paris",
        "serialized": {},
    }
    assert args_warnings == [
        "span y: the value looks like a callback envelope with input_str, which is not unwrapped; kept as recorded"
    ]


def test_python_repr_result_is_the_dict_it_prints() -> None:
    assert tool_result("{'city': 'Paris', 'temperature_c': 18}") == ({"city": "Paris", "temperature_c": 18}, [])
    assert tool_result("{'city': broken") == (
        {"result": "{'city': broken"},
        ["span x: tool result is not valid JSON; kept as text"],
    )
