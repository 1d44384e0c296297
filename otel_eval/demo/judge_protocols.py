"""The other judge protocols of the loopback judge server: OpenAI Chat Completions, Anthropic Messages (the Anthropic
API and Claude on Vertex AI's ``rawPredict``) and Ollama's native API, each read into the Gemini request form the
scripted rules already answer, and each answer written back in the protocol's own response and error shapes.

Request and response shapes are the SDKs' (``openai`` ``chat.completions.create``, ``anthropic`` ``messages.create``
and ``AsyncAnthropicVertex``, LiteLLM's Ollama ``/api/generate`` and ``/api/chat`` handlers):

- ``POST /v1/chat/completions`` (and ``/chat/completions``: a base URL without ``/v1``): ``{"model", "messages":
  [{"role", "content": str | [{"type": "text", "text"}]}], ...}`` -> ``{"choices": [{"message": {"content"}}],
  "usage": {"prompt_tokens", "completion_tokens"}, "model"}``; errors ``{"error": {"message", "type", "code"}}``.
- ``POST /v1/messages`` and ``POST .../publishers/anthropic/models/{model}:rawPredict``: ``{"model"?, "system"?,
  "messages": [{"role", "content": str | [{"type": "text", "text"}]}], "tools"?, "tool_choice"?, "max_tokens"}`` ->
  ``{"type": "message", "content": [{"type": "text", "text"} | {"type": "tool_use", "name", "input"}], "usage":
  {"input_tokens", "output_tokens"}, "model"}``; errors ``{"type": "error", "error": {"type", "message"}}``.
- ``POST /api/chat`` / ``POST /api/generate`` (Ollama): ``{"model", "messages"}`` / ``{"model", "prompt",
  "system"?}`` -> ``{"message": {"content"}}`` / ``{"response"}`` with ``prompt_eval_count`` and ``eval_count``;
  errors ``{"error": message}``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

OPENAI_CHAT = "openai.chat_completions"
ANTHROPIC_MESSAGES = "anthropic.messages"
OLLAMA_CHAT = "ollama.chat"
OLLAMA_GENERATE = "ollama.generate"

_RAW_PREDICT = re.compile(r"/publishers/anthropic/models/(?P<model>[^/:]+):(?:stream)?[rR]awPredict$")
_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class ProtocolRequest:
    """A request of one of these protocols, read into the Gemini form (``contents``, ``systemInstruction``)."""

    protocol: str
    model: str
    gemini_body: dict[str, Any]
    structured_tool: str | None = None
    """The tool an Anthropic request forces (a response schema riding as a tool), answered as its input."""


def read_request(path: str, body: dict[str, Any]) -> ProtocolRequest | None:
    """The request as the Gemini form, or None when ``path`` is none of these protocols' (then: Gemini's)."""
    path = path.split("?", 1)[0]
    if path.endswith("/chat/completions"):
        return ProtocolRequest(OPENAI_CHAT, str(body.get("model", "")), _from_messages(body.get("messages")))
    raw = _RAW_PREDICT.search(path)
    if raw is not None or path.endswith("/v1/messages"):
        model = raw.group("model") if raw is not None else str(body.get("model", ""))
        gemini = _from_messages(body.get("messages"))
        system = _text_of(body.get("system"))
        if system:
            gemini["systemInstruction"] = {"parts": [{"text": system}]}
        choice = body.get("tool_choice")
        tool = str(choice.get("name")) if isinstance(choice, dict) and choice.get("type") == "tool" else None
        return ProtocolRequest(ANTHROPIC_MESSAGES, model, gemini, tool)
    if path.endswith("/api/chat"):
        return ProtocolRequest(OLLAMA_CHAT, str(body.get("model", "")), _from_messages(body.get("messages")))
    if path.endswith("/api/generate"):
        gemini = {"contents": [{"role": "user", "parts": [{"text": str(body.get("prompt") or "")}]}]}
        if body.get("system"):
            gemini["systemInstruction"] = {"parts": [{"text": str(body["system"])}]}
        return ProtocolRequest(OLLAMA_GENERATE, str(body.get("model", "")), gemini)
    return None


def _text_of(content: Any) -> str:
    """A message content's text: a string, or the text blocks of a list, joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type", "text") == "text"]
        return "\n".join(t for t in texts if t)
    return ""


def _from_messages(messages: Any) -> dict[str, Any]:
    contents: list[dict[str, Any]] = []
    system: list[str] = []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        text = _text_of(message.get("content"))
        role = message.get("role")
        if role in ("system", "developer"):
            system.append(text)
        else:
            contents.append({"role": "model" if role == "assistant" else "user", "parts": [{"text": text}]})
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": "\n".join(system)}]}
    return body


def answer_body(request: ProtocolRequest, text: str, model: str, prompt_tokens: int, output_tokens: int) -> Any:
    """A 200 answer of the request's protocol carrying ``text``."""
    if request.protocol == OPENAI_CHAT:
        return {
            "id": "chatcmpl-loopback",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": output_tokens,
                "total_tokens": prompt_tokens + output_tokens,
            },
        }
    if request.protocol == ANTHROPIC_MESSAGES:
        block: dict[str, Any] = {"type": "text", "text": text}
        if request.structured_tool is not None:
            try:
                value = json.loads(text)
            except ValueError:
                value = None
            if isinstance(value, dict):
                block = {"type": "tool_use", "id": "toolu_loopback", "name": request.structured_tool, "input": value}
        return {
            "id": "msg_loopback",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": prompt_tokens, "output_tokens": output_tokens},
        }
    done = {
        "model": model,
        "created_at": "2026-01-01T00:00:00Z",
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": prompt_tokens,
        "eval_count": output_tokens,
    }
    if request.protocol == OLLAMA_CHAT:
        return {**done, "message": {"role": "assistant", "content": text}}
    return {**done, "response": text}


def error_body(request: ProtocolRequest, status: int, google_body: Any) -> Any:
    """An error answer of the request's protocol, from the Google-style error body the scripted rules give."""
    error = google_body.get("error") if isinstance(google_body, dict) else None
    message = str(error.get("message", "error")) if isinstance(error, dict) else "error"
    if request.protocol == OPENAI_CHAT:
        kind = "invalid_request_error" if status < 500 else "server_error"
        code = "invalid_api_key" if status == 401 else ("rate_limit_exceeded" if status == 429 else None)
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}
    if request.protocol == ANTHROPIC_MESSAGES:
        kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": message}


__all__ = [
    "ANTHROPIC_MESSAGES",
    "OLLAMA_CHAT",
    "OLLAMA_GENERATE",
    "OPENAI_CHAT",
    "ProtocolRequest",
    "answer_body",
    "error_body",
    "read_request",
]
