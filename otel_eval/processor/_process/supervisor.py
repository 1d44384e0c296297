"""The evaluation process as its feeder keeps it: started when due, restarted with a backoff when lost, and what was
lost with it accounted for.

A lost child (exited, or its socket broke) is killed; the spans and log records that went with it (those that could
not be written, those written that it never took, and those it held: :mod:`~otel_eval.processor._process.taken`),
and the invocations it had in flight, are dropped and counted (``transport_error``), the next ``force_flush`` fails, and the next child is told to drop whole the traces
the feeder saw a span of within the idle timeout (it would rebuild them into partial invocations). A child that could
not use its configuration is not started again. :class:`~otel_eval.processor._process.feeder.EvaluationProcess`
feeds the child; :mod:`~otel_eval.processor._process.lifecycle` starts, asks and stops it.
"""

from __future__ import annotations

import logging
import time
from operator import itemgetter

from otel_eval import semconv
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.processor._process.lifecycle import EXIT_CANNOT_START, Child, Restarts
from otel_eval.processor._process.messages import ChildSettings, Ended, Start
from otel_eval.processor._process.wire import Origins

logger = logging.getLogger("otel_eval.processor._process.feeder")
"""The feeder's logger (with its duplicate filter): the supervision is the feeder's."""

FORGET_TRACES_SECONDS_MIN = 1.0
"""The shortest idle timeout, and how often quiet traces are forgotten at most."""
_TRACE_OF_END = itemgetter(1)
"""Where an ended span's trace id is in its tuple (:mod:`~otel_eval.processor._process.wire`)."""


class ChildSupervisor:
    """The running child, and what was lost with the ones before it (see the module docs).

    Args:
        settings: What each child's engine is built from.
        pipeline: Where lost spans and log records are counted.
        idle_timeout: How long a trace is remembered after its last span start or end the feeder saw.
    """

    def __init__(self, settings: ChildSettings, pipeline: PipelineMetrics, idle_timeout: float) -> None:
        self._settings = settings
        self._pipeline = pipeline
        self._idle_timeout = max(idle_timeout, FORGET_TRACES_SECONDS_MIN)
        self._restarts = Restarts()
        self.child: Child | None = None
        self.origins = Origins()
        """The numbers of the resources and scopes the running child was sent (a new child gets new ones)."""
        self._seen: dict[int, float] = {}  # trace id -> last span start or end the feeder saw
        self._next_forget = 0.0
        self._lost_some = False  # spans were lost since the last child started: the next one drops their traces
        self.lost_since_flush = False
        """Spans or log records were lost since the last flush: it fails."""
        self.unconfirmed = False
        """The child was sent spans or log records no flush reply has confirmed yet."""

    def running(self, now: float) -> Child | None:
        """The running child: the current one, else a new one when a restart is due; None while there is none."""
        child = self.child
        if child is not None:
            if child.running:
                return child
            self.lost(child, f"exited with code {child.process.returncode}", 0, 0)
        if not self._restarts.due(now):
            return None
        lost = list(self._seen) if self._lost_some else []  # traces that may have lost spans: the child drops them
        try:
            self.child = Child.spawn(self._settings, lost)
        except (OSError, ValueError) as error:  # no interpreter, no fds, ...: counted while it lasts, retried later
            logger.warning(
                "could not start the evaluation process (%s); retrying in %.0f s", error, self._restarts.backoff
            )
            self._restarts.failed(now)
            return None
        self.origins = Origins()
        self._lost_some = False
        self._restarts.started()
        return self.child

    def remember(self, starts: list[Start | int], ends: list[Ended], now: float) -> None:
        """Notes the traces in flight, forgetting those quiet for the idle timeout (at most once a second)."""
        seen = self._seen
        # A start given by its span's position among the ends is of a trace noted with the ends.
        seen.update(dict.fromkeys([start[0] for start in starts if type(start) is tuple], now))
        seen.update(dict.fromkeys(map(_TRACE_OF_END, ends), now))  # in C: no Python step per span
        if now >= self._next_forget:
            self._next_forget = now + FORGET_TRACES_SECONDS_MIN
            quiet = now - self._idle_timeout
            for trace_id in [trace_id for trace_id, last in seen.items() if last < quiet]:
                del seen[trace_id]

    def lost(self, child: Child, what: str, spans: int, records: int) -> None:
        """The child died or stopped reading: kill it, count what went with it (``spans`` and log ``records`` that
        could not be written, and those written that it never took or held), restart it later (never, when it could
        not use its configuration)."""
        self.child = None
        self.lost_since_flush = self.lost_since_flush or self.unconfirmed  # what it had may not be evaluated
        self.unconfirmed = False
        cannot_start = child.exited_with(EXIT_CANNOT_START)
        unfinished = child.kill()
        spans += unfinished.spans
        records += unfinished.records
        self._pipeline.invocations_dropped(semconv.DROP_TRANSPORT_ERROR, unfinished.invocations)
        if cannot_start:
            self.lose(spans, records)
            self._cannot_start()
            return
        self._lost_some = True
        logger.warning(
            "the evaluation process %s; %d span(s) and %d invocation(s) in evaluation lost; the %d trace(s) in "
            "flight are dropped, and a new process starts in %.0f s",
            what,
            spans,
            unfinished.invocations,
            len(self._seen),
            self._restarts.backoff,
        )
        self.lose(spans, records)
        self._restarts.failed(time.monotonic())

    def killed_at_shutdown(self, child: Child) -> None:
        """The child did not answer the shutdown in time: killed, and what it had not finished with counted."""
        self.child = None
        unfinished = child.kill()
        logger.warning(
            "the evaluation process did not stop within the shutdown timeout; killed: %d span(s) and %d "
            "invocation(s) in evaluation lost",
            unfinished.spans,
            unfinished.invocations,
        )
        self.lose(unfinished.spans, unfinished.records)
        self._pipeline.invocations_dropped(semconv.DROP_TRANSPORT_ERROR, unfinished.invocations)

    def lose(self, spans: int, records: int) -> None:
        """``spans`` and log ``records`` did not reach a child: counted, their traces dropped by the next one."""
        self._lost_some = self._lost_some or bool(spans or records)
        self.lost_since_flush = self.lost_since_flush or bool(spans or records)
        self._pipeline.spans_dropped(semconv.DROP_TRANSPORT_ERROR, spans)
        self._pipeline.log_records_dropped(semconv.DROP_TRANSPORT_ERROR, records)

    def _cannot_start(self) -> None:
        """The child could not use its configuration (it said why): none starts again, every span is dropped."""
        self._lost_some = True
        self._restarts.stop()
        logger.error(
            "the evaluation process cannot start (its error above) and is not started again: nothing is evaluated; "
            "the spans are dropped (otel_eval.spans.dropped{otel_eval.drop.reason=%s})",
            semconv.DROP_TRANSPORT_ERROR,
        )
