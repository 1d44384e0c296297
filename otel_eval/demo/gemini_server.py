"""A Gemini-API-compatible HTTP server on loopback that answers by scripted rules (no model, no network), and speaks
the other judge protocols too (OpenAI Chat Completions, Anthropic Messages and Claude on Vertex AI's ``rawPredict``,
Ollama's ``/api/chat`` and ``/api/generate``: :mod:`otel_eval.demo.judge_protocols`), answering them by the same rules.

``otel-eval demo --judge local`` runs the judged metrics against it, and the test suite uses it as the judge's and
ADK's Gemini endpoint. It speaks what google-genai sends and expects: ``POST /{v1,v1beta,v1beta1}/models/{model}:
generateContent`` (and the Vertex form ``.../projects/P/locations/L/publishers/google/models/{model}:generateContent``,
and Vertex's ``...:evaluateInstances``), camelCase JSON in and out, Google error bodies ``{"error": {"code",
"message", "status"}}``. It can add latency, answer 429 with ``Retry-After``, 5xx, malformed bodies or never, records
every request, and counts requests in flight.

Usage::

    with LoopbackGemini(lambda model, body: text_reply('{"verdict": "ok"}')) as server:
        client = genai.Client(api_key="any-key", http_options=HttpOptions(base_url=server.base_url))
        # or set GOOGLE_GEMINI_BASE_URL=server.base_url and GOOGLE_API_KEY=any-key
"""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from otel_eval.demo.judge_protocols import ProtocolRequest, answer_body, error_body, read_request

_PATH = re.compile(r"/models/(?P<model>[^/:]+):(?P<method>\w+)$|:(?P<vertex>evaluateInstances)$")
_STATUS_TEXT = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


@dataclass
class Reply:
    """One scripted answer.

    Attributes:
        text: Candidate text (a normal 200 answer) when no other body is given.
        status: HTTP status.
        json_body: A JSON body sent as-is (overrides ``text``).
        raw_body: Raw bytes sent as-is (malformed bodies).
        headers: Extra response headers (e.g. ``Retry-After``).
        delay: Seconds to wait before answering (on top of the server's latency).
        hang: Never answer (until the server stops); the client must time out.
        prompt_tokens: Usage reported for the prompt.
        output_tokens: Usage reported for the candidate.
    """

    text: str | None = None
    status: int = 200
    json_body: Any = None
    raw_body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    hang: bool = False
    prompt_tokens: int = 10
    output_tokens: int = 5

    def body(self, model: str) -> bytes:
        """The response body bytes."""
        if self.raw_body is not None:
            return self.raw_body
        if self.json_body is not None:
            return json.dumps(self.json_body).encode()
        payload = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": self.text or ""}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": self.prompt_tokens,
                "candidatesTokenCount": self.output_tokens,
                "totalTokenCount": self.prompt_tokens + self.output_tokens,
            },
            "modelVersion": model,
        }
        return json.dumps(payload).encode()


def text_reply(text: str, **kwargs: Any) -> Reply:
    """A 200 answer whose candidate text is ``text``."""
    return Reply(text=text, **kwargs)


def error_reply(
    status: int, message: str = "scripted error", *, retry_after: float | str | None = None, details: Any = None
) -> Reply:
    """A Google-style error answer; ``retry_after`` adds a ``Retry-After`` header."""
    error: dict[str, Any] = {"code": status, "message": message, "status": _STATUS_TEXT.get(status, "UNKNOWN")}
    if details is not None:
        error["details"] = details
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return Reply(status=status, json_body={"error": error}, headers=headers)


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received."""

    path: str
    model: str
    method: str
    body: dict[str, Any]
    headers: dict[str, str]
    raw_body: dict[str, Any] | None = None
    """The body as sent, for the protocols other than Gemini's (``body`` is then its Gemini form)."""

    @property
    def protocol(self) -> str:
        """``gemini``, or the other protocol's name (``method``) the request came in."""
        return "gemini" if self.raw_body is None else self.method

    @property
    def prompt(self) -> str:
        """All text of the request's contents, joined by newlines."""
        return request_text(self.body)

    @property
    def system_instruction(self) -> str:
        """The system instruction's text ('' if none)."""
        parts = (self.body.get("systemInstruction") or {}).get("parts") or []
        return "\n".join(p.get("text", "") for p in parts if isinstance(p, dict))


def request_text(body: dict[str, Any]) -> str:
    """All text parts of a generateContent request body's ``contents``."""
    texts = []
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            if isinstance(part, dict) and part.get("text"):
                texts.append(part["text"])
    return "\n".join(texts)


Responder = Callable[[str, dict[str, Any]], "Reply | str | None"]


