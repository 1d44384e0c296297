"""The agent's side of ``isolation="process"``: span starts and ends shipped to a child process that evaluates them.

With the default ``isolation="thread"`` the rebuild, the metrics and the emission of the scores run on background
threads of the agent's process, where they share its GIL (and its CPU) with the agent. With ``"process"``,
:class:`EvaluationProcess` does what a ``BatchSpanProcessor`` does: ``on_start``/``on_end`` append to bounded
queues; a daemon thread (``OtelEvalProcessFeeder``) turns each batch into plain tuples
(:mod:`otel_eval.processor._process.wire`) and writes one frame to a private socket. The child
(``python -m otel_eval.processor._process.main``, started by :mod:`otel_eval.processor._process.lifecycle`) runs an ordinary in-thread
:class:`~otel_eval.EvaluationSpanProcessor` on what it reads, with its own tracer, logger and meter providers
exporting as ``OTEL_TRACES_EXPORTER`` / ``OTEL_LOGS_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` say, so a trace scores
the same in both modes.

Failures never reach the agent: a child that cannot start or exits is restarted (at most once a second, then
backing off to 30 s); the spans it lost, and those of traces it had seen part of (which would rebuild into partial
invocations), are dropped and counted (``otel_eval.spans.dropped{otel_eval.drop.reason=transport_error}``;
:mod:`otel_eval.processor._process.supervisor`). When
the socket is not writable (the kernel's own test: a quarter of its buffer holds what the child has not read yet),
the child cannot keep up: the agent's process stops encoding rather than wait, ``on_end`` sheds spans, and their
traces are dropped whole on both sides and counted (``transport_queue_full``), as the in-thread processor sheds
when its worker's queue is full. ``force_flush`` and ``shutdown`` cross the process boundary within the caller's timeout. After ``os.fork`` the child
process belongs to the parent: a forked agent process starts its own on its first span.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span

from otel_eval import semconv
from otel_eval._runtime.collector import collections_deferred
from otel_eval._runtime.forking import reinit_after_fork
from otel_eval._runtime.log_filters import DuplicateLogFilter
from otel_eval.emit import RecordSink
from otel_eval.emit.enrichment import RootSpanEnricher
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.processor._intake import MAX_SHED_TRACES, SpanIntake, WakeSchedule, drain, millis_until
from otel_eval.processor._logs import EvaluationLogRecordProcessor
from otel_eval.processor._process.framing import WireError, send_message
from otel_eval.processor._process.lifecycle import Child
from otel_eval.processor._process.messages import (
    Batch,
    ChildSettings,
    Enriched,
    Flush,
    FromChild,
    Records,
    Shutdown,
    ToChild,
)
from otel_eval.processor._process.supervisor import ChildSupervisor
from otel_eval.processor._process.wire import encode_log_record, encode_span, encode_starts
from otel_eval.processor._selection import Sampling

logger = logging.getLogger(__name__)
logger.addFilter(DuplicateLogFilter())

_TICK_SECONDS = 0.05
"""The feeder's period: spans of a root that waits for its descendants reach the child at most this late."""
_WAKE_BATCH_SPANS = 256
"""Shed trace ids kept for the next batch at most (the child drops them whole)."""

_KILL_MARGIN_SECONDS = 0.25
"""How much sooner than the caller's shutdown deadline the feeder stops waiting for the evaluation process's answer
(at most a tenth of the time), to kill it and count what went with it within the caller's timeout."""
_KILLED_JOIN_SECONDS = 0.5
"""How long ``shutdown`` waits past its deadline, after killing the evaluation process, for the feeder to finish
counting what went with it (a killed process is reaped within milliseconds; this is only for a busy host)."""
_CHILD_MARGIN_MILLIS = 2000
"""How much sooner than its caller's the evaluation process's flush or shutdown deadline is (at most a fifth of the
time): :func:`_sooner`."""


@dataclass(slots=True)
class _Flush:
    deadline: float
    done: threading.Event = field(default_factory=threading.Event)
    result: bool = False


