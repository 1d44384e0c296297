"""Recorders of the agent frameworks that need environments of their own (their OpenTelemetry or other pins conflict):
LlamaIndex, CrewAI, Strands Agents, AutoGen and Microsoft Agent Framework (virtualenvs), and ADK for JavaScript
(Node.js). Each model is the framework's own OpenAI (ADK: Gemini) client class talking to the scripted server on
127.0.0.1 (``ChatCompletionsServer``); each record is the framework's own result objects, as it serialises them. The
requirements of each are in ``requirements-<framework>.txt`` beside this file (ADK for JavaScript: ``node/``)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from _common import HERE, INSTRUCTIONS, MODEL, TOOLS, ChatCompletionsServer, ForeignRun, Scenario, Script, Turn
from opentelemetry.sdk.trace import TracerProvider

# --- LlamaIndex -----------------------------------------------------------------------------------------------------


LLAMA_INDEX_STRUCTURED = Scenario(
    "structured_output",
    [
        Turn(
            "What's the weather in Paris?",
            [
                [("get_weather", {"city": "Paris"})],
                "Paris is cloudy at 18 °C.",
                '{"city": "Paris", "temperature_c": 18}',
            ],
        )
    ],
)
"""A ``FunctionAgent`` with an ``output_cls``: after its answer, one more model call (under LlamaIndex's
``StructuredLLM.achat`` and ``astructured_predict`` LLM spans) turns it into the model's JSON."""


def llama_index(scenario: Scenario, script: Script, provider: TracerProvider) -> Any:
    from llama_index.core.agent.workflow import AgentOutput, FunctionAgent, ToolCallResult
    from pydantic import BaseModel

    class Weather(BaseModel):
        city: str
        temperature_c: int

    from llama_index.core.tools import FunctionTool
    from llama_index.core.workflow import Context
    from llama_index.llms.openai import OpenAI
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    LlamaIndexInstrumentor().instrument(tracer_provider=provider)
    record = []
    with ChatCompletionsServer(script) as server:
        # A model name the client knows (for its context window); every request goes to the scripted server.
        llm = OpenAI(model="gpt-4o-mini", api_base=server.base_url, api_key="not-a-key", max_retries=0)
        agent = FunctionAgent(
            name="weather_agent",
            tools=[FunctionTool.from_defaults(fn=tool) for tool in TOOLS.values()],
            llm=llm,
            system_prompt=INSTRUCTIONS,
            streaming=False,  # the scripted server answers whole responses
            output_cls=Weather if scenario.name == LLAMA_INDEX_STRUCTURED.name else None,
        )
        context = Context(agent)

        async def turns() -> None:
            for turn in scenario.turns:
                handler = agent.run(turn.user, ctx=context)
                events: list[dict[str, Any]] = []
                async for event in handler.stream_events():
                    if isinstance(event, ToolCallResult):
                        events.append(
                            {
                                "tool_name": event.tool_name,
                                "tool_kwargs": event.tool_kwargs,
                                "tool_id": event.tool_id,
                                "raw_output": event.tool_output.raw_output,
                                "content": event.tool_output.content,
                                "is_error": event.tool_output.is_error,
                            }
                        )
                result: AgentOutput = await handler
                record.append(
                    {
                        "user_msg": turn.user,
                        "tool_calls": events,
                        "response": result.response.content,
                        "structured_response": result.structured_response,
                    }
                )

        asyncio.run(turns())
    LlamaIndexInstrumentor().uninstrument()
    return record


# --- Strands Agents -------------------------------------------------------------------------------------------------


STRANDS_STRUCTURED = Scenario(
    "structured_output",
    [
        Turn(
            "What's the weather in Paris?",
            [[("get_weather", {"city": "Paris"})], [("Weather", {"city": "Paris", "temperature_c": 18})]],
        )
    ],
)
"""A Strands run with ``structured_output_model=Weather``: the model answers by calling the ``Weather`` tool Strands
adds, and the agent's text is the validated model as JSON."""


