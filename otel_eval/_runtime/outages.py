"""Outages of a peer the process talks to (a Kafka broker, a score backend), told in few log lines.

:class:`OutageMonitor` turns failed attempts into at most three kinds of lines: one WARNING when the peer becomes
unreachable (where it is, never credentials), a summary WARNING at most once per ``summary_interval`` while it stays
so (attempts and the owner's counts), and one INFO when it is back. The Kafka transport and the backend score sinks
use it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Final

SUMMARY_INTERVAL_S: Final = 60.0
"""At most one summary line per this many seconds while the peer stays unreachable."""


class OutageMonitor:
    """The reachability of a peer (a Kafka broker, a backend), and the few log lines that report it.

    Args:
        what: who is talking to the peer, for the log lines (``Kafka exporter``, ``worker``, ``phoenix sink``).
        servers: where the peer is (``host:port`` or a URL: never with credentials).
        logger: where the lines go.
        peer: the peer's word in the lines (``Kafka broker``, ``backend``).
        retrying: what the owner does meanwhile, in the first line (default ``retrying quietly``).
        counts: the owner's counts for the summary line (e.g. requests held and dropped), read when it is written.
        on_attempt: called after each failed attempt is counted (the owner's counter, waking its probe).
        redact: scrubs secrets from the text of aiokafka's records before they are kept.
        summary_interval: seconds between summary lines while unreachable.
        clock: monotonic seconds.
    """

    def __init__(
        self,
        what: str,
        servers: Sequence[str],
        logger: logging.Logger,
        *,
        peer: str,
        retrying: str = "retrying quietly",
        counts: Callable[[], Mapping[str, int]] | None = None,
        on_attempt: Callable[[], None] | None = None,
        redact: Callable[[str], str] = str,
        summary_interval: float = SUMMARY_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._what = what
        self._peer = peer
        self._retrying = retrying
        self._servers = ",".join(servers)
        self._logger = logger
        self._counts = counts or dict
        self._on_attempt = on_attempt
        self._redact = redact
        self._summary_interval = summary_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None
        self._last_summary = 0.0
        self._attempts = 0
        self._outage_attempts = 0
        self._last_error = ""
        self._outages = 0
        self.suspect = False
        """A failed attempt was seen and no answer since: the owner should check with a probe."""

    @property
    def unavailable(self) -> bool:
        """Whether the peer is considered unreachable now."""
        return self._since is not None

    @property
    def attempts(self) -> int:
        """Failed attempts since this monitor was created."""
        return self._attempts

    @property
    def outages(self) -> int:
        """How many times the peer became unreachable."""
        return self._outages

    def outage_seconds(self) -> float:
        """Seconds since the peer became unreachable; 0 while it is reachable."""
        since = self._since
        return 0.0 if since is None else max(0.0, self._clock() - since)

    def attempt_failed(self, error: str = "") -> None:
        """Counts one failed attempt (an error of the owner's clients, a timed-out request)."""
        with self._lock:
            self._attempts += 1
            if self._since is not None:
                self._outage_attempts += 1
            if error:
                self._last_error = error
        self.suspect = True
        if self._on_attempt is not None:
            self._on_attempt()

    def client_record(self, record: logging.LogRecord) -> bool:
        """One log record of the owner's client library (aiokafka's, see
        :func:`otel_eval.transport.quiet_client_logs`): a failed attempt when it is a WARNING or worse; its text goes
        to the owner's logger at DEBUG. Returns whether it made the monitor suspect (it was not before)."""
        message = self._redact(record.getMessage())
        was_suspect = self.suspect
        if record.levelno >= logging.WARNING:
            self.attempt_failed(message)
        if self._logger.isEnabledFor(logging.DEBUG):
            self._logger.debug("%s %s: %s", record.name.partition(".")[0], record.levelname, message)
        return self.suspect and not was_suspect

    def unreachable(self, error: str) -> None:
        """A failed attempt, by an operation that needed the peer (a probe, a send): starts the outage, logging the
        WARNING once per outage."""
        self.attempt_failed(error)
        self._logger.debug("%s did not answer: %s", self._peer, error)
        with self._lock:
            if self._since is not None:
                return
            self._since = self._last_summary = self._clock()
            self._outage_attempts = 0
            self._outages += 1
            self._last_error = error or self._last_error
        self._logger.warning(
            "%s: %s unreachable at %s (%s); %s, a summary follows every %.0f s while it lasts",
            self._what,
            self._peer,
            self._servers,
            error or "no answer",
            self._retrying,
            self._summary_interval,
        )

    def reachable(self) -> None:
        """The peer answered: logs the INFO once when it ends an outage."""
        self.suspect = False
        with self._lock:
            since, self._since = self._since, None
            attempts = self._outage_attempts
        if since is not None:
            self._logger.info(
                "%s: %s at %s reachable again after %.1f s (%d failed attempts; %s)",
                self._what,
                self._peer,
                self._servers,
                self._clock() - since,
                attempts,
                self._format_counts(),
            )

    def tick(self) -> None:
        """Writes the summary line when one is due. Call it regularly (every few seconds) while unreachable."""
        with self._lock:
            since = self._since
            now = self._clock()
            if since is None or now - self._last_summary < self._summary_interval:
                return
            self._last_summary = now
            attempts, error = self._outage_attempts, self._last_error
        self._logger.warning(
            "%s: %s at %s still unreachable after %.0f s: %d failed attempts; %s; last error: %s",
            self._what,
            self._peer,
            self._servers,
            now - since,
            attempts,
            self._format_counts(),
            error or "no answer",
        )

    def _format_counts(self) -> str:
        try:
            counts = self._counts()
        except Exception:  # noqa: BLE001 - the summary line must not fail on a broken callback
            return "counts unavailable"
        return ", ".join(f"{value} {name}" for name, value in counts.items()) or "nothing held"


__all__ = ["SUMMARY_INTERVAL_S", "OutageMonitor"]
