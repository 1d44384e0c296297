"""The loopback Gemini-compatible server (:mod:`otel_eval.demo.gemini_server`) for tests, with fault-injecting
replies, ready-made responders and a pytest fixture.

Usage::

    from tests.judge.fake_gemini import FakeGemini, text_reply, error_reply

    with FakeGemini(lambda model, body: text_reply('{"verdict": "ok"}')) as server:
        client = genai.Client(api_key="test-key", http_options=HttpOptions(base_url=server.base_url))
        # or: monkeypatch GOOGLE_GEMINI_BASE_URL=server.base_url and GOOGLE_API_KEY=test-key

As a pytest fixture, ``from tests.judge.fake_gemini import fake_gemini`` (in a conftest or test module).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from otel_eval.demo.gemini_server import (
    LoopbackGemini as FakeGemini,
)
from otel_eval.demo.gemini_server import (
    RecordedRequest,
    Reply,
    Responder,
    error_reply,
    request_text,
    text_reply,
)

__all__ = ["FakeGemini", "RecordedRequest", "Reply", "Responder", "error_reply", "request_text", "text_reply"]


def malformed_reply() -> Reply:
    """A 200 answer whose body is not JSON."""
    return Reply(raw_body=b"<html>this is not json", headers={"Content-Type": "text/html"})


def hang_reply() -> Reply:
    """An answer that never comes."""
    return Reply(hang=True)


# --- ready-made responders -----------------------------------------------------------------------------------------


def sequence(replies: Sequence[Reply | str]) -> Responder:
    """Answers with ``replies`` in order, then repeats the last one."""
    lock = threading.Lock()
    index = [0]

    def respond(model: str, body: dict[str, Any]) -> Reply | str:
        with lock:
            reply = replies[min(index[0], len(replies) - 1)]
            index[0] += 1
        return reply

    return respond


def rules(*pairs: tuple[str | Callable[[str], bool], Reply | str | Callable[[str], Reply | str]]) -> Responder:
    """The first rule whose substring (or predicate) matches the request's prompt text answers; else an empty text.

    A rule's answer may be a callable of the prompt text.
    """

    def respond(model: str, body: dict[str, Any]) -> Reply | str | None:
        prompt = request_text(body)
        for condition, answer in pairs:
            matched = condition in prompt if isinstance(condition, str) else condition(prompt)
            if matched:
                return answer(prompt) if callable(answer) else answer
        return None

    return respond


def echo_prompt() -> Responder:
    """A judge that repeats the whole prompt it was sent (as a naive model following injected text might)."""
    return lambda model, body: Reply(text=request_text(body))


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    """A started :class:`FakeGemini` (no rules: empty answers until ``set_responder``), stopped after the test."""
    server = FakeGemini().start()
    try:
        yield server
    finally:
        server.stop()
