"""The evaluation process of ``isolation="process"``: ``python -m otel_eval.processor._process.main FD``.

Started by :class:`~otel_eval.processor._process.feeder.EvaluationProcess` with one end of a private socket
pair. It reads the processor's settings, then batches of span starts, ended spans and content log records, and feeds
them to the in-thread engine of an ordinary processor (:func:`~otel_eval.processor._thread_engine.in_thread_engine`:
``on_start``, ``on_end``, its ``log_record_processor``), stepping it on the same thread after each batch (and when
nothing came for the engine's period), so a batch is not handed from a reader thread to an engine thread; the scores go to providers exporting as the ``OTEL_*_EXPORTER`` variables say
(:mod:`otel_eval.processor._process.exporters`) with the agent's resource (its metrics with a ``service.instance.id``
of their own). A ``flush`` or ``shutdown`` message is answered
once the processor and the exporters are done. The end of the socket (the agent's process exited, or was killed)
shuts it down as well. SIGINT is ignored: a Ctrl-C in the agent's terminal reaches the whole process group, and
the agent's own shutdown drains this process. It runs at a lower priority (``nice`` 10) than the agent.
"""

from __future__ import annotations

import gc
import logging
import os
import queue
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from otel_eval import semconv
from otel_eval._runtime.log_filters import RedactUrlQueries
from otel_eval.emit.enrichment import is_enrichment_attribute
from otel_eval.errors import ConfigurationError
from otel_eval.processor._intake import millis_until
from otel_eval.processor._process.exporters import ExportingProviders
from otel_eval.processor._process.framing import WireError, receive_message, send_message
from otel_eval.processor._process.lifecycle import EXIT_CANNOT_START
from otel_eval.processor._process.messages import (
    Batch,
    ChildSettings,
    Config,
    Enriched,
    Flush,
    FromChild,
    Records,
    Reply,
    Shutdown,
    time_left_millis,
)
from otel_eval.processor._process.taken import TakenCounts
from otel_eval.processor._process.wire import SpanDecoder, decode_log_record
from otel_eval.processor._settings import EngineOptions
from otel_eval.processor._thread_engine import InThreadEngine, in_thread_engine

logger = logging.getLogger("otel_eval.processor.evaluation_process")

_SHUTDOWN_ON_EOF_MILLIS = 30_000
_OUTBOX_CLOSE_SECONDS = 5.0
_NICENESS = 10
"""Evaluation is background work: where it competes with the agent for a core, the agent gets ~90% of it (the
evaluation then falls behind, and its queues drop and count what does not fit)."""
_NO_ENRICHMENT_WAIT_SECONDS = 5.0
"""Without ``enrich=`` nothing is held; the value only bounds the engine's idle period, as the processor's default."""


class _RootRelay(SpanProcessor):
    """What the processor's enricher exports here (``enrich=`` in the agent's process): for each local root, its
    score attributes, sent to the agent's process, whose enricher holds the real root span and exports it with them.
    Every other span (which the enricher passes through) is not the agent's concern: it exports its own."""

    def __init__(self, send: Callable[[FromChild], None]) -> None:
        self._send = send

    def on_end(self, span: ReadableSpan) -> None:
        context, parent = span.context, span.parent
        if context is not None and (parent is None or parent.is_remote):
            scores = {key: value for key, value in (span.attributes or {}).items() if is_enrichment_attribute(key)}
            self._send(Enriched(context.trace_id, context.span_id, scores))


class _Evaluation:
    """The processor and its providers, made when the first batch brings the agent's resource."""

    def __init__(
        self, settings: ChildSettings, lost_traces: list[int], send: Callable[[FromChild], None], taken: TakenCounts
    ) -> None:
        self._send = send
        self._taken = taken
        self._settings = settings
        self._decoder = SpanDecoder()
        self._lost_traces = lost_traces
        self.processor: InThreadEngine | None = None
        self.providers: ExportingProviders | None = None

    def batch(self, batch: Batch) -> None:
        """Feeds a batch to the engine: first the traces the agent's process dropped a span of (dropped whole),
        then the starts, the ends and the content log records."""
        starts, ends, logs, origins, dropped = batch
        decoder = self._decoder
        decoder.add_origins(origins)
        processor = self.processor
        if processor is None:
            processor = self._start(decoder, ends)
        for trace_id, reason in dropped.items():
            processor.reject_traces((trace_id,), reason)
        try:
            ended = list(map(decoder.span, ends))
            processor.queue_batch(decoder.starts(starts, ended), ended)
            for record in logs:
                processor.log_record_processor.on_emit(decode_log_record(record))
        except Exception:  # a span the engine cannot take: the rest of the batch is lost, the process goes on
            logger.exception("the evaluation engine could not take a batch")
        processor.step()

    def held(self) -> tuple[int, int]:
        """The ended spans and log records the engine holds, neither evaluated nor dropped yet."""
        return self.processor.held() if self.processor is not None else (0, 0)

    def step(self) -> None:
        """Runs the engine's periodic step (idle traces, roots waiting for descendants), once it exists."""
        if self.processor is not None:
            self.processor.step()

    @property
    def period(self) -> float | None:
        """How long the reader may wait for a message before the engine's next step is due (None: no engine yet)."""
        return self.processor.period if self.processor is not None else None

    def _start(self, decoder: SpanDecoder, ends: list[Any]) -> InThreadEngine:
        resource = decoder.resource(ends[0][-1] if ends else 0)
        self.providers = providers = ExportingProviders(resource)
        child = self._settings
        wait = child.enrichment_wait_seconds
        options = EngineOptions(
            child.criteria,
            child.settings,
            enrich=_RootRelay(self._send) if wait is not None else None,
            enrichment_wait_seconds=_NO_ENRICHMENT_WAIT_SECONDS if wait is None else wait,
            # the agent's process has sinks: each request's records go back to them
            sinks=[lambda records: self._send(Records(list(records)))] if child.relay_records else (),
            tracer_provider=providers.tracer_provider,
            logger_provider=providers.logger_provider,
            meter_provider=providers.meter_provider,
        )
        self.processor = in_thread_engine(options, threaded=False)
        self.processor.exporter.report_unfinished(self._taken.in_flight)
        # Traces an earlier evaluation process had part of when it was lost: their rest would rebuild half.
        self.processor.reject_traces(self._lost_traces, semconv.DROP_TRANSPORT_ERROR)
        # What start-up made (modules, metrics, providers) lives as long as the process: kept out of the collector's
        # passes, which would otherwise walk it on every full collection.
        gc.freeze()
        return self.processor

    def flush(self, timeout_millis: int) -> bool:
        if self.processor is None or self.providers is None:
            return True
        deadline = time.monotonic() + timeout_millis / 1000
        flushed = self.processor.force_flush(timeout_millis)
        return self.providers.force_flush(millis_until(deadline)) and flushed

    def stats(self) -> dict[str, int]:
        """The processor's counts (:meth:`EvaluationSpanProcessor.stats`), empty before the first batch."""
        return self.processor.stats() if self.processor is not None else {}

    def shutdown(self, timeout_millis: int) -> None:
        if self.processor is not None:
            self.processor.shutdown(timeout_millis)
            self._taken.hold(*self.held())  # what it could not evaluate it counted itself
        if self.providers is not None:
            self.providers.shutdown()