def strands(scenario: Scenario, script: Script, provider: TracerProvider) -> Any:
    from pydantic import BaseModel
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel

    class Weather(BaseModel):
        city: str
        temperature_c: int

    output = Weather if scenario.name == STRANDS_STRUCTURED.name else None

    record = []
    with ChatCompletionsServer(script) as server:
        model = OpenAIModel(client_args={"base_url": server.base_url, "api_key": "not-a-key"}, model_id=MODEL)
        # Strands reports a tool's exception to the model as its result (status "error"); the tools are its own.
        agent = Agent(
            model=model,
            system_prompt=INSTRUCTIONS,
            tools=[tool(fn) for fn in TOOLS.values()],
            name="weather_agent",
            callback_handler=None,
        )
        for turn in scenario.turns:
            before = len(agent.messages)
            result = agent(turn.user, structured_output_model=output)
            record.append({"messages": agent.messages[before:], "final": str(result)})  # the text the agent returns
    return record


# --- AutoGen --------------------------------------------------------------------------------------------------------


def autogen(scenario: Scenario, script: Script, provider: TracerProvider) -> Any:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import TextMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_core import SingleThreadedAgentRuntime
    from autogen_core.models import ModelFamily
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    os.environ.pop("AUTOGEN_DISABLE_RUNTIME_TRACING", None)
    record = []
    with ChatCompletionsServer(script) as server:
        client = OpenAIChatCompletionClient(
            model=MODEL,
            base_url=server.base_url,
            api_key="not-a-key",
            model_info={
                "vision": False,
                "function_calling": True,
                "json_output": False,
                "family": ModelFamily.UNKNOWN,
                "structured_output": False,
            },
        )
        agent = AssistantAgent(
            "weather_agent",
            model_client=client,
            tools=list(TOOLS.values()),
            system_message=INSTRUCTIONS,
            reflect_on_tool_use=True,
            max_tool_iterations=4,
        )

        async def turns() -> None:
            runtime = SingleThreadedAgentRuntime(tracer_provider=provider)
            runtime.start()
            team = RoundRobinGroupChat(
                [agent], termination_condition=TextMessageTermination("weather_agent"), runtime=runtime
            )
            for turn in scenario.turns:
                result = await team.run(task=turn.user)
                record.append([message.model_dump(mode="json") for message in result.messages])
            await runtime.stop_when_idle()

        asyncio.run(turns())
    return record


# --- CrewAI ---------------------------------------------------------------------------------------------------------


CREWAI_REQUEST = "What's the weather in Paris, and the time there?"
CREWAI_CREW = Scenario(
    "crew",
    [
        Turn(
            CREWAI_REQUEST,
            [
                [("get_weather", {"city": "Paris"})],  # the first agent's task
                "Paris is cloudy at 18 °C.",
                [("local_time", {"city": "Paris"})],  # the second's: its tool is named "Local time"
                "It is 14:05 in Paris.",
            ],
        )
    ],
)
"""A scenario of CrewAI's own: two agents, a task each, run in sequence (``Process.sequential``); the clock tool has a
display name (``@tool("Local time")``), which CrewAI gives the model as ``local_time``."""


def _delegation(task: str, coworker: str) -> dict[str, Any]:
    return {"task": task, "context": CREWAI_REQUEST, "coworker": coworker}  # CrewAI's ``Delegate work to coworker``


CREWAI_HIERARCHICAL = Scenario(
    "hierarchical",
    [
        Turn(
            CREWAI_REQUEST,
            [
                [("delegate_work_to_coworker", _delegation("The weather in Paris.", "weather_agent"))],
                [("get_weather", {"city": "Paris"})],  # the coworker's own model turns
                "Paris is cloudy at 18 °C.",
                [("delegate_work_to_coworker", _delegation("The local time in Paris.", "time_agent"))],
                [("local_time", {"city": "Paris"})],
                "It is 14:05 in Paris.",
                "Paris is cloudy at 18 °C and it is 14:05 there.",
            ],
        )
    ],
)
"""Another: the same two agents under a manager (``Process.hierarchical``, ``manager_llm``) that delegates one task to
each with CrewAI's ``Delegate work to coworker`` tool."""
CREWAI_HIDDEN = Scenario(
    "hidden_content", [Turn("What's the weather in Paris?", [[("get_weather", {"city": "Paris"})], "Paris."])]
)
"""Another: the one-agent crew under ``TraceConfig(hide_inputs=True, hide_outputs=True)`` (``OPENINFERENCE_HIDE_*``)."""
CREWAI_NO_INPUTS = Scenario(
    "no_inputs", [Turn("What's the weather in Rome?", [[("get_weather", {"city": "Rome"})], "Rome."])]
)
"""Another: the one-agent crew whose task is the request itself, kicked off without inputs (``crew.kickoff()``)."""


