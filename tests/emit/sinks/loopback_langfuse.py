"""A loopback server speaking the part of Langfuse's documented public API the ``langfuse`` sink uses.

No Langfuse server can run in the test environment (it needs Postgres, ClickHouse, Redis and S3), so this one
implements, from Langfuse's public API reference: its OTLP/HTTP traces endpoint ``POST /api/public/otel/v1/traces``
(protobuf, basic auth; the spans are kept), ``POST /api/public/scores`` (basic auth with the project's public
and secret key; the score's ``id`` upserts; a body is validated as the server's ``PostScoresBody`` schema does, see
:func:`invalid_score`), ``GET /api/public/scores?traceId=...`` (trace scores only, as the server's v1 list) and
``GET /api/public/v2/scores?sessionId=...&traceId=...`` (trace and session scores), each ``{"data": [...], "meta":
{...}}``. It can be stopped and started again on the same port, and answer 503 for a while.
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

PUBLIC_KEY = "pk-lf-test-public"
SECRET_KEY = "sk-lf-test-secret-do-not-log"


def invalid_score(body: Any) -> str | None:
    """Why Langfuse's ``POST /api/public/scores`` answers 400 to ``body`` (None: it takes it), after the server's
    schema (``packages/shared/src/features/scores/interfaces/api/shared.ts``, ``PostScoresBody``): a non-empty
    name; exactly one of ``traceId`` (with an optional ``observationId``), ``sessionId`` (Langfuse 3.53 and later)
    and ``datasetRunId``, so an ``observationId`` needs a ``traceId`` (``applyScoreValidation``); a value of the
    ``dataType``'s type (NUMERIC a number, CATEGORICAL a string, BOOLEAN 0 or 1)."""
    if not isinstance(body, dict):
        return "the body is not an object"
    if not isinstance(body.get("name"), str) or not body["name"]:
        return "name: a non-empty string is required"
    trace, session, run = (bool(body.get(key)) for key in ("traceId", "sessionId", "datasetRunId"))
    observation = bool(body.get("observationId"))
    if not (
        (trace and not session and not run)
        or (session and not trace and not run and not observation)
        or (run and not trace and not session and not observation)
    ):
        return (
            "Provide exactly one of the following: traceId (with optional observationId), sessionId or "
            "datasetRunId. ObservationId requires traceId."
        )
    value, data_type = body.get("value"), body.get("dataType")
    if data_type not in (None, "NUMERIC", "CATEGORICAL", "BOOLEAN", "CORRECTION", "TEXT"):
        return f"dataType: invalid discriminator value {data_type!r}"
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if data_type == "NUMERIC" and not number:
        return "value: a number is required for data type NUMERIC"
    if data_type == "CATEGORICAL" and not isinstance(value, str):
        return "value: a string is required for data type CATEGORICAL"
    if data_type == "BOOLEAN" and value not in (0, 1):
        return "Value must be a number equal to either 0 or 1 for data type BOOLEAN"
    if data_type is None and not (number or isinstance(value, str)):
        return "value: a number or a string is required"
    return None


class LoopbackLangfuse:
    """Scores by id, the requests it answered, and a switch to answer 503."""

    def __init__(self, port: int = 0) -> None:
        self.scores: dict[str, dict[str, Any]] = {}
        self.spans: list[Any] = []
        """The OTLP spans received (``opentelemetry.proto.trace.v1.trace_pb2.Span``)."""
        self.posts = 0
        self.refused: list[str] = []
        """Why each score body answered 400 was refused."""
        self.unavailable = False
        self._lock = threading.Lock()
        self._port = port
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> LoopbackLangfuse:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _authorized(self) -> bool:
                expected = "Basic " + base64.b64encode(f"{PUBLIC_KEY}:{SECRET_KEY}".encode()).decode()
                if self.headers.get("Authorization") == expected:
                    return True
                self._reply(401, {"message": "Invalid credentials"})
                return False

            def _reply(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if owner.unavailable:
                    return self._reply(503, {"message": "unavailable"})
                if urlsplit(self.path).path == "/api/public/otel/v1/traces":
                    return self._traces(raw)
                body = json.loads(raw or b"{}")
                if urlsplit(self.path).path != "/api/public/scores":
                    return self._reply(404, {"message": "not found"})
                if not self._authorized():
                    return None
                problem = invalid_score(body)
                if problem is not None:
                    with owner._lock:
                        owner.refused.append(problem)
                    return self._reply(400, {"message": "Invalid request data", "error": [{"message": problem}]})
                score_id = body.get("id") or str(uuid.uuid4())
                with owner._lock:
                    owner.posts += 1
                    owner.scores[score_id] = {**body, "id": score_id}
                return self._reply(200, {"id": score_id})

            def _traces(self, raw: bytes) -> None:
                if not self._authorized():
                    return
                if self.headers.get("Content-Encoding") == "gzip":
                    raw = gzip.decompress(raw)
                request = ExportTraceServiceRequest.FromString(raw)
                with owner._lock:
                    owner.spans += [
                        span
                        for resource_spans in request.resource_spans
                        for scope_spans in resource_spans.scope_spans
                        for span in scope_spans.spans
                    ]
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                if url.path not in ("/api/public/scores", "/api/public/v2/scores"):
                    return self._reply(404, {"message": "not found"})
                if not self._authorized():
                    return None
                query = {key: values[0] for key, values in parse_qs(url.query).items()}
                wanted = {key: query[key] for key in ("traceId", "sessionId") if key in query}
                with owner._lock:
                    data = [
                        s
                        for s in owner.scores.values()
                        if all(s.get(key) == value for key, value in wanted.items())
                        and (url.path == "/api/public/v2/scores" or s.get("traceId"))  # v1 lists trace scores only
                    ]
                return self._reply(
                    200, {"data": data, "meta": {"page": 1, "limit": len(data), "totalItems": len(data)}}
                )

        self._server = ThreadingHTTPServer(("127.0.0.1", self._port), Handler)
        self._port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> LoopbackLangfuse:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
