"""A LangGraph agent with the EvaluationSpanProcessor attached, traced by OpenInference's LangChain instrumentation.

    python examples/langgraph_agent.py                 # evaluated in this process: one line per score on stdout
    OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS=localhost:9092 \\
      python examples/langgraph_agent.py --rounds 4    # the invocations go to Kafka, for `otel-eval worker`

``pip install 'otel-eval[langgraph]'``. Everything is real: a LangGraph ``StateGraph`` (a model node, a ``ToolNode``
with two LangChain tools, ``tools_condition`` between them), LangChain's ``ChatOpenAI`` calling the OpenAI Chat
Completions API over HTTP, ``openinference-instrumentation-langchain`` making the spans, otel-eval rebuilding them.
Only the model is scripted: ``ChatOpenAI`` talks to a loopback server (``scripted_openai.py``) that answers each
question with a fixed tool call, then a fixed answer, so no key and no network are needed. Three questions, one
invocation (one trace) each, as in ``adk_agent.py``:

- Paris: the weather tool, an answer it supports (every metric passes);
- Tokyo: the tool says rain, the answer says dry and sunny: the hallucination (``hallucinations_v1`` fails with the
  scripted judge of ``otel-eval judge-server``, or with a real one);
- London's time: the weather tool is called instead of the clock (``tool_trajectory_avg_score`` fails against the
  golden eval set ``langgraph_golden.test.json``, which says what the agent should have called).

To run it on OpenAI, pass ``--model gpt-4o-mini --model-base-url https://api.openai.com/v1`` and set
``OPENAI_API_KEY``. With ``OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS`` set the processor only rebuilds the invocations and
sends them to ``otel_eval.requests`` (the workers score them, with their own criteria and eval set); without it
the scores are computed here with ``OTEL_EVAL_CRITERIA`` (default: tool trajectory and response match).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.trace import TracerProvider

try:
    from scripted_openai import ScriptedChatCompletions  # run as a script: examples/ is on the path
except ImportError:  # imported as a module of the repository (the tests)
    from examples.scripted_openai import ScriptedChatCompletions  # type: ignore[no-redef]

from otel_eval import EvaluationSpanProcessor
from otel_eval import environment_variables as env
from otel_eval.emit.console import ConsoleRecordSink

GOLDEN_FILE = Path(__file__).with_name("langgraph_golden.test.json")
WEATHER = {"Paris": ("sunny", 21), "Tokyo": ("raining", 14), "London": ("cloudy", 12)}
INSTRUCTIONS = "Answer weather and time questions with get_weather and get_time."


@tool
def get_weather(city: str) -> dict[str, Any]:
    """Returns the current weather of a city."""
    sky, temperature = WEATHER.get(city, ("unknown", 0))
    return {"city": city, "sky": sky, "temperature_c": temperature}


@tool
def get_time(city: str) -> dict[str, Any]:
    """Returns the current local time of a city."""
    return {"city": city, "time": "14:05"}


# question -> ((the tool call the scripted model makes), its final answer)
SCRIPT = {
    "What's the weather in Paris?": (("get_weather", {"city": "Paris"}), "It is sunny and 21°C in Paris."),
    # The tool says rain; the answer invents dry weather. The scripted judge finds exactly this sentence unsupported.
    "Is it raining in Tokyo right now?": (
        ("get_weather", {"city": "Tokyo"}),
        "No, it is completely dry in Tokyo: clear skies and 30°C, perfect beach weather.",
    ),
    # The wrong tool: the weather instead of the clock.
    "What time is it in London?": (("get_weather", {"city": "London"}), "It is cloudy in London."),
}
DEFAULT_CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}


def build_graph(model: ChatOpenAI) -> Any:
    """The agent: the model node calls tools until it answers; the graph is named after the agent."""
    tools = [get_weather, get_time]
    bound = model.bind_tools(tools)

    def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [bound.invoke([("system", INSTRUCTIONS), *state["messages"]])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(name="weather_agent")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=1, help="ask the three questions this many times")
    parser.add_argument("--model", default="scripted-gpt", help="the OpenAI model (default: the scripted one)")
    parser.add_argument("--model-base-url", help="the OpenAI API's base URL (default: the scripted model's)")
    args = parser.parse_args()
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")

    kafka = bool(os.environ.get(env.OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS, "").strip())
    # --8<-- [start:attach]
    provider = TracerProvider()
    if kafka:  # the workers evaluate, with their own criteria and eval set
        processor = EvaluationSpanProcessor.from_env(tracer_provider=provider)
    else:
        criteria: dict[str, Any] = {} if os.environ.get(env.OTEL_EVAL_CRITERIA) else {"criteria": DEFAULT_CRITERIA}
        console = env.flag_setting(os.environ, env.OTEL_EVAL_CONSOLE, False)  # set: from_env prints them already
        processor = EvaluationSpanProcessor.from_env(
            tracer_provider=provider,
            eval_set=str(GOLDEN_FILE),
            sinks=[] if console else [ConsoleRecordSink()],
            **criteria,
        )
    provider.add_span_processor(processor)
    LangChainInstrumentor().instrument(tracer_provider=provider)  # LangChain/LangGraph spans, OpenInference's
    # --8<-- [end:attach]

    with ExitStack() as stack:
        base_url = args.model_base_url
        if base_url is None:
            base_url = stack.enter_context(ScriptedChatCompletions(SCRIPT, model=args.model)).base_url
        api_key = os.environ.get("OPENAI_API_KEY") if args.model_base_url else "loopback-no-key"
        graph = build_graph(ChatOpenAI(model=args.model, base_url=base_url, api_key=api_key, temperature=0))
        for _ in range(args.rounds):
            for question in SCRIPT:  # one graph run, one trace, per question
                answer = graph.invoke({"messages": [HumanMessage(question)]})["messages"][-1]
                print(f"agent: {answer.content}\n", end="", flush=True)  # one write: see adk_agent.py
        # The invocations are rebuilt, then evaluated here or handed to the Kafka producer; shutdown delivers them.
        processor.force_flush(30_000)
        provider.shutdown()
    LangChainInstrumentor().uninstrument()
    return 0


if __name__ == "__main__":
    sys.exit(main())
