"""Logging filters shared by the package's modules."""

from __future__ import annotations

import logging
import time

from otel_eval._runtime.urls import redact_queries


class DuplicateLogFilter(logging.Filter):
    """Drops repeats of the same log message within 20 s, as the SDK's export logger does: no log storms when a
    queue stays full or a transport stays down. Add it to a module logger with ``logger.addFilter(...)``."""

    def __init__(self) -> None:
        super().__init__()
        self._last: tuple[object, ...] | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        """False for a repeat of the previous record's module, level and message template within the 20 s bucket."""
        current = (record.module, record.levelno, record.msg, time.time() // 20)
        if current == self._last:
            return False
        self._last = current
        return True


class RedactUrlQueries(logging.Filter):
    """Replaces every URL query in a record's message with ``?***`` (the OTLP exporters' retry warnings print the
    endpoint, query string included). On a logger it sees that logger's own records; on a handler, every record the
    handler writes."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_queries(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True