def crewai(*, event_listener: bool) -> Any:
    """A one-agent, one-task crew, one kickoff per user turn (``inputs={"request": ...}`` fills the task); CrewAI
    keeps no history between kickoffs, so each turn's record is its own: the task's messages and the crew's output.
    The crews of :data:`CREWAI_CREW` and :data:`CREWAI_HIERARCHICAL` have two agents; their record holds every task's
    messages in order (under a manager, its own: the delegations and the coworkers' answers)."""

    def run(scenario: Scenario, script: Script, provider: TracerProvider) -> Any:
        from crewai import LLM, Crew, Task
        from openinference.instrumentation import TraceConfig
        from openinference.instrumentation.crewai import CrewAIInstrumentor

        hide = scenario.name == CREWAI_HIDDEN.name
        config = TraceConfig(hide_inputs=True, hide_outputs=True) if hide else None
        CrewAIInstrumentor().instrument(tracer_provider=provider, use_event_listener=event_listener, config=config)
        record = []
        with ChatCompletionsServer(script) as server:
            llm = LLM(model="gpt-4o-mini", base_url=server.base_url, api_key="not-a-key", max_retries=0)
            if scenario.name in (CREWAI_CREW.name, CREWAI_HIERARCHICAL.name):
                crew = _two_agent_crew(llm, hierarchical=scenario.name == CREWAI_HIERARCHICAL.name)
            else:
                agent = _crew_agent("weather_agent", INSTRUCTIONS, "A weather assistant.", TOOLS, llm)
                no_inputs = scenario.name == CREWAI_NO_INPUTS.name
                description = scenario.turns[0].user if no_inputs else "{request}"
                task = Task(description=description, expected_output="A short answer.", agent=agent)
                crew = Crew(agents=[agent], tasks=[task], verbose=False)
            for turn in scenario.turns:
                inputs = {} if scenario.name == CREWAI_NO_INPUTS.name else {"request": turn.user}
                output = crew.kickoff(inputs=inputs or None)
                record.append(
                    {
                        "inputs": inputs,
                        "descriptions": [task_output.description for task_output in output.tasks_output],
                        "messages": [dict(m) for task_output in output.tasks_output for m in task_output.messages],
                        "raw": output.raw,
                    }
                )
        CrewAIInstrumentor().uninstrument()
        return record

    return run


def _crew_agent(role: str, goal: str, backstory: str, tools: dict[str, Any], llm: Any) -> Any:
    """A CrewAI agent with ``tools`` (name: function) on ``llm``."""
    from crewai import Agent
    from crewai.tools import tool

    tools_ = [tool(name)(fn) for name, fn in tools.items()]
    return Agent(role=role, goal=goal, backstory=backstory, tools=tools_, llm=llm, max_iter=6, verbose=False)


def _two_agent_crew(llm: Any, *, hierarchical: bool) -> Any:
    """A weather agent and a clock agent (its tool named ``Local time``): a task each in sequence, or one task a
    manager on the same model delegates."""
    from crewai import Crew, Process, Task

    weather = _crew_agent(
        "weather_agent", INSTRUCTIONS, "A weather assistant.", {"get_weather": TOOLS["get_weather"]}, llm
    )
    clock = _crew_agent(
        "time_agent", "You tell the local time. Use the tool.", "A clock.", {"Local time": TOOLS["get_time"]}, llm
    )
    if hierarchical:
        task = Task(description="{request}", expected_output="A short answer.")
        return Crew(agents=[weather, clock], tasks=[task], process=Process.hierarchical, manager_llm=llm, verbose=False)
    tasks = [
        Task(description="{request} Answer the weather part.", expected_output="A short answer.", agent=weather),
        Task(description="{request} Answer the time part.", expected_output="A short answer.", agent=clock),
    ]
    return Crew(agents=[weather, clock], tasks=tasks, process=Process.sequential, verbose=False)


# --- Microsoft Agent Framework --------------------------------------------------------------------------------------

