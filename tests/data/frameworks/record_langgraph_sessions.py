"""Records ``langgraph_openllmetry/sessions.otlp.json.gz``: a LangGraph graph under OpenLLMetry's LangChain
instrumentation (versions of ``requirements.txt``), a scripted chat model, three conversations that name their session
the ways LangGraph users do: a checkpointer's ``thread_id`` (``thread-a``, two turns), and ``session_id`` in the run's
metadata with the history passed back (``chat-1``, two turns; ``chat-2``, one). Run it in the generator's virtualenv::

    .venv-frameworks/bin/python tests/data/frameworks/record_langgraph_sessions.py
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.instrumentation.langchain import LangchainInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ANSWERS = ("Sunny in Paris.", "It is 18 C there.", "Sunny in Rome, 25 C.", "You are welcome!", "Hello!")


def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    LangchainInstrumentor().instrument(tracer_provider=provider)
    model = GenericFakeChatModel(messages=iter([AIMessage(text) for text in ANSWERS]))

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", END)
    threaded = graph.compile(checkpointer=InMemorySaver())
    for text in ("Weather in Paris?", "How warm?"):
        threaded.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": "thread-a"}})
    plain = graph.compile()
    history: list[Any] = []
    for text in ("Weather in Rome?", "Thanks!"):
        history = plain.invoke({"messages": [*history, HumanMessage(text)]}, {"metadata": {"session_id": "chat-1"}})[
            "messages"
        ]
    plain.invoke({"messages": [HumanMessage("Hi")]}, {"metadata": {"session_id": "chat-2"}})
    path = Path(__file__).parent / "langgraph_openllmetry" / "sessions.otlp.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as file:
        json.dump(MessageToDict(encode_spans(exporter.get_finished_spans())), file)


if __name__ == "__main__":
    main()