class _Outbox:
    """Messages to the agent's process, in order, written by a thread of their own: the reader, which evaluates too,
    never waits on a write (the agent's process may be waiting to write a batch to it meanwhile)."""

    def __init__(self, sock: socket.socket) -> None:
        self._queue: queue.SimpleQueue[FromChild | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, args=(sock,), name="OtelEvalProcessOutbox", daemon=True)
        self._thread.start()

    def send(self, message: FromChild) -> None:
        """Queues ``message`` (any thread: the reader's replies, the engine's score attributes and records)."""
        self._queue.put(message)

    def close(self, timeout: float) -> None:
        """Writes what is queued, within ``timeout`` seconds."""
        self._queue.put(None)
        self._thread.join(timeout)

    def _run(self, sock: socket.socket) -> None:
        while (message := self._queue.get()) is not None:
            try:
                send_message(sock, message)
            except (OSError, ValueError) as error:  # the agent's process is gone: the reader sees it too
                logger.error("could not write to the agent's process: %s", error)
                return


def serve(sock: socket.socket, taken: TakenCounts) -> None:
    """Reads and answers messages until :class:`~otel_eval.processor._process.messages.Shutdown` or the end of the
    socket, adding each batch to ``taken`` once the engine has it, with what the engine still holds."""
    config = receive_message(sock)
    if not isinstance(config, Config):
        raise WireError(f"expected the settings first, got {type(config).__name__}")
    outbox = _Outbox(sock)
    evaluation = _Evaluation(config.settings, config.lost_traces, outbox.send, taken)
    while True:
        if not select.select([sock], [], [], evaluation.period)[0]:
            evaluation.step()
            taken.hold(*evaluation.held())
            continue
        try:
            message = receive_message(sock)
        except WireError:  # the agent's process is gone (or sent what this side cannot read)
            evaluation.shutdown(_SHUTDOWN_ON_EOF_MILLIS)
            outbox.close(_OUTBOX_CLOSE_SECONDS)
            return
        if isinstance(message, Batch):
            evaluation.batch(message)
            taken.add(len(message.ends), len(message.logs), evaluation.held())
        elif isinstance(message, Flush):
            flushed = evaluation.flush(time_left_millis(message))
            taken.hold(*evaluation.held())
            outbox.send(Reply(flushed, message.sequence, evaluation.stats()))
        elif isinstance(message, Shutdown):
            evaluation.shutdown(time_left_millis(message))
            outbox.send(Reply(True, message.sequence, evaluation.stats()))
            outbox.close(_OUTBOX_CLOSE_SECONDS)
            return


def main(argv: list[str]) -> int:
    """Serves the socket whose file descriptor is ``argv[1]``, counting what it takes in the file ``argv[2]``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(os, "nice"):
        os.nice(_NICENESS)
    logging.basicConfig(
        level=logging.WARNING, format="otel-eval evaluation process: %(levelname)s %(name)s: %(message)s"
    )
    for handler in logging.getLogger().handlers:  # its exporters' retry warnings print the endpoint, query included
        handler.addFilter(RedactUrlQueries())
    with socket.socket(fileno=int(argv[1])) as sock:
        try:
            serve(sock, TakenCounts(int(argv[2])))
        except (OSError, WireError) as error:
            logger.error("stopped: %s", error)
            return 1
        except ConfigurationError as error:  # its evaluation cannot be built: restarting it would not help
            logger.error("cannot start: %s", error)
            sys.stderr.flush()
            # Ends now, its socket with it: the agent's process, which sees the socket break, reads why from the
            # exit code at once (a normal exit first closes the socket, then takes its time finalizing).
            os._exit(EXIT_CANNOT_START)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
