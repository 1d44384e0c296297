"""An :class:`InvocationExporter` that keeps requests in a list, for tests (as ``InMemorySpanExporter``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from otel_eval.model.messages import EvaluationRequest
from otel_eval.transport.base import ExportResult, InvocationExporter


class InMemoryInvocationExporter(InvocationExporter):
    """Stores every exported request; :meth:`get_finished_requests` returns them in export order."""

    def __init__(self) -> None:
        self._requests: list[EvaluationRequest] = []
        self._lock = threading.Lock()
        self._stopped = False

    def export(self, requests: Sequence[EvaluationRequest]) -> ExportResult:
        """Appends ``requests``; FAILURE after :meth:`shutdown`."""
        if self._stopped:
            return ExportResult.FAILURE
        with self._lock:
            self._requests.extend(requests)
        return ExportResult.SUCCESS

    def get_finished_requests(self) -> list[EvaluationRequest]:
        """A copy of the requests exported so far."""
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        """Forgets the stored requests."""
        with self._lock:
            self._requests.clear()

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """Rejects further exports; the stored requests stay readable."""
        self._stopped = True
