"""One agent turn per convention, written with the real OTel SDK on a tracer: its root (agent or workflow span) carries
the given attributes (a session id, say) and a model call below it answers "Hello!" to "Hi"."""

from __future__ import annotations

import json
from typing import Any


def openinference_turn(tracer: Any, sessions: dict[str, str]) -> None:
    root = {"openinference.span.kind": "AGENT", "agent.name": "helper", "input.value": "Hi", **sessions}
    with tracer.start_as_current_span("helper", attributes=root):
        llm = {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o-mini",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Hi",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "Hello!",
        }
        with tracer.start_as_current_span("ChatOpenAI", attributes=llm):
            pass


def openllmetry_turn(tracer: Any, sessions: dict[str, str]) -> None:
    workflow = {
        "traceloop.span.kind": "workflow",
        "traceloop.workflow.name": "support",
        "traceloop.entity.input": json.dumps({"inputs": {"question": "Hi"}}),
        "traceloop.entity.output": json.dumps({"outputs": "Hello!"}),
        **sessions,
    }
    with tracer.start_as_current_span("support.workflow", attributes=workflow):
        chat = {
            "llm.request.type": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "Hi",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "Hello!",
        }
        with tracer.start_as_current_span("openai.chat", attributes=chat):
            pass


def genai_turn(tracer: Any, sessions: dict[str, str]) -> None:
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper", **sessions}
    with tracer.start_as_current_span("invoke_agent helper", attributes=agent):
        chat = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "Hello!"}], "finish_reason": "stop"}]
            ),
        }
        with tracer.start_as_current_span("chat gpt-4o-mini", attributes=chat):
            pass


TURNS = {"openinference": openinference_turn, "openllmetry": openllmetry_turn, "genai": genai_turn}
