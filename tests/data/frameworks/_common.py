"""What every producer in ``generate.py`` shares: the scenarios, the tools, the scripted model's steps, and writing a
run as OTLP JSON (the OpenTelemetry SDK's own protobuf encoder, then the protobuf JSON mapping with hex ids, as the
OTLP/JSON spec says) beside the framework's own record of it.

Runs only in the generator's virtualenv (``requirements.txt`` beside this file); the tests read the files it wrote.
"""

from __future__ import annotations

import base64
import gzip
import http.server
import json
import threading
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

HERE = Path(__file__).resolve().parent
MODEL = "scripted-model"
INSTRUCTIONS = "You are a weather assistant. Use the tools."


# --- the tools ------------------------------------------------------------------------------------------------------

_WEATHER = {
    "Paris": {"temperature_c": 18, "conditions": "cloudy"},
    "Tokyo": {"temperature_c": 24, "conditions": "sunny"},
    "Rome": {"temperature_c": 27, "conditions": "clear"},
}
FORECAST_ERROR = "forecast service unavailable"


def get_weather(city: str) -> dict[str, Any]:
    """The current weather in a city."""
    return {"city": city, **_WEATHER[city]}


def get_time(city: str) -> str:
    """The local time in a city, as HH:MM."""
    return {"Paris": "14:05", "Tokyo": "21:05", "Rome": "14:05"}[city]


def get_forecast(city: str, days: int) -> dict[str, Any]:
    """The weather forecast for a city over the next days."""
    raise RuntimeError(FORECAST_ERROR)


TOOLS = {"get_weather": get_weather, "get_time": get_time, "get_forecast": get_forecast}
TOOL_SCHEMAS = {
    "get_weather": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "get_time": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "get_forecast": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city", "days"],
    },
}


# --- scenarios ------------------------------------------------------------------------------------------------------

Calls = list[tuple[str, dict[str, Any]]]
"""One model step that calls tools (several = parallel calls in one response)."""


@dataclass
class Turn:
    user: str
    steps: list[Calls | str]
    """What the model answers, one per model call: tool calls, then the final text."""


@dataclass
class Scenario:
    name: str
    turns: list[Turn]
    tools: list[str] = field(default_factory=lambda: ["get_weather", "get_time", "get_forecast"])


SCENARIOS = [
    Scenario(
        "parallel_tools",
        [
            Turn(
                "What's the weather in Paris and Tokyo, and the time in Paris?",
                [
                    [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"})],
                    [("get_time", {"city": "Paris"})],
                    "Paris is cloudy at 18 °C and Tokyo sunny at 24 °C; it is 14:05 in Paris.",
                ],
            )
        ],
    ),
    Scenario(
        "tool_error",
        [
            Turn(
                "What's the forecast for Paris for the next 3 days?",
                [[("get_forecast", {"city": "Paris", "days": 3})], "Sorry, the forecast service is unavailable."],
            )
        ],
    ),
    Scenario(
        "multi_turn",
        [
            Turn("What's the weather in Paris?", [[("get_weather", {"city": "Paris"})], "Paris: cloudy, 18 °C."]),
            Turn("And in Rome?", [[("get_weather", {"city": "Rome"})], "Rome: clear, 27 °C."]),
        ],
    ),
]


ONE_TOOL = Scenario(
    "one_tool",
    [Turn("What's the weather in Paris?", [[("get_weather", {"city": "Paris"})], "Paris is cloudy at 18 °C."])],
)
SEQUENTIAL_TOOLS = Scenario(
    "sequential_tools",
    [
        Turn(
            "What's the weather in Tokyo, and the local time there?",
            [
                [("get_weather", {"city": "Tokyo"})],
                [("get_time", {"city": "Tokyo"})],
                "Tokyo is sunny at 24 °C; it is 21:05 there.",
            ],
        )
    ],
)
NO_TOOL = Scenario("no_tool", [Turn("Hello! What can you do?", ["I can tell you the weather and the time in a city."])])
FIVE_SCENARIOS = [ONE_TOOL, SEQUENTIAL_TOOLS, SCENARIOS[1], NO_TOOL, SCENARIOS[2]]
"""The scenarios of the producers added later (one call, two calls in separate model turns, a failing tool, no tool
call, two user turns): frameworks that make one tool call per model turn have no parallel calls to show."""


class Script:
    """The scripted model's answers in order, across the turns of a scenario; tool call ids ``call_1``, ``call_2``..."""

    def __init__(self, scenario: Scenario) -> None:
        self.steps = [step for turn in scenario.turns for step in turn.steps]
        self.position = 0
        self.call_count = 0

    def next(self) -> list[tuple[str, dict[str, Any], str]] | str:
        """The next answer: ``[(tool, args, call id), ...]`` or the final text."""
        if self.position >= len(self.steps):
            raise RuntimeError("the script has no more answers")
        step = self.steps[self.position]
        self.position += 1
        if isinstance(step, str):
            return step
        calls = []
        for name, args in step:
            self.call_count += 1
            calls.append((name, args, f"call_{self.call_count}"))
        return calls


# --- recording ------------------------------------------------------------------------------------------------------


def new_provider(service: str) -> tuple[TracerProvider, InMemorySpanExporter]:
    """A real SDK tracer provider exporting to memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def versions(*packages: str) -> dict[str, str]:
    """The installed versions of ``packages``."""
    return {name: metadata.version(name) for name in packages}


def otlp_json(spans: list[ReadableSpan]) -> dict[str, Any]:
    """OTLP/JSON of ``spans``: the SDK's protobuf encoding in the protobuf JSON mapping, ids in hex."""
    return _hex_ids(MessageToDict(encode_spans(spans)))


def _hex_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: base64.b64decode(item).hex()
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(item, str)
            else _hex_ids(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(item) for item in value]
    return value


@dataclass
class ForeignRun:
    """A scenario run by another language's process (ADK for JavaScript): its spans as that process's OpenTelemetry SDK
    wrote them in OTLP/JSON, the framework's record of each turn, and the versions it ran."""

    otlp: dict[str, Any]
    turns: Any
    versions: dict[str, str]


def write_run(
    producer: str,
    scenario: Scenario,
    spans: list[ReadableSpan] | dict[str, Any],
    record: Any,
    packages: dict[str, str],
    convention: str,
) -> None:
    """``<producer>/<scenario>.otlp.json.gz`` (the spans, or their OTLP/JSON document) and ``<scenario>.record.json``
    (the framework's own record)."""
    folder = HERE / producer
    folder.mkdir(exist_ok=True)
    document = spans if isinstance(spans, dict) else otlp_json(spans)
    if not document.get("resourceSpans"):
        raise RuntimeError(f"{producer}/{scenario.name}: no spans were recorded")
    # gzip (no timestamp, so a re-run with the same spans gives the same bytes): the JSON is ~25 times larger.
    otlp = _dump(document, indent=None).encode()
    (folder / f"{scenario.name}.otlp.json.gz").write_bytes(gzip.compress(otlp, compresslevel=9, mtime=0))
    record_document = {
        "producer": producer,
        "scenario": scenario.name,
        "convention": convention,
        "versions": packages,
        "turns": record,
    }
    (folder / f"{scenario.name}.record.json").write_text(_dump(record_document), encoding="utf-8")


def _dump(value: Any, indent: int | None = 1) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False, default=str) + "\n"


