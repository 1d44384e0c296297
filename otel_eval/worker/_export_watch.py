"""``ExportWatch``: the few log lines that say the worker's OTLP exports are failing (the Collector down or hung)
and when they succeed again, and ``/readyz`` meanwhile.

The SDK's OTLP exporters log each retry of each export (a line a second or more while the Collector is down) and
go on; the worker commits its batches anyway (the results topic holds every result). The watch says it once: one
WARNING per signal when its exports start failing, one INFO when one succeeds again; the exporters' own lines are
kept to one a minute per exporter meanwhile, and ``/readyz`` fails while any signal's latest export failed (one
endpoint down, another up: not ready until the one is back). A success at an endpoint's host clears every signal
sent there: the metrics export every ``OTEL_METRIC_EXPORT_INTERVAL``, traffic or not, so an idle worker is ready
again once its Collector is.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import Final

from otel_eval.worker.health import WorkerHealth
from otel_eval.worker.telemetry import WorkerTelemetry

logger = logging.getLogger(__name__)

EXPORTER_LINE_SECONDS: Final = 60.0
"""At most one log line per OTLP exporter module in this many seconds."""
_EXPORTER_MODULES: Final = "opentelemetry.exporter.otlp.proto."


class _OncePerInterval(logging.Filter):
    def __init__(self, seconds: float, clock: Callable[[], float]) -> None:
        super().__init__()
        self._seconds = seconds
        self._clock = clock
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        now = self._clock()
        last = self._last.get(record.name)
        if last is not None and now - last < self._seconds:
            return False
        self._last[record.name] = now
        return True


class ExportWatch:
    """Watches ``telemetry``'s OTLP exports for ``health`` and the log (see the module's docstring)."""

    def __init__(
        self, telemetry: WorkerTelemetry, health: WorkerHealth, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._telemetry = telemetry
        self._health = health
        self._failing: dict[str, str] = {}
        self._filter = _OncePerInterval(EXPORTER_LINE_SECONDS, clock)
        self._loggers: list[logging.Logger] = []

    def start(self) -> None:
        """Keeps the OTLP exporters' own lines to one a minute each (their modules are imported by now)."""
        names = [name for name in sys.modules if name.startswith(_EXPORTER_MODULES)]
        self._loggers = [logging.getLogger(name) for name in names]
        for each in self._loggers:
            each.addFilter(self._filter)

    def stop(self) -> None:
        for each in self._loggers:
            each.removeFilter(self._filter)
        self._loggers = []

    def check(self) -> None:
        """Logs what started failing or succeeded again since the last check; tells ``/readyz``."""
        failing = self._telemetry.exports.snapshot()
        for signal, endpoint in sorted(failing.items()):
            if signal not in self._failing:
                logger.warning(
                    "telemetry export of %s to %s failing: they are not reaching the backend (the results topic "
                    "still gets every result); /readyz fails until exports succeed",
                    signal,
                    endpoint,
                )
        for signal, endpoint in sorted(self._failing.items()):
            if signal not in failing:
                logger.info("telemetry export of %s to %s succeeded again", signal, endpoint)
        self._failing = failing
        self._health.exports_failing = bool(failing)
