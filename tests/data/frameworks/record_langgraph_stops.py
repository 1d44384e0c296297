"""Records two LangGraph runs that stop before the model answers, under OpenInference's LangChain instrumentation
(versions of ``requirements.txt``), with a scripted chat model:

- ``langgraph_openinference/interrupt.otlp.json.gz``: one turn whose tool asks a human first (``interrupt()``): the
  first run stops at the interrupt, the second, ``Command(resume="yes")`` on the same ``thread_id``, runs the tool
  again, whose call the model made in the first run's trace;
- ``langgraph_openinference/tool_raises.otlp.json.gz``: a tool that raises, which the ``ToolNode``'s default error
  handling lets through: the run raises it.

Run it in the generator's virtualenv::

    .venv-frameworks/bin/python tests/data/frameworks/record_langgraph_stops.py
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

BOOKING_ERROR = "booking service down"
ANSWERS = [
    AIMessage("", tool_calls=[{"name": "book_table", "args": {"city": "Paris"}, "id": "call_1", "type": "tool_call"}]),
    AIMessage("Your table in Paris is booked."),
]


@tool
def reserve_table(city: str) -> str:
    """Reserve a table in a city."""
    raise RuntimeError(BOOKING_ERROR)


@tool
def book_table(city: str) -> str:
    """Book a table in a city, once a human agrees."""
    return f"booked in {city}" if interrupt({"question": f"Book in {city}?"}) == "yes" else "not booked"


class ScriptedChatModel(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=ANSWERS.pop(0))])


def record(name: str, run: Callable[[TracerProvider], None]) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    LangChainInstrumentor().instrument(tracer_provider=provider)
    run(provider)
    LangChainInstrumentor().uninstrument()
    path = Path(__file__).parent / "langgraph_openinference" / f"{name}.otlp.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as file:
        json.dump(MessageToDict(encode_spans(exporter.get_finished_spans())), file)


def graph_of(tool_: Any) -> Any:
    model = ScriptedChatModel().bind_tools([tool_])

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke([("system", "Book tables."), *state["messages"]])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([tool_]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver(), name="booking_agent")


def interrupted(provider: TracerProvider) -> None:
    app = graph_of(book_table)
    config: Any = {"configurable": {"thread_id": "thread-hitl"}}
    assert "__interrupt__" in app.invoke({"messages": [HumanMessage("Book a table in Paris.")]}, config)
    assert app.invoke(Command(resume="yes"), config)["messages"][-1].content == "Your table in Paris is booked."


def raising(provider: TracerProvider) -> None:
    ANSWERS[:] = [
        AIMessage(
            "", tool_calls=[{"name": "reserve_table", "args": {"city": "Rome"}, "id": "call_1", "type": "tool_call"}]
        )
    ]
    try:
        graph_of(reserve_table).invoke(
            {"messages": [HumanMessage("Reserve a table in Rome.")]}, {"configurable": {"thread_id": "thread-raise"}}
        )
    except RuntimeError as exc:
        assert str(exc) == BOOKING_ERROR
    else:
        raise AssertionError("the tool's error did not reach the caller")


def main() -> None:
    record("interrupt", interrupted)
    record("tool_raises", raising)


if __name__ == "__main__":
    main()