class LoopbackGemini:
    """The server. ``responder(model, request_json)`` returns a :class:`Reply`, a text, or None (empty answer).

    Args:
        responder: The scripted rules; replaceable later with :meth:`set_responder`.
        latency: Seconds added before every answer.
        model_version: The model the answers say answered (``modelVersion``, read by the judge client as
            ``gen_ai.response.model``); None: the model asked for.
        port: Port on 127.0.0.1 to serve on; 0: a free one.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency: float = 0.0,
        model_version: str | None = None,
        port: int = 0,
    ) -> None:
        self._responder: Responder = responder or (lambda model, body: None)
        self.latency = latency
        self.model_version = model_version
        self._port = port
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------------------------

    def start(self) -> LoopbackGemini:
        """Starts serving on 127.0.0.1 and the port asked for (a free one by default).

        Raises:
            OSError: the port cannot be bound (in use).
        """
        server = ThreadingHTTPServer(("127.0.0.1", self._port), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="OtelEvalLoopbackGemini", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops serving; hanging answers return."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackGemini:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # --- scripting ---------------------------------------------------------------------------------------------

    def set_responder(self, responder: Responder) -> None:
        """Replaces the scripted rules."""
        self._responder = responder

    def generate_requests(self) -> list[RecordedRequest]:
        """Recorded judge calls: ``generateContent`` requests and the other protocols'."""
        with self._lock:
            return [r for r in self.requests if r.method == "generateContent" or r.raw_body is not None]

    def reset(self) -> None:
        """Forgets recorded requests and in-flight maxima."""
        with self._lock:
            self.requests.clear()
            self.max_in_flight = self.in_flight

    # --- serving -----------------------------------------------------------------------------------------------

    def _answer(
        self, path: str, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[Reply, str, ProtocolRequest | None]:
        if path.split("?", 1)[0].endswith(TOKEN_PATH):
            return (
                Reply(json_body={"access_token": LOOPBACK_ACCESS_TOKEN, "expires_in": 3600, "token_type": "Bearer"}),
                "",
                None,
            )
        other = read_request(path, body)
        if other is not None:
            with self._lock:
                self.requests.append(
                    RecordedRequest(path, other.model, other.protocol, other.gemini_body, headers, body)
                )
            reply = self._responder(other.model, other.gemini_body)
            reply = Reply(text="") if reply is None else Reply(text=reply) if isinstance(reply, str) else reply
            return reply, self.model_version or other.model, other
        match = _PATH.search(path.split("?", 1)[0])
        model = (match.group("model") or "") if match else ""
        method = ((match.group("method") or match.group("vertex")) if match else None) or "unknown"
        with self._lock:
            self.requests.append(RecordedRequest(path, model, method, body, headers))
        if match is None:
            return error_reply(404, f"unknown path {path}"), model, None
        reply = self._responder(model, body)
        if reply is None:
            reply = Reply(text="")
        elif isinstance(reply, str):
            reply = Reply(text=reply)
        return reply, self.model_version or model, None


TOKEN_PATH = "/token"
"""An OAuth token endpoint (``POST``), so Google credentials whose ``token_uri`` points here (an ``authorized_user``
file) refresh without a network: Claude on Vertex AI authenticates that way."""
LOOPBACK_ACCESS_TOKEN = "loopback-access-token"


def _payload(reply: Reply, model: str, other: ProtocolRequest | None) -> bytes:
    """The reply's body in the request's protocol (Gemini's when ``other`` is None)."""
    if other is None or reply.raw_body is not None:
        return reply.body(model)
    if reply.json_body is not None:
        body = error_body(other, reply.status, reply.json_body) if reply.status >= 400 else reply.json_body
        return json.dumps(body).encode()
    return json.dumps(answer_body(other, reply.text or "", model, reply.prompt_tokens, reply.output_tokens)).encode()


def _handler_for(server: LoopbackGemini) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in separate writes; without this, Nagle + delayed ACK add ~40 ms per answer.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_unparseable": raw.decode("utf-8", "replace")}
            with server._lock:
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                other: ProtocolRequest | None = None
                try:
                    reply, model, other = server._answer(
                        self.path, body, {k.lower(): v for k, v in self.headers.items()}
                    )
                except Exception as exc:  # noqa: BLE001 - a broken responder answers 500, the thread lives on
                    reply, model = error_reply(500, f"responder failed: {exc!r}"), ""
                wait = server.latency + reply.delay
                if reply.hang:
                    server._stopping.wait(timeout=120)
                    return
                if wait > 0:
                    server._stopping.wait(timeout=wait)
                payload = _payload(reply, model, other)
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.headers.get("Content-Type", "application/json"))
                for key, value in reply.headers.items():
                    if key.lower() != "content-type":
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                with server._lock:
                    server.in_flight -= 1

    return Handler


__all__ = [
    "LoopbackGemini",
    "RecordedRequest",
    "Reply",
    "Responder",
    "error_reply",
    "request_text",
    "text_reply",
]
