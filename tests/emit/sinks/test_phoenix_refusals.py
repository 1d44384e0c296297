"""The ``phoenix`` sink against a loopback server speaking Phoenix's annotation paths with its all-or-nothing rule:
``POST /v1/span_annotations`` answers 400 and stores nothing when it refuses one annotation of the request (as
Phoenix does for its reserved names). A refused annotation costs only itself; the rest of its batch is delivered."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

import pytest

from otel_eval.emit.sinks import BatchingSink
from otel_eval.emit.sinks.phoenix import PhoenixBackend
from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord
from tests.loopback import LoopbackServer

REFUSED = "refused_metric"
INVALID = "invalid_metric"


class _Phoenix:
    """Stores the annotations of a request it takes whole; refuses (400) a request holding a :data:`REFUSED` one."""

    def __init__(self) -> None:
        self.stored: list[dict[str, Any]] = []
        self.posts = 0
        phoenix = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send(200, {"data": [], "next_cursor": None})

            def do_PUT(self) -> None:
                self._send(200, {"data": {}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                if urlsplit(self.path).path != "/v1/span_annotations":
                    self._send(200, {"data": {}})
                    return
                phoenix.posts += 1
                invalid = [item for item in body["data"] if item["name"] == INVALID]
                if invalid:  # FastAPI's request validation error: it echoes the value it refused as "input"
                    error = {
                        "type": "value_error",
                        "loc": ["body", "data", 0],
                        "msg": "Value error",
                        "input": invalid[0],
                    }
                    self._send(422, {"detail": [error]})
                    return
                if any(item["name"] == REFUSED for item in body["data"]):
                    self._send(400, {"detail": f"The name '{REFUSED}' is reserved."})
                    return
                phoenix.stored.extend(body["data"])
                self._send(200, {"data": [{"id": str(i)} for i in range(len(body["data"]))]})

        self._server = LoopbackServer(Handler)
        self.url = self._server.url

    def close(self) -> None:
        self._server.close()


@pytest.fixture
def phoenix() -> Iterator[_Phoenix]:
    server = _Phoenix()
    yield server
    server.close()


def _record(index: int, metric: str = "response_match_score", explanation: str | None = None) -> EvaluationRecord:
    return EvaluationRecord.model_validate(
        {
            "result_id": f"r{index}",
            "trace_id": f"{index + 1:032x}",
            "span_id": f"{index + 1:016x}",
            "metric_name": metric,
            "score": 1.0,
            "eval_status": EvalStatus.PASSED,
            "label": "pass",
            "threshold": 0.8,
            "explanation": explanation,
        }
    )


def test_an_annotation_phoenix_refuses_costs_only_itself_not_its_batch(phoenix: _Phoenix) -> None:
    records = [_record(i) for i in range(5)]
    refused = _record(5, REFUSED)
    sink = BatchingSink(PhoenixBackend(phoenix.url, project="agent"))
    sink([*records[:2], refused, *records[2:]])
    assert sink.force_flush(10_000)
    assert sorted(a["span_id"] for a in phoenix.stored) == sorted(r.span_id for r in records)
    assert phoenix.posts == 1 + 6  # the batch, then each of its annotations alone
    sink([_record(6), _record(7)])  # a batch Phoenix takes whole: one request, as before
    assert sink.force_flush(10_000)
    assert phoenix.posts == 8 and len(phoenix.stored) == 7
    sink.shutdown(1)


def test_a_refusal_is_logged_without_the_values_the_backend_echoes_back(
    phoenix: _Phoenix, caplog: pytest.LogCaptureFixture
) -> None:
    """A validation error echoes the annotation it refused (FastAPI's ``input``): its explanation, which quotes the
    agent's text, stays out of the WARNING line, which still says what was refused and why."""
    caplog.set_level(logging.WARNING, logger="otel_eval.emit.sinks")
    quoted = "the user said: my card number is 4111 1111 1111 1111"
    sink = BatchingSink(PhoenixBackend(phoenix.url, project="agent"), linger=0)
    sink([_record(0, INVALID, explanation=quoted)])
    assert sink.force_flush(10_000)
    sink.shutdown(1)
    assert sink.stats()["dropped.rejected"] == 1
    (line,) = [r.getMessage() for r in caplog.records if r.name.startswith("otel_eval.emit.sinks")]
    assert "HTTP 422" in line and '"msg": "Value error"' in line
    assert "4111" not in line and "input" not in line
