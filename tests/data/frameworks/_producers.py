"""One recorder per producer (framework + instrumentation): runs every scenario and writes its files."""

from __future__ import annotations

import asyncio
import json
import os
import warnings
from collections.abc import Callable
from typing import Any

import _producers_agents
from _common import (
    FIVE_SCENARIOS,
    INSTRUCTIONS,
    MODEL,
    SCENARIOS,
    TOOLS,
    ChatCompletionsServer,
    ForeignRun,
    Scenario,
    Script,
    Turn,
    new_provider,
    versions,
    write_run,
)
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

Runner = Callable[[Scenario, Script, TracerProvider], Any]
"""Runs one scenario's turns (the model answering from the script) and returns the framework's record, one entry per
turn."""


# --- Pydantic AI ----------------------------------------------------------------------------------------------------


PYDANTIC_AI_TOOL_RAISES = Scenario(
    "tool_raises",
    [Turn("What's the forecast for Paris for the next 3 days?", [[("get_forecast", {"city": "Paris", "days": 3})]])],
)
"""A Pydantic AI tool raising an exception other than ``ModelRetry``: the run raises it, after one model call."""


def _pydantic_ai(version: int) -> Runner:
    def run(scenario: Scenario, script: Script, provider: TracerProvider) -> Any:
        from pydantic_ai import Agent, ModelRetry, capture_run_messages
        from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel
        from pydantic_ai.models.instrumented import InstrumentationSettings
        from pydantic_core import to_jsonable_python

        def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            step = script.next()
            if isinstance(step, str):
                return ModelResponse(parts=[TextPart(step)])
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=call_id) for name, args, call_id in step])

        agent = Agent(FunctionModel(answer, model_name=MODEL), instructions=INSTRUCTIONS, name="weather_agent")
        # model_request_parameters repeats every tool schema on every model span: off, to keep the fixtures small.
        agent.instrument = InstrumentationSettings(
            tracer_provider=provider, version=version, include_model_request_parameters=False
        )
        agent.tool_plain(TOOLS["get_weather"])
        agent.tool_plain(TOOLS["get_time"])

        @agent.tool_plain(name="get_forecast")
        def forecast(city: str, days: int) -> dict[str, Any]:
            """The weather forecast for a city over the next days."""
            if scenario.name == PYDANTIC_AI_TOOL_RAISES.name:
                return TOOLS["get_forecast"](city, days)
            try:
                return TOOLS["get_forecast"](city, days)
            except RuntimeError as exc:
                raise ModelRetry(str(exc)) from exc

        history: list[ModelMessage] = []
        record = []
        for turn in scenario.turns:
            if scenario.name == PYDANTIC_AI_TOOL_RAISES.name:
                with capture_run_messages() as messages:
                    try:
                        agent.run_sync(turn.user, message_history=history)
                    except RuntimeError as exc:  # the messages up to it, and what it raised
                        record.append(
                            {"messages": to_jsonable_python(messages), "raised": f"{type(exc).__name__}: {exc}"}
                        )
                continue
            result = agent.run_sync(turn.user, message_history=history)
            record.append(json.loads(result.new_messages_json()))
            history = result.all_messages()
        return record

    return run


# --- OpenAI Agents SDK ----------------------------------------------------------------------------------------------


def _openai_agents(instrumentation: str) -> Runner:
    def run(scenario: Scenario, script: Script, provider: TracerProvider) -> Any:
        from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_trace_processors
        from openai import AsyncOpenAI

        set_trace_processors([])  # no export to OpenAI's tracing backend: the instrumentation's processor only
        if instrumentation == "openinference":
            from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
        else:
            from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
        record = []
        with ChatCompletionsServer(script) as server:
            client = AsyncOpenAI(base_url=server.base_url, api_key="not-a-key")
            agent = Agent(
                name="weather_agent",
                instructions=INSTRUCTIONS,
                model=OpenAIResponsesModel(MODEL, client),  # the SDK's default model class
                tools=[function_tool(tool) for tool in TOOLS.values()],
            )

            async def turns() -> None:
                history: list[Any] = []
                for turn in scenario.turns:
                    result = await Runner.run(agent, [*history, {"role": "user", "content": turn.user}])
                    record.append(
                        {
                            "input": turn.user,
                            "new_items": [item.to_input_item() for item in result.new_items],
                            "final_output": result.final_output,
                        }
                    )
                    history = result.to_input_list()

            asyncio.run(turns())
        OpenAIAgentsInstrumentor().uninstrument()
        return record

    return run


