"""The worker's HTTP endpoints: ``/healthz`` (liveness), ``/readyz`` (readiness) and ``/metrics`` (Prometheus pull).

One small server on ``--metrics-host``/``--metrics-port`` (``OTEL_EVAL_WORKER_METRICS_HOST``/``_PORT``), on its own
daemon thread, so it answers while the event loop is busy, and so a stuck loop shows as a failing ``/healthz``:

``/healthz``
    200 while the worker's event loop is responsive: a task on the loop records a heartbeat every second, and
    the check fails when the last one is older than :data:`LOOP_STALL_SECONDS`. Kubernetes restarts the pod.
``/readyz``
    200 when the worker is connected and a member of its consumer group (partitions assigned, possibly none when
    there are more workers than partitions), its last fetch from the broker succeeded, and its last telemetry export
    finished. Otherwise 503 with the failing checks, one per line, in generic words: the broker's error text (its
    addresses, its TLS and SASL messages) is in the worker's log, never in the unauthenticated answer. Kubernetes stops routing to it (and KEDA and
    operators see it); it is not restarted for a broker outage.
``/metrics``
    The worker's metrics in the Prometheus text format, with ``OTEL_EVAL_WORKER_TELEMETRY=prometheus`` (404 otherwise).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

logger = logging.getLogger(__name__)

LOOP_STALL_SECONDS: Final = 30.0
"""``/healthz`` fails when the event loop has not run its heartbeat for this long."""
HEARTBEAT_SECONDS: Final = 1.0


class WorkerHealth:
    """What the health endpoints report; updated by the worker, read by the HTTP thread (plain attribute writes)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last_beat = clock()
        self.started = False
        self.group_member = False
        self.fetch_error: str | None = None
        """Why the last fetch failed (for the log; ``/readyz`` says only that it failed)."""
        self.telemetry_error: str | None = None
        self.exports_failing = False
        """Whether the latest OTLP export of any signal failed."""

    def beat(self) -> None:
        """Called from the event loop every :data:`HEARTBEAT_SECONDS`."""
        self._last_beat = self._clock()

    def liveness(self) -> list[str]:
        """The failing liveness checks (empty: alive)."""
        stalled = self._clock() - self._last_beat
        return [f"event loop unresponsive for {stalled:.0f} s"] if stalled > LOOP_STALL_SECONDS else []

    def readiness(self) -> list[str]:
        """The failing readiness checks (empty: ready)."""
        problems = self.liveness()
        if not self.started:
            problems.append("not connected to the broker yet")
        elif not self.group_member:
            problems.append("not a member of the consumer group (joining or rebalancing)")
        if self.fetch_error is not None:
            problems.append("last fetch from the broker failed")
        if self.telemetry_error is not None or self.exports_failing:
            problems.append("last telemetry export failed")
        return problems


class HealthServer:
    """Serves the endpoints of ``health`` (and ``metrics_text`` on ``/metrics``) on ``host:port`` (0: any free)."""

    def __init__(
        self, health: WorkerHealth, host: str, port: int, *, metrics_text: Callable[[], bytes] | None = None
    ) -> None:
        self.health = health
        self._metrics_text = metrics_text
        self._server = ThreadingHTTPServer((host, port), _handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> HealthServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, name="OtelEvalWorkerHttp", daemon=True
        )
        self._thread.start()
        logger.info("serving /healthz, /readyz%s on port %d", ", /metrics" if self._metrics_text else "", self.port)
        return self

    def stop(self) -> None:
        if self._thread is not None:  # shutdown() waits for serve_forever: only when it runs
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def respond(self, path: str) -> tuple[int, str, bytes]:
        """(status, content type, body) of a GET on ``path``."""
        route = path.split("?", 1)[0]
        if route in ("/healthz", "/readyz"):
            problems = self.health.liveness() if route == "/healthz" else self.health.readiness()
            body = ("\n".join(problems) if problems else "ok") + "\n"
            return (503 if problems else 200), "text/plain; charset=utf-8", body.encode()
        if route == "/metrics" and self._metrics_text is not None:
            return 200, "text/plain; version=0.0.4; charset=utf-8", self._metrics_text()
        return 404, "text/plain; charset=utf-8", b"not found\n"


def _handler(server: HealthServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            try:
                status, content_type, body = server.respond(self.path)
            except Exception:  # a broken metrics collection must not kill the endpoint thread
                logger.exception("serving %s failed", self.path)
                status, content_type, body = 500, "text/plain; charset=utf-8", b"internal error\n"
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # probes every few seconds: not worth a log line
            return

    return Handler
