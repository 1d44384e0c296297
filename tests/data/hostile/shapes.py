"""Hostile span-tree shapes in every trace convention, and the five forms the readers take them in.

A shape is a list of :class:`RawSpan` (ids, parent link, name, attributes, times), built from the span vocabulary of one
convention (:data:`VOCABULARIES`: how that convention writes an agent, a model call, a tool and a bystander span) so
that the convention really walks the shape. Every hostile document also holds one intact invocation in a trace of its
own (:func:`good_invocation`), which must still be rebuilt.

Shapes (:data:`SHAPES`): a span that is its own parent, parent cycles of length 2 and ``size``, duplicate span ids,
spans whose parent is missing, one chain ``size`` deep, ``size`` siblings under one root, attributes of ``size`` bytes,
attributes of the wrong types, and JSON attributes nested ``size`` levels deep. Encoders: :func:`otlp_json`,
:func:`otlp_proto`, :func:`jaeger_json`, :func:`span_dicts`, :func:`readable_spans`, and :func:`internal_spans` (no
reader).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

BASE_NS = 1_700_000_000_000_000_000
"""Time zero of every shape; span times are whole microseconds after it (Jaeger keeps microseconds only)."""
GOOD_TRACE = "a" * 32
HOSTILE_TRACE = "b" * 32
SESSION = "hostile-session"
USER_TEXT = "What is the weather in Paris?"
FINAL_TEXT = "It is sunny in Paris."

CONVENTIONS = ("adk", "adk_v2", "genai", "openinference", "openllmetry")
KINDS = ("agent", "model", "tool", "other")


@dataclass
class RawSpan:
    """One span as the generator writes it (ids are hex strings; ``parent`` may name any id, or none)."""

    span_id: str
    parent: str | None
    name: str
    start_us: int
    """Microseconds after :data:`BASE_NS`."""
    end_us: int
    attributes: dict[str, Any] = field(default_factory=dict)
    trace_id: str = HOSTILE_TRACE
    scope: str = "hostile-generator"
    error: bool = False


def span_id(number: int, salt: int = 0) -> str:
    """A valid, distinct 16-digit hex span id."""
    return f"{salt:04x}{number + 1:012x}"


# --- the vocabulary of each convention ------------------------------------------------------------------------------


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def _tool_call_messages(name: str, call_id: str, args: dict[str, Any]) -> str:
    part = {"type": "tool_call", "id": call_id, "name": name, "arguments": args}
    return json.dumps([{"role": "assistant", "parts": [part]}])


@dataclass(frozen=True)
class Vocabulary:
    """How one convention writes each kind of span; ``model`` takes ``(text, call)`` where ``call`` is a tool name
    the model asks for (or None), ``tool`` takes ``(name, call_id, result)``."""

    root: Callable[[], tuple[str, dict[str, Any], str]]
    agent: Callable[[], tuple[str, dict[str, Any]]]
    model: Callable[[str | None, str | None, str], tuple[str, dict[str, Any]]]
    tool: Callable[[str, str, Any], tuple[str, dict[str, Any]]]
    other: Callable[[], tuple[str, dict[str, Any]]] = lambda: ("http.request", {"http.method": "GET"})


def _adk_model(text: str | None, call: str | None, call_id: str) -> tuple[str, dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    if call:
        parts.append({"function_call": {"name": call, "args": {"city": "Paris"}, "id": call_id}})
    request = {"model": "m-1", "config": {}, "contents": [{"role": "user", "parts": [{"text": USER_TEXT}]}]}
    return "call_llm", {
        "gcp.vertex.agent.llm_request": json.dumps(request),
        "gcp.vertex.agent.llm_response": json.dumps({"content": {"role": "model", "parts": parts}}),
        "gcp.vertex.agent.invocation_id": "e-hostile",
        "gcp.vertex.agent.session_id": SESSION,
        "gen_ai.request.model": "m-1",
    }


def _adk_tool(name: str, call_id: str, result: Any) -> tuple[str, dict[str, Any]]:
    return f"execute_tool {name}", {
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gcp.vertex.agent.tool_call_args": json.dumps({"city": "Paris"}),
        "gcp.vertex.agent.tool_response": json.dumps(result),
    }


def _adk_v2_model(text: str | None, call: str | None, call_id: str) -> tuple[str, dict[str, Any]]:
    outputs = _tool_call_messages(call, call_id, {"city": "Paris"}) if call else _messages("assistant", text or "")
    return "generate_content m-1", {
        "gen_ai.operation.name": "generate_content",
        "gen_ai.request.model": "m-1",
        "gen_ai.agent.name": "weather_agent",
        "gcp.vertex.agent.invocation_id": "e-hostile",
        "gen_ai.conversation.id": SESSION,
        "gen_ai.input.messages": _messages("user", USER_TEXT),
        "gen_ai.output.messages": outputs,
    }


def _genai_tool(name: str, call_id: str, result: Any) -> tuple[str, dict[str, Any]]:
    return f"execute_tool {name}", {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.call.arguments": json.dumps({"city": "Paris"}),
        "gen_ai.tool.call.result": json.dumps(result),
    }


def _genai_model(text: str | None, call: str | None, call_id: str) -> tuple[str, dict[str, Any]]:
    _, attributes = _adk_v2_model(text, call, call_id)
    attributes["gen_ai.operation.name"] = "chat"
    del attributes["gcp.vertex.agent.invocation_id"]
    return "chat m-1", attributes


def _flat_model(
    name: str, attributes: dict[str, Any], text_key: str, id_key: str, call_prefix: str
) -> Callable[[str | None, str | None, str], tuple[str, dict[str, Any]]]:
    """A model-call writer for a convention with flattened message attributes (OpenInference, OpenLLMetry)."""

    def model(text: str | None, call: str | None, call_id: str) -> tuple[str, dict[str, Any]]:
        found = dict(attributes)
        if text:
            found[text_key] = text
        if call:
            found[id_key] = call_id
            found[f"{call_prefix}.name"] = call
            found[f"{call_prefix}.arguments"] = json.dumps({"city": "Paris"})
        return name, found

    return model


_oi_model = _flat_model(
    "ChatModel",
    {
        "openinference.span.kind": "LLM",
        "llm.model_name": "m-1",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": USER_TEXT,
        "llm.output_messages.0.message.role": "assistant",
    },
    "llm.output_messages.0.message.content",
    "llm.output_messages.0.message.tool_calls.0.tool_call.id",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function",
)
_ol_model = _flat_model(
    "openai.chat",
    {
        "llm.request.type": "chat",
        "gen_ai.request.model": "m-1",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": USER_TEXT,
        "gen_ai.completion.0.role": "assistant",
    },
    "gen_ai.completion.0.content",
    "gen_ai.completion.0.tool_calls.0.id",
    "gen_ai.completion.0.tool_calls.0",
)


def _oi_tool(name: str, call_id: str, result: Any) -> tuple[str, dict[str, Any]]:
    return name, {
        "openinference.span.kind": "TOOL",
        "tool.name": name,
        "tool_call.id": call_id,
        "input.value": json.dumps({"city": "Paris"}),
        "output.value": json.dumps(result),
    }


def _ol_tool(name: str, call_id: str, result: Any) -> tuple[str, dict[str, Any]]:
    return f"{name}.tool", {
        "traceloop.span.kind": "tool",
        "traceloop.entity.name": name,
        "gen_ai.tool.call.id": call_id,
        "traceloop.entity.input": json.dumps({"city": "Paris"}),
        "traceloop.entity.output": json.dumps(result),
    }


VOCABULARIES: dict[str, Vocabulary] = {
    "adk": Vocabulary(
        root=lambda: ("invocation", {}, "gcp.vertex.agent"),
        agent=lambda: ("invoke_agent weather_agent", {"gen_ai.agent.name": "weather_agent"}),
        model=_adk_model,
        tool=_adk_tool,
    ),
    "adk_v2": Vocabulary(
        root=lambda: (
            "invoke_workflow weather_agent",
            {"gen_ai.operation.name": "invoke_workflow"},
            "gcp.vertex.agent",
        ),
        agent=lambda: ("invoke_agent weather_agent", {"gen_ai.agent.name": "weather_agent"}),
        model=_adk_v2_model,
        tool=_genai_tool,
    ),
    "genai": Vocabulary(
        root=lambda: (
            "invoke_agent weather_agent",
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"},
            "hostile-genai",
        ),
        agent=lambda: ("invoke_agent helper", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"}),
        model=_genai_model,
        tool=_genai_tool,
    ),
    "openinference": Vocabulary(
        root=lambda: (
            "weather_agent",
            {"openinference.span.kind": "AGENT", "input.value": USER_TEXT, "output.value": FINAL_TEXT},
            "openinference.instrumentation.hostile",
        ),
        agent=lambda: ("helper", {"openinference.span.kind": "AGENT"}),
        model=_oi_model,
        tool=_oi_tool,
    ),
    "openllmetry": Vocabulary(
        root=lambda: (
            "weather.workflow",
            {
                "traceloop.span.kind": "workflow",
                "traceloop.entity.name": "weather",
                "traceloop.entity.input": USER_TEXT,
            },
            "hostile-openllmetry",
        ),
        agent=lambda: ("helper.agent", {"traceloop.span.kind": "agent", "traceloop.entity.name": "helper"}),
        model=_ol_model,
        tool=_ol_tool,
    ),
}
"""Convention name -> how it writes a root, an agent, a model call, a tool and a bystander span."""


def node(convention: str, kind: str, number: int) -> tuple[str, dict[str, Any]]:
    """Name and attributes of one span of ``kind`` (``agent``/``model``/``tool``/``other``) in ``convention``."""
    vocabulary = VOCABULARIES[convention]
    call_id = f"call-{number}"
    if kind == "agent":
        return vocabulary.agent()
    if kind == "model":
        return vocabulary.model(None, "get_weather", call_id) if number % 2 else vocabulary.model("thinking", None, "")
    if kind == "tool":
        return vocabulary.tool("get_weather", f"call-{number - 1}", {"sky": "sunny"})
    return vocabulary.other()


# --- the intact invocation ------------------------------------------------------------------------------------------


def good_invocation(convention: str, trace_id: str = GOOD_TRACE, salt: int = 0xA) -> list[RawSpan]:
    """One complete invocation: root > agent > (model asking for ``get_weather``, the tool, model answering)."""
    vocabulary = VOCABULARIES[convention]
    root_name, root_attributes, scope = vocabulary.root()
    ids = [span_id(i, salt) for i in range(5)]
    t = 0
    spans = [RawSpan(ids[0], None, root_name, t, t + 100, root_attributes, scope=scope)]
    agent_name, agent_attributes = vocabulary.agent()
    if convention == "genai":  # a nested invoke_agent would not be the root's own agent span
        agent_name, agent_attributes = vocabulary.other()
    spans.append(RawSpan(ids[1], ids[0], agent_name, t + 1, t + 99, agent_attributes, scope=scope))
    first = vocabulary.model(None, "get_weather", "call-good")
    tool = vocabulary.tool("get_weather", "call-good", {"sky": "sunny"})
    last = vocabulary.model(FINAL_TEXT, None, "")
    spans.append(RawSpan(ids[2], ids[1], first[0], t + 2, t + 10, first[1], scope=scope))
    spans.append(RawSpan(ids[3], ids[1], tool[0], t + 11, t + 20, tool[1], scope=scope))
    spans.append(RawSpan(ids[4], ids[1], last[0], t + 21, t + 30, last[1], scope=scope))
    return [replace(s, trace_id=trace_id) for s in spans]


# --- hostile shapes -------------------------------------------------------------------------------------------------


def _kind_at(position: int) -> str:
    return ("model", "tool", "agent", "other")[position % 4]


def self_parent(convention: str, size: int) -> list[RawSpan]:
    """An intact invocation whose every span names itself as its parent."""
    return [replace(s, parent=s.span_id) for s in good_invocation(convention, HOSTILE_TRACE, salt=0xB)]


def cycle(convention: str, size: int) -> list[RawSpan]:
    """``size`` spans (model, tool, agent, other, ...) each the parent of the next, the last the parent of the first."""
    spans = []
    for position in range(size):
        name, attributes = node(convention, _kind_at(position), position)
        parent = span_id((position - 1) % size)
        spans.append(RawSpan(span_id(position), parent, name, position, 10 * size, attributes))
    return spans


def two_cycle(convention: str, size: int) -> list[RawSpan]:
    """Two spans, each the other's parent, under an intact invocation."""
    spans = good_invocation(convention, HOSTILE_TRACE, salt=0xB)
    first, second = spans[2], spans[3]
    first.parent, second.parent = second.span_id, first.span_id
    return spans