AGENT_FRAMEWORK_AGENT_TOOL = Scenario(
    "agent_tool",
    [
        Turn(
            "What time is it in Tokyo?",
            [
                [("time_agent", {"task": "The local time in Tokyo."})],  # the parent calls the sub-agent (``as_tool``)
                [("get_time", {"city": "Tokyo"})],  # the sub-agent's own model turns
                "Tokyo: 21:05.",
                "It is 21:05 in Tokyo.",
            ],
        )
    ],
)
"""A scenario of Agent Framework's own: an agent used as a tool (``Agent.as_tool``), whose model calls and tool run
are inside the parent's tool call."""
AGENT_FRAMEWORK_WORKFLOW = Scenario(
    "workflow",
    [
        Turn(
            "What's the weather in Paris, and the time there?",
            [
                [("get_weather", {"city": "Paris"})],  # the first agent
                "Paris is cloudy at 18 °C.",
                [("get_time", {"city": "Paris"})],  # the second, given the conversation so far
                "It is 14:05 in Paris.",
            ],
        )
    ],
)
"""Another: a two-agent workflow (``WorkflowBuilder``, one edge); the record holds each agent's ``AgentResponse``."""


def agent_framework(scenario: Scenario, script: Script, provider: TracerProvider) -> Any:
    """An ``Agent`` on the framework's OpenAI chat completions client, one session for the scenario's turns (each turn
    is a trace of its own); its own instrumentation on the global tracer provider, content captured with
    ``ENABLE_SENSITIVE_DATA``. The record of a turn is its ``AgentResponse``: the messages it added, as the framework
    serialises them (``to_dict``), and its text."""
    from agent_framework import Agent
    from agent_framework.openai import OpenAIChatCompletionClient

    record = []
    with ChatCompletionsServer(script) as server:
        client = OpenAIChatCompletionClient(MODEL, api_key="not-a-key", base_url=server.base_url)
        tools: list[Any] = list(TOOLS.values())
        if scenario.name == AGENT_FRAMEWORK_AGENT_TOOL.name:  # the clock is a sub-agent's, called as a tool
            clock = Agent(
                client=client,
                instructions="You tell the local time. Use the tool.",
                tools=[TOOLS["get_time"]],
                name="time_agent",
                description="Tells the local time in a city.",
            )
            tools = [TOOLS["get_weather"], clock.as_tool()]
        agent = Agent(client=client, instructions=INSTRUCTIONS, tools=tools, name="weather_agent")

        async def turns() -> None:
            if scenario.name == AGENT_FRAMEWORK_WORKFLOW.name:
                from agent_framework import WorkflowBuilder

                weather = Agent(
                    client=client, instructions=INSTRUCTIONS, tools=[TOOLS["get_weather"]], name="weather_agent"
                )
                clock = Agent(
                    client=client,
                    instructions="You tell the local time. Use the tool.",
                    tools=[TOOLS["get_time"]],
                    name="time_agent",
                )
                workflow = WorkflowBuilder(start_executor=weather).add_edge(weather, clock).build()
                (turn,) = scenario.turns
                result = await workflow.run(turn.user)
                for response in result.get_outputs():
                    messages = [message.to_dict() for message in response.messages]
                    record.append({"user": turn.user, "messages": messages, "text": response.text})
                return
            session = agent.create_session()
            for turn in scenario.turns:
                response = await agent.run(turn.user, session=session)
                messages = [message.to_dict() for message in response.messages]
                record.append({"user": turn.user, "messages": messages, "text": response.text})

        asyncio.run(turns())
    return record


# --- ADK for JavaScript ---------------------------------------------------------------------------------------------

NODE = HERE / "node"
"""The npm package that runs ADK for JavaScript (``npm ci --prefix tests/data/frameworks/node`` installs it)."""
NODE_PACKAGES = ("@google/adk", "@opentelemetry/sdk-trace-node")
ADK_JS_TRANSFER = Scenario(
    "transfer",
    [
        Turn(
            "What time is it in Tokyo?",
            # ADK for JavaScript's transfer tool takes its argument in camelCase.
            [
                [("transfer_to_agent", {"agentName": "time_agent"})],
                [("get_time", {"city": "Tokyo"})],
                "It is 21:05 in Tokyo.",
            ],
        )
    ],
)
"""A scenario of ADK for JavaScript's own: the root agent transfers to a sub-agent that owns the clock tool."""
ADK_JS_AGENT_TOOL = Scenario(
    "agent_tool",
    [
        Turn(
            "Which local time is it in Tokyo now?",
            [
                [("time_agent", {"request": "The local time in Tokyo."})],  # the root calls the agent (``AgentTool``)
                [("get_time", {"city": "Tokyo"})],  # the agent's own run
                "Tokyo: 21:05.",
                "It is 21:05 in Tokyo.",
            ],
        )
    ],
)
"""Another: the clock belongs to an agent the root agent calls as a tool (``AgentTool``)."""