class EvaluationProcess:
    """Feeds a child evaluation process (see the module docs); the processor delegates its hooks here.

    Args:
        settings: What the child's engine is built from (picklable).
        meter_provider: Where the agent-side counters (:attr:`pipeline`: spans dropped at intake, shed, or lost
            with a child) go.
        max_pending: Starts, ends and log records waiting for the feeder, each; beyond, new ones are dropped.
        sampling: Which traces are evaluated: its intake bound is what ``on_start``/``on_end`` apply, and the
            companion ``LogRecordProcessor``'s (:attr:`log_record_processor`), whose queue is shipped along.
        idle_timeout: How long the feeder remembers a trace it has seen a span of (to drop the rest of it when the
            child that had its first spans is lost).
        enricher: With ``enrich=``, the enricher holding the root spans here: the child's own enricher decides when
            each is complete and sends its score attributes (:class:`~otel_eval.processor._process.messages.Enriched`).
        sinks: Called here with each request's records, which the child sends back
            (:class:`~otel_eval.processor._process.messages.Records`).
    """

    def __init__(
        self,
        settings: ChildSettings,
        *,
        meter_provider: MeterProvider | None,
        max_pending: int,
        sampling: Sampling,
        idle_timeout: float,
        enricher: RootSpanEnricher | None = None,
        sinks: Sequence[RecordSink] = (),
    ) -> None:
        try:
            pickle.dumps(settings)
        except (pickle.PicklingError, TypeError, AttributeError) as error:  # say so at start-up, not in the child
            raise TypeError(f"the processor's settings cannot be sent to the evaluation process: {error}") from None
        self._settings = settings
        self._enricher = enricher
        self._sinks = sinks
        self._answers = enricher is not None or bool(sinks)
        """Whether the child sends anything besides its replies (score attributes, records): then looked for."""
        self.pipeline = PipelineMetrics(meter_provider, transport=semconv.TRANSPORT_PROCESS)
        self._max_pending = max_pending
        self._intake = SpanIntake(
            max_pending=max_pending, sampling=sampling, wake_batch=_WAKE_BATCH_SPANS, enricher=enricher
        )
        self.log_record_processor = EvaluationLogRecordProcessor(
            max_pending=max_pending, sample_bound=sampling.intake_bound
        )
        self.on_start: Callable[[Span, Context | None], None] = self._intake.on_start
        """Queues a sampled span's start (:mod:`otel_eval.processor._intake`). Never blocks, never raises."""
        self.on_end: Callable[[ReadableSpan], None] = self._intake.on_end
        """Queues a sampled ended span (:mod:`otel_eval.processor._intake`). Never blocks, never raises."""
        self._idle_timeout = idle_timeout
        self._closing = False
        self._stop_deadline = 0.0
        self._stop_answered = False
        self.child_stats: dict[str, int] = {}
        """The evaluation process's :meth:`~otel_eval.EvaluationSpanProcessor.stats`, as of its last flush reply."""
        self._start()
        reinit_after_fork(self._at_fork_reinit)

    def _start(self) -> None:
        self._intake.reset()
        self._lock = threading.Lock()
        self._flushes: list[_Flush] = []
        self._supervisor = ChildSupervisor(self._settings, self.pipeline, self._idle_timeout)
        self._dropped_traces: dict[int, str] = {}  # a span of each dropped here, with the reason: dropped whole
        self._thread = threading.Thread(name="OtelEvalProcessFeeder", target=self._run, daemon=True)
        self._thread.start()

    def _at_fork_reinit(self) -> None:
        # The child process, its socket and the feeder thread are the parent's: start afresh, lazily.
        child = self._supervisor.child
        if child is not None:
            with contextlib.suppress(OSError):
                child.sock.close()  # this process's copy only: the parent's connection stays open
            child.counts.close()
        if not self._closing:
            self._start()

    @property
    def pid(self) -> int | None:
        """The evaluation process's id, while one runs."""
        child = self._supervisor.child
        return child.process.pid if child is not None else None

    # --- the agent's threads -----------------------------------------------------------------------------------

    # ``on_start`` and ``on_end`` are the intake's own (bound in ``__init__``: one call less on every span).

    # --- flush and shutdown ------------------------------------------------------------------------------------

    def force_flush(self, timeout_millis: int) -> bool:
        """Ships what is queued, then waits until the child has evaluated and exported it. False past the timeout, or
        when what was handed on since the previous flush was lost with a child (once per loss: see the processor's)."""
        flush = _Flush(deadline=time.monotonic() + max(0, timeout_millis) / 1000)
        with self._lock:
            self._flushes.append(flush)
        self._intake.wake.set()
        flush.done.wait(max(0.0, flush.deadline - time.monotonic()))
        flushed = flush.done.is_set() and flush.result
        if self._enricher is not None:
            flushed = self._enricher.force_flush(millis_until(flush.deadline)) and flushed
        return flushed

    def shutdown(self, timeout_millis: int) -> None:
        """Ships what is queued, lets the child drain and export within ``timeout_millis``, then stops it: one that
        did not answer is killed, and what it had is counted (waiting for that at most :data:`_KILLED_JOIN_SECONDS`
        past the timeout)."""
        deadline = time.monotonic() + max(0, timeout_millis) / 1000
        self._stop_deadline = deadline
        self._closing = True
        self._intake.closed = True
        self._intake.wake.set()
        self._thread.join(max(0.0, deadline - time.monotonic()))
        child = self._supervisor.child
        if child is not None and child.process.poll() is None and time.monotonic() >= deadline:
            if self._stop_answered:  # its account is in: only the interpreter's own teardown is cut short
                logger.debug("the evaluation process answered the shutdown but was still exiting; killed")
            child.process.kill()
        if self._thread.is_alive():  # it counts what went with a child that did not answer (the kill unblocks it)
            self._thread.join(_KILLED_JOIN_SECONDS)
        if self._enricher is not None:
            self._enricher.shutdown(millis_until(deadline))

    def stats(self) -> dict[str, int]:
        """This process's counts, and the evaluation process's as of the last ``force_flush`` (``evaluation_process.``
        before each name)."""
        counts = self.pipeline.snapshot()
        counts.update((f"evaluation_process.{name}", value) for name, value in self.child_stats.items())
        return counts

    # --- the feeder thread -------------------------------------------------------------------------------------

    def _run(self) -> None:
        # No lingering for more after a wake-up: a sleep costs as much CPU as a batch's encoding, and what ends
        # while a batch is written goes in the next one (under load, batches grow by themselves).
        schedule = WakeSchedule(self._intake, tick=_TICK_SECONDS)
        while True:
            schedule.wait()
            if self._intake.ends:
                schedule.busy()
            with self._lock:
                flushes, self._flushes = self._flushes, []
            closing = self._closing
            try:
                waits = bool(flushes) or closing
                # The collections due while a batch is encoded, the agent's included, run on this thread after it;
                # not around a write that may wait for the child.
                with contextlib.nullcontext() if waits else collections_deferred():
                    if self._answers:
                        self._receive()
                    self._send_pending(wait=waits)
                supervisor = self._supervisor
                for flush in flushes:
                    flush.result = self._flush_child(flush.deadline) and not supervisor.lost_since_flush
                supervisor.lost_since_flush = supervisor.lost_since_flush and not flushes  # each loss fails one flush
                if self._enricher is not None:
                    self._enricher.release_expired()
            except Exception:  # the thread boundary: log and carry on
                logger.exception("the evaluation process feeder failed")
            for flush in flushes:
                flush.done.set()
            if closing:
                self._stop_child()
                return

    def _send_pending(self, *, wait: bool) -> None:
        """Sends what is queued as one batch.

        Unless ``wait`` (a flush or the shutdown waits for it), a child that has not read what was sent is not
        waited for: the queue holds the spans up to half its size; beyond, the spans are shed (:meth:`_shed`).
        """
        intake = self._intake
        dropped, full_traces = intake.take_dropped()
        self.pipeline.spans_dropped(semconv.DROP_QUEUE_FULL, dropped)
        self._note_dropped(full_traces, semconv.DROP_QUEUE_FULL)
        log_queue = self.log_record_processor.queue
        self.pipeline.log_records_dropped(semconv.DROP_QUEUE_FULL, self.log_record_processor.take_dropped())
        ended = len(intake.ends)  # every span counted here started before: its start is among those drained next
        # Starts alone make no batch (a batch costs both processes a write, a read and a step): they matter only to
        # the ends that follow them, and go with those (or with a flush, or once they fill half the queue).
        starts = len(intake.starts)
        if not (ended or log_queue or intake.shedder.active or (starts and (wait or starts >= self._max_pending // 2))):
            return
        now = time.monotonic()
        supervisor = self._supervisor
        child = supervisor.running(now)  # first: a new child gets new origin numbers
        if child is not None and not wait and self._behind(child):
            if intake.shedder.active or ended >= self._max_pending // 2:
                self._shed(ended)
            return
        shed_spans, shed_traces = intake.shedder.take(full=False)
        self.pipeline.spans_dropped(semconv.DROP_TRANSPORT_QUEUE_FULL, shed_spans)
        self._note_dropped(shed_traces, semconv.DROP_TRANSPORT_QUEUE_FULL)
        origins = supervisor.origins
        starts_taken = list(drain(intake.starts, len(intake.starts)))
        ends_taken = list(drain(intake.ends, ended))
        encoded_starts = encode_starts(starts_taken, ends_taken, origins)
        encoded_ends = [encode_span(span, origins) for span in ends_taken]
        records = list(drain(log_queue, len(log_queue)))
        supervisor.remember(encoded_starts, encoded_ends, now)
        if child is None:
            supervisor.lose(len(encoded_ends), len(records))
            return
        logs = [encode_log_record(record) for record in records]
        dropped_traces, self._dropped_traces = self._dropped_traces, {}
        try:
            send_message(child.sock, Batch(encoded_starts, encoded_ends, logs, origins.take_new(), dropped_traces))
        except (OSError, ValueError) as error:
            supervisor.lost(child, f"could not be written to ({error})", len(encoded_ends), len(logs))
            return
        child.counts.sent(len(encoded_ends), len(logs))
        supervisor.unconfirmed = supervisor.unconfirmed or bool(encoded_ends or logs)

    def _shed(self, ended: int) -> None:
        """The child is behind and the queue half full: ``on_end`` sheds from now on, and what is queued goes too;
        the traces are dropped whole, here and in the child (their ids go with the next batch)."""
        intake = self._intake
        intake.shedder.start()
        shed_spans, shed_traces = intake.shedder.take(full=True)
        for span in drain(intake.ends, ended):
            shed_traces.append(span.get_span_context().trace_id)  # type: ignore[union-attr]
            shed_spans += 1
        intake.starts.clear()  # spans still open then go untracked: their roots complete when they end
        records = self.log_record_processor.queue
        self.pipeline.log_records_dropped(semconv.DROP_TRANSPORT_QUEUE_FULL, len(records))
        records.clear()
        self.pipeline.spans_dropped(semconv.DROP_TRANSPORT_QUEUE_FULL, shed_spans)
        self._note_dropped(shed_traces, semconv.DROP_TRANSPORT_QUEUE_FULL)

    def _note_dropped(self, trace_ids: list[int], reason: str) -> None:
        """The child drops these traces whole (their ids go with the next batch; the first reason noted stays)."""
        if trace_ids and len(self._dropped_traces) < MAX_SHED_TRACES:
            self._dropped_traces.update(
                (trace_id, reason) for trace_id in trace_ids if trace_id not in self._dropped_traces
            )

    def _receive(self) -> None:
        """Takes in what the child sent on its own (the score attributes of enriched roots), without waiting."""
        child = self._supervisor.child
        if child is None:
            return
        try:
            for message in child.sent_on_its_own():
                self._dispatch(message)
        except (OSError, WireError, ValueError) as error:
            self._supervisor.lost(child, f"could not be read from ({error})", 0, 0)

    def _dispatch(self, message: ToChild | FromChild) -> None:
        if isinstance(message, Enriched):
            if self._enricher is not None:
                self._enricher.complete(message.trace_id, message.span_id, message.scores)
        elif isinstance(message, Records):
            for sink in self._sinks:
                try:
                    sink(message.records)
                except Exception:  # the user's sink: its failure must not stop the feeder
                    logger.exception("a record sink failed")
        else:
            raise WireError(f"unexpected {type(message).__name__} from the evaluation process")

    def _behind(self, child: Child) -> bool:
        """Whether the child has not read enough of what was sent for another batch to go without waiting."""
        try:
            return child.behind()
        except (OSError, ValueError) as error:
            self._supervisor.lost(child, f"could not be polled ({error})", 0, 0)
            return False

    def _flush_child(self, deadline: float) -> bool:
        child = self._supervisor.child
        if child is None:
            return True  # nothing in flight (what a lost child had is counted)
        child.requests += 1
        return self._ask(child, Flush(_sooner(deadline), child.requests, time.time()), deadline)

    def _ask(self, child: Child, message: Flush | Shutdown, deadline: float) -> bool:
        """Sends a control message and waits for its reply until ``deadline``; False past it, or on a lost child."""
        try:
            reply = child.ask(message, deadline, self._dispatch)
        except (OSError, WireError, ValueError) as error:
            self._supervisor.lost(child, f"did not answer ({error})", 0, 0)
            return False
        if reply is None:
            return False
        self.child_stats = reply.stats
        if reply.ok and isinstance(message, Flush):
            self._supervisor.unconfirmed = False  # everything sent before the flush was evaluated
        return reply.ok

    def _stop_child(self) -> None:
        deadline = self._stop_deadline
        left = len(self._intake.ends)
        if left:
            self.pipeline.spans_dropped(semconv.DROP_SHUTDOWN, left)
            self._intake.ends.clear()
        child = self._supervisor.child
        if child is None:
            return
        child.requests += 1
        answer_by = deadline - min(_KILL_MARGIN_SECONDS, max(0.0, deadline - time.monotonic()) / 10)
        self._stop_answered = self._ask(child, Shutdown(_sooner(deadline), child.requests, time.time()), answer_by)
        if self._supervisor.child is not child:
            return  # lost meanwhile: killed, and what went with it counted
        if self._stop_answered:
            child.close(deadline)  # it counted what it could not evaluate
        else:
            self._supervisor.killed_at_shutdown(child)


def _sooner(deadline: float) -> int:
    """The evaluation process's own timeout for a flush or shutdown whose caller's deadline is ``deadline``: shorter,
    so that it answers (and, at shutdown, says and counts what it could not evaluate, and exports its last telemetry)
    while this side still waits, and is free for the next message, instead of being killed or answering too late."""
    remaining = millis_until(deadline)
    return remaining - min(_CHILD_MARGIN_MILLIS, remaining // 5)