def duplicates(convention: str, size: int) -> list[RawSpan]:
    """An intact invocation with every span twice, plus a different span reusing the root's id."""
    spans = good_invocation(convention, HOSTILE_TRACE, salt=0xB)
    name, attributes = node(convention, "model", 1)
    impostor = RawSpan(spans[0].span_id, spans[1].span_id, name, 50, 60, attributes)
    return [*spans, *(replace(s) for s in spans), impostor]


def orphans(convention: str, size: int) -> list[RawSpan]:
    """An intact invocation whose root is lost (every other span's parent is missing), and ``size`` strays."""
    spans = good_invocation(convention, HOSTILE_TRACE, salt=0xB)[1:]
    for position in range(size):
        name, attributes = node(convention, _kind_at(position), position)
        start = 200 + 2 * position
        spans.append(RawSpan(span_id(position, 0xC), span_id(position, 0xD), name, start, start + 1, attributes))
    return spans


def _under_root(convention: str, size: int, place: Callable[[int], tuple[str, int, int]]) -> list[RawSpan]:
    """A run root and ``size - 1`` spans (model, tool, agent, other, ...), span ``i`` at ``place(i)``: its parent id,
    start and end."""
    root_name, root_attributes, scope = VOCABULARIES[convention].root()
    spans = [RawSpan(span_id(0), None, root_name, 0, 4 * size + 2, root_attributes, scope=scope)]
    for position in range(1, size):
        name, attributes = node(convention, _kind_at(position), position)
        parent, start, end = place(position)
        spans.append(RawSpan(span_id(position), parent, name, start, end, attributes, scope=scope))
    return spans