# --- LangGraph / LangChain ------------------------------------------------------------------------------------------


def _langgraph(instrumentation: str) -> Runner:
    def run(scenario: Scenario, script: Script, provider: TracerProvider) -> Any:
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, messages_to_dict
        from langchain_core.outputs import ChatGeneration, ChatResult
        from langchain_core.tools import tool as as_tool
        from langgraph.prebuilt import ToolNode, create_react_agent

        if instrumentation == "openinference":
            from openinference.instrumentation.langchain import LangChainInstrumentor
        else:
            from opentelemetry.instrumentation.langchain import LangchainInstrumentor as LangChainInstrumentor

        class ScriptedChatModel(BaseChatModel):
            @property
            def _llm_type(self) -> str:
                return "scripted"

            def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
                return self

            def _generate(self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any) -> ChatResult:
                step = script.next()
                if isinstance(step, str):
                    message = AIMessage(content=step)
                else:
                    calls = [{"name": n, "args": a, "id": i, "type": "tool_call"} for n, a, i in step]
                    message = AIMessage(content="", tool_calls=calls)
                return ChatResult(generations=[ChatGeneration(message=message)])

        LangChainInstrumentor().instrument(tracer_provider=provider)
        tools = ToolNode([as_tool(tool) for tool in TOOLS.values()], handle_tool_errors=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_react_agent's move to langchain.agents
            graph = create_react_agent(ScriptedChatModel(), tools, prompt=INSTRUCTIONS, name="weather_agent")
        messages: list[BaseMessage] = []
        record = []
        for turn in scenario.turns:
            before = len(messages)
            messages = graph.invoke({"messages": [*messages, HumanMessage(turn.user)]})["messages"]
            record.append(messages_to_dict(messages[before:]))
        LangChainInstrumentor().uninstrument()
        return record

    return run


# --- smolagents -----------------------------------------------------------------------------------------------------


SMOLAGENTS_STREAMED = Scenario(
    "streamed",
    [Turn("What's the weather in Paris?", [[("get_weather", {"city": "Paris"})], "Paris is cloudy at 18 °C."])],
)
"""A smolagents run with ``stream=True``: the agent span's output is every streamed step's repr, not the answer."""


def _smolagents(scenario: Scenario, script: Script, provider: TracerProvider) -> Any:
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import ChatMessage, Model, ToolCallingAgent, tool
    from smolagents.models import ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole

    class ScriptedModel(Model):
        def generate(self, messages: Any, stop_sequences: Any = None, **kwargs: Any) -> ChatMessage:
            step = script.next()
            if isinstance(step, str):  # a ToolCallingAgent answers by calling final_answer
                step = [("final_answer", {"answer": step}, f"call_final_{script.position}")]
            calls = [
                ChatMessageToolCall(
                    id=call_id, type="function", function=ChatMessageToolCallFunction(name=name, arguments=args)
                )
                for name, args, call_id in step
            ]
            return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=calls)

    SmolagentsInstrumentor().instrument(tracer_provider=provider)

    @tool
    def get_weather(city: str) -> dict:  # type: ignore[type-arg]
        """The current weather in a city.

        Args:
            city: The city.
        """
        return TOOLS["get_weather"](city)  # type: ignore[no-any-return]

    @tool
    def get_time(city: str) -> str:
        """The local time in a city, as HH:MM.

        Args:
            city: The city.
        """
        return TOOLS["get_time"](city)  # type: ignore[no-any-return]

    @tool
    def get_forecast(city: str, days: int) -> dict:  # type: ignore[type-arg]
        """The weather forecast for a city over the next days.

        Args:
            city: The city.
            days: How many days ahead.
        """
        return TOOLS["get_forecast"](city, days)  # type: ignore[no-any-return]

    agent = ToolCallingAgent(
        tools=[get_weather, get_time, get_forecast],
        model=ScriptedModel(model_id=MODEL),
        name="weather_agent",
        instructions=INSTRUCTIONS,
        max_steps=6,
        verbosity_level=0,
    )
    record = []
    for index, turn in enumerate(scenario.turns):
        before = len(agent.memory.steps) if index else 0
        if scenario.name == SMOLAGENTS_STREAMED.name:
            result = list(agent.run(turn.user, reset=index == 0, stream=True))[-1].output  # the FinalAnswerStep's
        else:
            result = agent.run(turn.user, reset=index == 0)
        # The steps as smolagents writes them, less the model inputs (the whole history again on every step).
        steps = [
            {k: v for k, v in step.items() if k != "model_input_messages"}
            for step in agent.memory.get_full_steps()[before:]
        ]
        record.append({"task": turn.user, "steps": steps, "output": result})
    SmolagentsInstrumentor().uninstrument()
    return record