# --- a scripted OpenAI-compatible chat completions server on loopback ---------------------------------------------


class ChatCompletionsServer:
    """OpenAI's ``POST /v1/chat/completions`` and ``POST /v1/responses`` and Gemini's ``:generateContent`` on
    127.0.0.1, answered from a :class:`Script` (chat completions and responses also streamed, when asked), so the real OpenAI and google-genai clients (and the
    models built on them) run offline. The requests received are kept in ``requests``."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(body)
                if self.path.endswith(":generateContent"):
                    answer = server.gemini
                elif self.path.endswith("/responses"):
                    answer = server.response
                else:
                    answer = server.completion
                if body.get("stream") and answer == server.completion:
                    self.stream(server.completion_chunks(server.completion(body)))
                    return
                if body.get("stream") and answer == server.response:
                    self.stream(server.response_events(server.response(body)), done=False)
                    return
                payload = json.dumps(answer(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def stream(self, chunks: list[dict[str, Any]], done: bool = True) -> None:
                payload = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)
                payload += "data: [DONE]\n\n" if done else ""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(payload.encode())))
                self.end_headers()
                self.wfile.write(payload.encode())

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def __enter__(self) -> ChatCompletionsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def completion(self, request: dict[str, Any]) -> dict[str, Any]:
        step = self.script.next()
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if isinstance(step, str):
            message["content"] = step
            finish = "stop"
        else:
            message["tool_calls"] = [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                for name, args, call_id in step
            ]
            finish = "tool_calls"
        return {
            "id": f"chatcmpl-{self.script.position}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": request.get("model", MODEL),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
        }

    @staticmethod
    def completion_chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
        """A chat completion as the chunks of a streamed one (``"stream": true``): the message whole in one delta,
        then the finish reason, then the usage."""
        choice = completion["choices"][0]
        message = choice["message"]
        delta: dict[str, Any] = {"role": "assistant", "content": message["content"]}
        if "tool_calls" in message:
            delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
        head = {key: completion[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
        return [
            head | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            head | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
            head | {"choices": [], "usage": completion["usage"]},
        ]

    def response(self, request: dict[str, Any]) -> dict[str, Any]:
        """A Responses API answer (the OpenAI Agents SDK's default model)."""
        step = self.script.next()
        output: list[dict[str, Any]]
        if isinstance(step, str):
            text = {"type": "output_text", "text": step, "annotations": []}
            output = [
                {"type": "message", "id": f"msg_{self.script.position}", "role": "assistant", "status": "completed"}
                | {"content": [text]}
            ]
        else:
            output = [
                {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name}
                | {"arguments": json.dumps(args), "status": "completed"}
                for name, args, call_id in step
            ]
        return {
            "id": f"resp_{self.script.position}",
            "object": "response",
            "created_at": 1_700_000_000,
            "model": request.get("model", MODEL),
            "status": "completed",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 40,
                "output_tokens": 8,
                "total_tokens": 48,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }

    @staticmethod
    def response_events(response: dict[str, Any]) -> list[dict[str, Any]]:
        """A Responses API answer as the events of a streamed one (``"stream": true``): created, each output item
        added and done whole, then completed with the whole response."""
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": response | {"status": "in_progress", "output": []}}
        ]
        for index, item in enumerate(response["output"]):
            events.append({"type": "response.output_item.added", "output_index": index, "item": item})
            events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        events.append({"type": "response.completed", "response": response})
        return [event | {"sequence_number": number} for number, event in enumerate(events)]

    def gemini(self, request: dict[str, Any]) -> dict[str, Any]:
        """A Gemini ``generateContent`` answer."""
        step = self.script.next()
        if isinstance(step, str):
            parts: list[dict[str, Any]] = [{"text": step}]
        else:
            parts = [{"functionCall": {"id": call_id, "name": name, "args": args}} for name, args, call_id in step]
        return {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 8, "totalTokenCount": 48},
            "modelVersion": MODEL,
        }
