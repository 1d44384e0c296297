"""OpenInference span kinds, and LangChain content carried in ADOT (CloudWatch) event bodies.

ADOT exports of LangChain carry no span kinds: every span is named after the instrumentation scope, has no parent, and
holds its content in an event body ``{"input": {"messages"}, "output": {"messages"}}``. :func:`span_kind` then infers
the kind from that body (an ``LLMResult`` output: LLM; a ``ToolMessage`` output: TOOL; graph state in and out, without
``remaining_steps``: the graph itself, an AGENT), and :func:`body_model_call` reads a model call's messages from it.
"""

from __future__ import annotations

from typing import Any

from otel_eval import semconv
from otel_eval.reconstruct import _langchain as lc
from otel_eval.reconstruct._draft import ModelCall, text_content
from otel_eval.reconstruct._values import as_text, parse_json
from otel_eval.traces.span import Span

AGENT = "AGENT"
CHAIN = "CHAIN"
LLM = "LLM"
TOOL = "TOOL"


def span_kind(span: Span) -> str:
    """The span's OpenInference kind, inferred from an ADOT event body when the attribute is missing."""
    kind = span.attributes.get(semconv.OPENINFERENCE_SPAN_KIND)
    if isinstance(kind, str) and kind:
        return kind.upper()
    inputs, outputs = body_messages(span)
    if not inputs and not outputs:
        return ""
    out = lc.parsed(outputs[-1].get("content")) if outputs else None
    if isinstance(out, dict) and "generations" in out:
        return LLM
    if lc.tool_message(out) is not None:
        return TOOL
    first_in = lc.parsed(inputs[0].get("content")) if inputs else None
    graph_in = isinstance(first_in, dict) and "messages" in first_in and "remaining_steps" not in first_in
    if graph_in and isinstance(out, dict) and "messages" in out:
        return AGENT
    return CHAIN


def body_messages(span: Span) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(input messages, output messages)`` of the span's event bodies (ADOT log-record content)."""
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for event in span.events:
        body = event.body if event.body is not None else event.attributes.get("body")
        body, _ = parse_json(body)
        if not isinstance(body, dict):
            continue
        for key, sink in (("input", inputs), ("output", outputs)):
            section = body.get(key)
            messages = section.get("messages") if isinstance(section, dict) else None
            if isinstance(messages, list):
                sink.extend(m for m in messages if isinstance(m, dict))
    return inputs, outputs


def body_model_call(span: Span, call: ModelCall, warnings: list[str]) -> None:
    """Adds the model call's input and output messages from the span's event bodies to ``call``."""
    inputs, outputs = body_messages(span)
    where = f"span {span.span_id} event body"
    for message in inputs:
        content = lc.parsed(message.get("content"))
        batch = lc.messages_of(content)
        if batch:
            call.inputs.extend(
                c for c in (text_content(lc.message_text(m), lc.message_role(m)) for m in batch) if c is not None
            )
            continue
        text = as_text(content)
        role = lc.message_role(message)
        content_obj = text_content(text, role)
        if content_obj is not None:
            call.inputs.append(content_obj)
    for message in outputs:
        content = lc.llm_result_content(lc.parsed(message.get("content")), warnings, where)
        if content is None:
            content = text_content(as_text(message.get("content")), "model")
        if content is not None:
            call.outputs.append(content)