# --- the google-genai client under opentelemetry-instrumentation-google-genai (GenAI semantic conventions) ------


def _google_genai(scenario: Scenario, script: Script, provider: TracerProvider) -> Any:
    from google import genai
    from google.genai import types
    from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor

    GoogleGenAiSdkInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("weather-app")
    record = []
    with ChatCompletionsServer(script) as server:
        client = genai.Client(api_key="not-a-key", http_options=types.HttpOptions(base_url=server.root))
        # The SDK's automatic function calling runs the tools; a tool's exception goes back as {"error": ...}.
        config = types.GenerateContentConfig(system_instruction=INSTRUCTIONS, tools=list(TOOLS.values()))
        chat = client.chats.create(model=MODEL, config=config)
        for turn in scenario.turns:
            before = len(chat.get_history())
            # The application's own span around one user turn; the model calls are the instrumentation's.
            with tracer.start_as_current_span("weather turn"):
                chat.send_message(turn.user)
            record.append([c.model_dump(mode="json", exclude_none=True) for c in chat.get_history()[before:]])
    GoogleGenAiSdkInstrumentor().uninstrument()
    return record


# --- the registry -------------------------------------------------------------------------------------------------


PRODUCERS: dict[str, tuple[Runner, str, tuple[str, ...], dict[str, str]]] = {
    # name: (runner, convention it is rebuilt by, packages whose versions are written, environment)
    "pydantic_ai_v5": (_pydantic_ai(5), "genai", ("pydantic-ai-slim",), {}),
    "pydantic_ai_v6": (_pydantic_ai(6), "genai", ("pydantic-ai-slim",), {}),
    "openai_agents_openinference": (
        _openai_agents("openinference"),
        "openinference",
        ("openai-agents", "openinference-instrumentation-openai-agents", "openai"),
        {},
    ),
    "openai_agents_openllmetry": (
        _openai_agents("openllmetry"),
        "genai",
        ("openai-agents", "opentelemetry-instrumentation-openai-agents", "openai"),
        {"TRACELOOP_TRACE_CONTENT": "true"},
    ),
    "langgraph_openinference": (
        _langgraph("openinference"),
        "openinference",
        ("langgraph", "langchain-core", "openinference-instrumentation-langchain"),
        {},
    ),
    "langgraph_openllmetry": (
        _langgraph("openllmetry"),
        "genai",
        ("langgraph", "langchain-core", "opentelemetry-instrumentation-langchain"),
        {"TRACELOOP_TRACE_CONTENT": "true"},
    ),
    "smolagents_openinference": (
        _smolagents,
        "openinference",
        ("smolagents", "openinference-instrumentation-smolagents"),
        {},
    ),
    "google_genai": (
        _google_genai,
        "genai",
        ("google-genai", "opentelemetry-instrumentation-google-genai"),
        {
            "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
        },
    ),
    "llama_index_openinference": (
        _producers_agents.llama_index,
        "openinference",
        ("llama-index-core", "llama-index-llms-openai", "openinference-instrumentation-llama-index"),
        {},
    ),
    "strands": (_producers_agents.strands, "genai", ("strands-agents",), {}),
    "strands_latest": (
        _producers_agents.strands,
        "genai",
        ("strands-agents",),
        {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"},
    ),
    "strands_span_attributes": (
        _producers_agents.strands,
        "genai",
        ("strands-agents",),
        {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental,gen_ai_span_attributes_only"},
    ),
    "crewai_openinference": (
        _producers_agents.crewai(event_listener=False),
        "openinference",
        ("crewai", "openinference-instrumentation-crewai"),
        {"CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_TRACING_ENABLED": "false", "OTEL_SDK_DISABLED": "false"},
    ),
    "crewai_openinference_events": (
        _producers_agents.crewai(event_listener=True),
        "openinference",
        ("crewai", "openinference-instrumentation-crewai"),
        {"CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_TRACING_ENABLED": "false", "OTEL_SDK_DISABLED": "false"},
    ),
    "autogen": (_producers_agents.autogen, "genai", ("autogen-agentchat", "autogen-core", "autogen-ext"), {}),
    "adk_js": (_producers_agents.adk_js, "adk", (), {}),
    "openai_agents_js": (_producers_agents.openai_agents_js, "openinference", (), {}),
    "agent_framework": (
        _producers_agents.agent_framework,
        "genai",
        ("agent-framework-core", "agent-framework-openai"),
        {"ENABLE_SENSITIVE_DATA": "true"},
    ),
    "agent_framework_no_content": (
        _producers_agents.agent_framework,
        "genai",
        ("agent-framework-core", "agent-framework-openai"),
        {"ENABLE_SENSITIVE_DATA": "false"},  # the framework's default
    ),
}
OWN_VIRTUALENV = {
    "llama_index_openinference": "requirements-llamaindex.txt",
    "crewai_openinference": "requirements-crewai.txt",
    "crewai_openinference_events": "requirements-crewai.txt",
    "strands": "requirements-strands.txt",
    "strands_latest": "requirements-strands.txt",
    "strands_span_attributes": "requirements-strands.txt",
    "autogen": "requirements-autogen.txt",
    "agent_framework": "requirements-agent-framework.txt",
    "agent_framework_no_content": "requirements-agent-framework.txt",
    "adk_js": "node/package.json",
    "openai_agents_js": "node_openai_agents/package.json",
}
"""The producers that run in an environment of their own (the requirements file beside this one; ADK for JavaScript:
the npm package in ``node/``; the OpenAI Agents SDK for JavaScript: the one in ``node_openai_agents/``), recorded
on ``FIVE_SCENARIOS``; the others run in ``requirements.txt``'s and were recorded on ``SCENARIOS``."""


EXTRA_SCENARIOS = {
    "adk_js": [SCENARIOS[0], _producers_agents.ADK_JS_TRANSFER, _producers_agents.ADK_JS_AGENT_TOOL],
    "openai_agents_js": [SCENARIOS[0]],
    "crewai_openinference": [
        _producers_agents.CREWAI_CREW,
        _producers_agents.CREWAI_HIERARCHICAL,
        _producers_agents.CREWAI_HIDDEN,
        _producers_agents.CREWAI_NO_INPUTS,
    ],
    "crewai_openinference_events": [
        _producers_agents.CREWAI_CREW,
        _producers_agents.CREWAI_HIERARCHICAL,
        _producers_agents.CREWAI_HIDDEN,
        _producers_agents.CREWAI_NO_INPUTS,
    ],
    "pydantic_ai_v5": [PYDANTIC_AI_TOOL_RAISES],
    "pydantic_ai_v6": [PYDANTIC_AI_TOOL_RAISES],
    "smolagents_openinference": [SMOLAGENTS_STREAMED],
    "llama_index_openinference": [_producers_agents.LLAMA_INDEX_STRUCTURED],
    "strands": [_producers_agents.STRANDS_STRUCTURED],
    "strands_latest": [_producers_agents.STRANDS_STRUCTURED],
    "strands_span_attributes": [_producers_agents.STRANDS_STRUCTURED],
    "agent_framework": [
        SCENARIOS[0],
        _producers_agents.AGENT_FRAMEWORK_AGENT_TOOL,
        _producers_agents.AGENT_FRAMEWORK_WORKFLOW,
    ],
}
"""Scenarios of one producer beyond its set, after it: parallel calls (ADK for JavaScript's merged tool span; Agent
Framework's tool spans side by side), ADK for JavaScript's transfer to a sub-agent, an agent used as a tool (ADK's
``AgentTool``, Agent Framework's ``as_tool``), Agent Framework's two-agent workflow and CrewAI's two-agent crews
(sequential, and hierarchical: a manager delegating), CrewAI's crew with OpenInference's inputs and outputs hidden,
and its crew kicked off without inputs."""


def record(name: str) -> None:
    """Runs every scenario under producer ``name`` and writes its files."""
    runner, convention, packages, environment = PRODUCERS[name]
    os.environ.update(environment)
    provider, exporter = new_provider(name)
    trace.set_tracer_provider(provider)
    installed = {**versions(*packages), **versions("opentelemetry-sdk")}
    for scenario in [*(FIVE_SCENARIOS if name in OWN_VIRTUALENV else SCENARIOS), *EXTRA_SCENARIOS.get(name, [])]:
        exporter.clear()
        script = Script(scenario)
        turns = runner(scenario, script, provider)
        if script.position != len(script.steps):
            raise RuntimeError(f"{name}/{scenario.name}: the script was not played to its end ({script.position})")
        if isinstance(turns, ForeignRun):  # spans and versions of another language's process
            write_run(name, scenario, turns.otlp, turns.turns, turns.versions, convention)
            continue
        provider.force_flush()
        write_run(name, scenario, list(exporter.get_finished_spans()), turns, installed, convention)