def deep_chain(convention: str, size: int) -> list[RawSpan]:
    """A root with one chain ``size`` deep below it (model, tool, agent, other, ...), each span inside its parent."""
    return _under_root(convention, size, lambda i: (span_id(i - 1), i, 4 * size - i))


def wide_fanout(convention: str, size: int) -> list[RawSpan]:
    """A root with ``size - 1`` children side by side (model, tool, agent, other, ...)."""
    return _under_root(convention, size, lambda i: (span_id(0), 4 * i, 4 * i + 3))


def huge_attributes(convention: str, size: int) -> list[RawSpan]:
    """An intact invocation whose model and tool spans carry an extra attribute of ``size`` bytes, and whose tool
    result is a ``size``-byte JSON string."""
    spans = good_invocation(convention, HOSTILE_TRACE, salt=0xB)
    blob = "x" * size
    for span in spans[2:]:
        span.attributes["hostile.blob"] = blob
    spans[3].attributes = {
        key: (json.dumps({"text": blob}) if isinstance(value, str) and "sunny" in value else value)
        for key, value in spans[3].attributes.items()
    }
    return spans


_GARBAGE: tuple[Any, ...] = (
    12,
    -1.5,
    True,
    ["a", 1, None],
    {"nested": {"deep": [1, {"x": 2}]}},
    "",
    "{not json",
    "[1,",
)


