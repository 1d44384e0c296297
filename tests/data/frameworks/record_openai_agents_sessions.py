"""Records ``openai_agents_openinference/sessions.otlp.json.gz``: the OpenAI Agents SDK under
``openinference-instrumentation-openai-agents`` (versions of ``requirements.txt``), the SDK's default Responses model
answered by the scripted loopback server, two conversations of two turns, each turn a trace of its own in
``trace("Support chat", group_id=...)``, the SDK's way to name a conversation: ``group-a`` alone, and ``group-b`` with
OpenInference's ``using_session("chat-b")`` around its turns. The group id reaches no span; ``using_session`` writes
``session.id`` on every span. Run it in the generator's virtualenv::

    .venv-frameworks/bin/python tests/data/frameworks/record_openai_agents_sessions.py
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
from pathlib import Path
from typing import Any

from _common import INSTRUCTIONS, MODEL, ChatCompletionsServer, Scenario, Script, Turn
from agents import Agent, OpenAIResponsesModel, Runner, set_trace_processors, trace
from google.protobuf.json_format import MessageToDict
from openai import AsyncOpenAI
from openinference.instrumentation import using_session
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

CONVERSATIONS = (
    ("group-a", None, ("Weather in Paris?", "Sunny in Paris."), ("And Rome?", "Clear in Rome.")),
    ("group-b", "chat-b", ("Hi", "Hello!"), ("Thanks!", "You are welcome!")),
)


def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    set_trace_processors([])  # no export to OpenAI's tracing backend: the instrumentation's processor only
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    turns = [Turn(user, [answer]) for _, _, *pairs in CONVERSATIONS for user, answer in pairs]
    with ChatCompletionsServer(Script(Scenario("sessions", turns))) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-a-key")
        agent = Agent(name="support_agent", instructions=INSTRUCTIONS, model=OpenAIResponsesModel(MODEL, client))

        async def conversations() -> None:
            for group_id, session_id, *pairs in CONVERSATIONS:
                history: list[Any] = []
                for user, _ in pairs:
                    session = using_session(session_id) if session_id else contextlib.nullcontext()
                    with session, trace("Support chat", group_id=group_id):
                        result = await Runner.run(agent, [*history, {"role": "user", "content": user}])
                    history = result.to_input_list()

        asyncio.run(conversations())
    OpenAIAgentsInstrumentor().uninstrument()
    path = Path(__file__).parent / "openai_agents_openinference" / "sessions.otlp.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as file:
        json.dump(MessageToDict(encode_spans(exporter.get_finished_spans())), file)


if __name__ == "__main__":
    main()
