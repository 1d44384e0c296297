"""Records ``langgraph_openinference/command_tool.otlp.json.gz`` and ``langgraph_openllmetry/command_tool.otlp.json.gz``:
a LangGraph graph (versions of ``requirements.txt``), a scripted chat model, one turn whose tool answers with a
``Command(update={"messages": [ToolMessage(...)]})``, as tools that update the graph's state do, under each
instrumentation in a process of its own. Run it in the generator's virtualenv::

    .venv-frameworks/bin/python tests/data/frameworks/record_langgraph_command.py
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

from google.protobuf.json_format import MessageToDict
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ANSWERS = [
    AIMessage("", tool_calls=[{"name": "get_time", "args": {"city": "Paris"}, "id": "call_1", "type": "tool_call"}]),
    AIMessage("It is 14:05 in Paris."),
]


@tool
def get_time(city: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """The local time in a city, as HH:MM."""
    return Command(update={"messages": [ToolMessage({"Paris": "14:05"}[city], tool_call_id=tool_call_id)]})


class ScriptedChatModel(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=ANSWERS.pop(0))])


def record(producer: str) -> None:
    if producer == "langgraph_openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor
    else:
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor as LangChainInstrumentor
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    LangChainInstrumentor().instrument(tracer_provider=provider)
    model = ScriptedChatModel().bind_tools([get_time])

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke([("system", "Tell the time."), *state["messages"]])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([get_time]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    app = graph.compile(name="clock_agent")
    assert app.invoke({"messages": [HumanMessage("What time is it in Paris?")]})["messages"][-1].content == (
        "It is 14:05 in Paris."
    )
    path = Path(__file__).parent / producer / "command_tool.otlp.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as file:
        json.dump(MessageToDict(encode_spans(exporter.get_finished_spans())), file)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        record(sys.argv[1])
    else:
        for name in ("langgraph_openinference", "langgraph_openllmetry"):
            subprocess.run([sys.executable, __file__, name], check=True)