def adk_js(scenario: Scenario, script: Script, provider: TracerProvider) -> ForeignRun:
    """``node/record_adk.mjs``: an ``LlmAgent`` of ``@google/adk`` on its own Gemini model class, which talks to the
    scripted server (``GOOGLE_GEMINI_BASE_URL``), one session for the scenario's turns (with :data:`ADK_JS_TRANSFER`
    and :data:`ADK_JS_AGENT_TOOL`, another agent holds the clock tool); its spans through the JavaScript
    OpenTelemetry SDK, written as OTLP/JSON by the SDK's own serializer. The record of a turn is the session events
    the runner yielded, as ADK serialises them (``JSON.stringify``)."""
    with ChatCompletionsServer(script) as server, tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / "run.json"
        request = {
            "model": "gemini-2.5-flash",  # a name ADK's model registry resolves to its Gemini class
            "instructions": INSTRUCTIONS,
            "turns": [turn.user for turn in scenario.turns],
            "output": str(output),
            "transfer": scenario.name == ADK_JS_TRANSFER.name,
            "agentTool": scenario.name == ADK_JS_AGENT_TOOL.name,
        }
        environment = {**os.environ, "GOOGLE_GEMINI_BASE_URL": server.root, "GOOGLE_API_KEY": "not-a-key"}
        subprocess.run(
            ["node", "record_adk.mjs"], input=json.dumps(request), text=True, env=environment, cwd=NODE, check=True
        )
        run = json.loads(output.read_text(encoding="utf-8"))
    versions = {
        name: json.loads((NODE / "node_modules" / name / "package.json").read_text(encoding="utf-8"))["version"]
        for name in NODE_PACKAGES
    }
    return ForeignRun(run["otlp"], run["turns"], versions)


# --- OpenAI Agents SDK for JavaScript -------------------------------------------------------------------------------

NODE_OPENAI_AGENTS = HERE / "node_openai_agents"
"""The npm package that runs the OpenAI Agents SDK for JavaScript (``npm ci --prefix
tests/data/frameworks/node_openai_agents`` installs it)."""
NODE_OPENAI_AGENTS_PACKAGES = ("@openai/agents", "@arizeai/openinference-instrumentation-openai-agents")


def openai_agents_js(scenario: Scenario, script: Script, provider: TracerProvider) -> ForeignRun:
    """``node_openai_agents/record_openai_agents.mjs``: an ``Agent`` of ``@openai/agents`` on the SDK's default
    Responses model, which talks to the scripted server (``OPENAI_BASE_URL``), each turn a ``run`` on the history so
    far inside ``withTrace(..., {groupId})``; its spans through OpenInference's instrumentation and the JavaScript
    OpenTelemetry SDK, with ``session.id`` put on every span from the group id by the span processor
    ``docs/frameworks.md`` shows. The record of a turn is the items the run added."""
    with ChatCompletionsServer(script) as server, tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / "run.json"
        request = {
            "model": MODEL,
            "instructions": INSTRUCTIONS,
            "turns": [turn.user for turn in scenario.turns],
            "groupId": f"conversation-{scenario.name}",
            "output": str(output),
        }
        environment = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "not-a-key"}
        subprocess.run(
            ["node", "record_openai_agents.mjs"],
            input=json.dumps(request),
            text=True,
            env=environment,
            cwd=NODE_OPENAI_AGENTS,
            check=True,
        )
        run = json.loads(output.read_text(encoding="utf-8"))
    versions = {
        name: json.loads((NODE_OPENAI_AGENTS / "node_modules" / name / "package.json").read_text(encoding="utf-8"))[
            "version"
        ]
        for name in NODE_OPENAI_AGENTS_PACKAGES
    }
    return ForeignRun(run["otlp"], run["turns"], versions)
