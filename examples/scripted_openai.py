"""A scripted model behind OpenAI's Chat Completions API on 127.0.0.1, for the examples that run a real OpenAI client
(LangChain's ``ChatOpenAI``) with no key and no network.

    with ScriptedChatCompletions(SCRIPT) as server:    # SCRIPT: question -> ((tool, arguments), final answer)
        model = ChatOpenAI(model="scripted-gpt", base_url=server.base_url, api_key="loopback-no-key")

``POST /v1/chat/completions`` answers the conversation's first user message from the script: a call of the scripted
tool, then, once the conversation ends with that tool's result, the scripted answer. Non-streaming only; every reply
reports 120 prompt and 15 completion tokens. Anything else is answered 400 with an OpenAI-style error.
"""

from __future__ import annotations

import http.server
import itertools
import json
import threading
from collections.abc import Mapping
from typing import Any

Script = Mapping[str, tuple[tuple[str, dict[str, Any]], str]]
"""The user's question -> ((the tool the model calls, its arguments), the model's answer once it has the result)."""

_MAX_BODY = 1 << 20


class ScriptedChatCompletions:
    """The scripted model's HTTP server on a free loopback port (a daemon thread); a context manager."""

    def __init__(self, script: Script, model: str = "scripted-gpt") -> None:
        self.script = script
        self.model = model
        self._ids = itertools.count(1)
        handler = _handler(self)
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="scripted-openai", daemon=True)

    @property
    def base_url(self) -> str:
        """The OpenAI client's ``base_url`` (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedChatCompletions:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def completion(self, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and body of the reply to one Chat Completions request."""
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return 400, _error("no messages")
        question = next((m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "user"), None)
        if not isinstance(question, str) or question not in self.script:
            return 400, _error("the scripted model only answers its scripted questions")
        (tool, arguments), answer = self.script[question]
        number = next(self._ids)
        message: dict[str, Any]
        if isinstance(messages[-1], dict) and messages[-1].get("role") == "tool":
            message, finish = {"role": "assistant", "content": answer}, "stop"
        else:
            function = {"name": tool, "arguments": json.dumps(arguments)}
            call = {"id": f"call_{number}", "type": "function", "function": function}
            message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        return 200, {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 15, "total_tokens": 135},
        }


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}


def _handler(server: ScriptedChatCompletions) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if not self.path.endswith("/chat/completions") or not 0 < length <= _MAX_BODY:
                status, reply = 400, _error("POST /v1/chat/completions with a JSON body")
            else:
                try:
                    body = json.loads(self.rfile.read(length))
                except ValueError:
                    body = None
                status, reply = server.completion(body) if isinstance(body, dict) else (400, _error("not JSON"))
            payload = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the agent's output stays its own

    return Handler