def garbage_types(convention: str, size: int) -> list[RawSpan]:
    """An intact invocation and a copy of it whose every attribute holds a value of the wrong type."""
    spans = good_invocation(convention, HOSTILE_TRACE, salt=0xB)
    copies = []
    for offset, span in enumerate(good_invocation(convention, HOSTILE_TRACE, salt=0xE)):
        span.attributes = {key: _GARBAGE[(offset + i) % len(_GARBAGE)] for i, key in enumerate(span.attributes)}
        copies.append(span)
    return [*spans, *copies]


def deep_json(convention: str, size: int) -> list[RawSpan]:
    """An intact invocation whose every string attribute below the root is JSON nested ``size`` levels deep."""
    spans = good_invocation(convention, HOSTILE_TRACE, salt=0xB)
    nested = '[{"parts":' * size + "[]" + "}]" * size
    for span in spans[1:]:
        span.attributes = {
            key: nested if isinstance(value, str) and key.endswith(_CONTENT_SUFFIXES) else value
            for key, value in span.attributes.items()
        }
    return spans


_CONTENT_SUFFIXES = ("messages", "llm_request", "llm_response", "content", "arguments", "result", "input", "output")

SHAPES: dict[str, Callable[[str, int], list[RawSpan]]] = {
    "self_parent": self_parent,
    "two_cycle": two_cycle,
    "cycle": cycle,
    "duplicates": duplicates,
    "orphans": orphans,
    "deep_chain": deep_chain,
    "wide_fanout": wide_fanout,
    "huge_attributes": huge_attributes,
    "garbage_types": garbage_types,
    "deep_json": deep_json,
}
"""Shape name -> ``build(convention, size)``."""


def hostile_document(convention: str, shape: str, size: int) -> list[RawSpan]:
    """The spans of one hostile input: the intact invocation (trace ``a…a``) and the shape (trace ``b…b``)."""
    return [*good_invocation(convention), *SHAPES[shape](convention, size)]


# --- encoders -------------------------------------------------------------------------------------------------------


def _ns(microseconds: int) -> int:
    return BASE_NS + microseconds * 1000


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": [{"key": str(k), "value": _any_value(v)} for k, v in value.items()]}}
    return {}


