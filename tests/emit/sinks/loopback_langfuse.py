"""A loopback server speaking the part of Langfuse's documented public API the ``langfuse`` sink uses.

No Langfuse server can run in the test environment (it needs Postgres, ClickHouse, Redis and S3), so this one
implements, from Langfuse's public API reference: its OTLP/HTTP traces endpoint ``POST /api/public/otel/v1/traces``
(protobuf, basic auth; the spans are kept), ``POST /api/public/scores`` (basic auth with the project's public
and secret key; the score's ``id`` upserts) and ``GET /api/public/scores?traceId=...`` (``{"data": [...],
"meta": {...}}``). It can be stopped and started again on the same port, and answer 503 for a while.
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


class LoopbackLangfuse:
    """Scores by id, the requests it answered, and a switch to answer 503."""

    def __init__(self, port: int = 0) -> None:
        self.scores: dict[str, dict[str, Any]] = {}
        self.spans: list[Any] = []
        """The OTLP spans received (``opentelemetry.proto.trace.v1.trace_pb2.Span``)."""
        self.posts = 0
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
                if not body.get("traceId") or not body.get("name") or "value" not in body:
                    return self._reply(400, {"message": "traceId, name and value are required"})
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
                if url.path != "/api/public/scores":
                    return self._reply(404, {"message": "not found"})
                if not self._authorized():
                    return None
                trace_id = parse_qs(url.query).get("traceId", [None])[0]
                with owner._lock:
                    data = [s for s in owner.scores.values() if trace_id is None or s["traceId"] == trace_id]
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