def otlp_json(spans: Sequence[RawSpan]) -> dict[str, Any]:
    """An OTLP JSON ``TracesData`` document (one ResourceSpans, one ScopeSpans per scope)."""
    scopes: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        scopes.setdefault(span.scope, []).append(
            {
                "traceId": span.trace_id,
                "spanId": span.span_id,
                "parentSpanId": span.parent or "",
                "name": span.name,
                "kind": 1,
                "startTimeUnixNano": str(_ns(span.start_us)),
                "endTimeUnixNano": str(_ns(span.end_us)),
                "attributes": [{"key": k, "value": _any_value(v)} for k, v in span.attributes.items()],
                "status": {"code": 2 if span.error else 0},
            }
        )
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "hostile"}}]},
                "scopeSpans": [{"scope": {"name": name}, "spans": items} for name, items in scopes.items()],
            }
        ]
    }


def otlp_proto(spans: Sequence[RawSpan]) -> bytes:
    """The same document as OTLP protobuf bytes."""
    from google.protobuf import json_format
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    document = otlp_json(spans)
    for resource_spans in document["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for item in scope_spans["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    item[key] = base64.b64encode(bytes.fromhex(item[key])).decode()
                for attribute in item.get("attributes", []):
                    value = attribute["value"].get("doubleValue")
                    if isinstance(value, float) and math.isinf(value):  # protobuf's JSON form quotes infinities
                        attribute["value"]["doubleValue"] = "Infinity" if value > 0 else "-Infinity"
    message = json_format.ParseDict(document, TracesData())
    return bytes(message.SerializeToString())


def _jaeger_tag(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    if isinstance(value, int):
        return {"key": key, "type": "int64", "value": value}
    if isinstance(value, float):
        return {"key": key, "type": "float64", "value": value}
    return {"key": key, "type": "string", "value": value if isinstance(value, str) else json.dumps(value)}


def jaeger_json(spans: Sequence[RawSpan]) -> dict[str, Any]:
    """A Jaeger query-API document, one trace object per trace id (times in microseconds)."""
    traces: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        tags = [_jaeger_tag(k, v) for k, v in span.attributes.items()]
        tags.append({"key": "otel.scope.name", "type": "string", "value": span.scope})
        traces.setdefault(span.trace_id, []).append(
            {
                "traceID": span.trace_id,
                "spanID": span.span_id,
                "operationName": span.name,
                "references": [{"refType": "CHILD_OF", "traceID": span.trace_id, "spanID": span.parent}]
                if span.parent
                else [],
                "startTime": BASE_NS // 1000 + span.start_us,
                "duration": max(0, span.end_us - span.start_us),
                "tags": tags,
                "processID": "p1",
            }
        )
    return {
        "data": [
            {"traceID": trace_id, "spans": items, "processes": {"p1": {"serviceName": "hostile", "tags": []}}}
            for trace_id, items in traces.items()
        ]
    }


def span_dicts(spans: Sequence[RawSpan]) -> list[dict[str, Any]]:
    """The flat span-dict list form."""
    return [
        {
            "trace_id": span.trace_id,
            "span_id": span.span_id,
            "parent_span_id": span.parent,
            "name": span.name,
            "start_time": _ns(span.start_us),
            "end_time": _ns(span.end_us),
            "attributes": dict(span.attributes),
            "scope": {"name": span.scope},
            "status": {"code": "ERROR" if span.error else "UNSET"},
        }
        for span in spans
    ]


def internal_spans(spans: Sequence[RawSpan]) -> list[Any]:
    """otel_eval's own :class:`~otel_eval.traces.Span` objects, no reader involved (to time reconstruction alone)."""
    from otel_eval.traces import Span

    return [
        Span(
            trace_id=s.trace_id,
            span_id=s.span_id,
            parent_span_id=s.parent,
            name=s.name,
            start_time_ns=_ns(s.start_us),
            end_time_ns=_ns(s.end_us),
            attributes=s.attributes,
            scope_name=s.scope,
            status_code="ERROR" if s.error else "UNSET",
        )
        for s in spans
    ]


def readable_spans(spans: Sequence[RawSpan]) -> list[Any]:
    """Live SDK ``ReadableSpan`` objects (what the processor receives from a TracerProvider)."""
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

    result = []
    for span in spans:
        context = SpanContext(int(span.trace_id, 16), int(span.span_id, 16), False, TraceFlags(1))
        parent = (
            SpanContext(int(span.trace_id, 16), int(span.parent, 16), False, TraceFlags(1)) if span.parent else None
        )
        result.append(
            ReadableSpan(
                name=span.name,
                context=context,
                parent=parent,
                attributes=dict(span.attributes),
                start_time=_ns(span.start_us),
                end_time=_ns(span.end_us),
                status=Status(StatusCode.ERROR if span.error else StatusCode.UNSET),
                instrumentation_scope=InstrumentationScope(span.scope),
            )
        )
    return result
