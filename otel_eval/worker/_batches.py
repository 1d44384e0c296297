"""``BatchPipeline``: what the worker does with one fetched batch, at least once.

Records are decoded, parsed or rebuilt off the event loop (unreadable ones, and ones past ``worker_record_timeout``,
are dead-lettered), evaluated once per invocation (:mod:`otel_eval.worker._scoring`), their telemetry exported and
results published, and only then are the offsets committed. The turns of open sessions are held, and their windows
judged when they close, by :class:`~otel_eval.worker._sessions.OpenSessions`, which holds the commit back at the
first record of every window still open. A batch that fails is re-read from the committed offsets
(:meth:`BatchPipeline.rewind`). The service around it (:mod:`otel_eval.worker.service`) fetches the batches, retries
and handles exit; :mod:`otel_eval.worker._rebalances` handles rebalances.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import groupby
from operator import itemgetter
from typing import Any

from otel_eval import semconv
from otel_eval._runtime.deadline import DeadlineExecutor, RecordTimeoutError
from otel_eval.errors import InputError
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.model.messages import EvaluationRequest
from otel_eval.worker._cut import BatchCut, trace_starts
from otel_eval.worker._decoding import decoding
from otel_eval.worker._handled import HandledInvocations, InvocationKey
from otel_eval.worker._metrics import WorkerMetrics
from otel_eval.worker._offsets import PartitionOffsets
from otel_eval.worker._read_barrier import ReadBarrier
from otel_eval.worker._scoring import Work, score
from otel_eval.worker._sessions import OpenSessions, Routed, SessionsTopic
from otel_eval.worker._tenancy import Tenancy, of_worker_record
from otel_eval.worker.collector_path import AssembledTrace, TraceAssembler, requests_from_trace
from otel_eval.worker.dead_letter import DeadLetters
from otel_eval.worker.health import WorkerHealth
from otel_eval.worker.results import ResultLedger, ResultsPublisher
from otel_eval.worker.settings import (
    SOURCE_OTLP_LOGS,
    SOURCE_OTLP_SPANS,
    SOURCE_REQUESTS,
    SOURCE_SESSIONS,
    WorkerSettings,
)
from otel_eval.worker.telemetry import WorkerTelemetry

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A batch evaluated (and its telemetry emitted), to settle: publish its results, then commit ``offsets``."""

    evaluated_keys: list[InvocationKey]
    """(trace id, span id, tenant) of each invocation handled."""
    records: list[Routed]
    offsets: dict[Any, int]
    started: float
    source: str
    rekeyed: list[tuple[EvaluationRequest, str]]
    """Collector path: invocations (with their tenants) for the sessions topic (published before the commit)."""


class BatchPipeline:
    """Processes one worker's fetched batches and keeps its partitions' read and committed offsets.

    Args:
        settings: the worker's settings.
        telemetry: the providers flushed before every commit.
        metrics: the worker's instruments.
        core: evaluates and emits requests.
        ledger: the invocations and results already handled (de-duplication).
        cpu: where decoding, parsing and rebuilding run, each record within ``worker_record_timeout``.
        assembler: gathers Collector-path spans and logs into traces.
        health: where a failed telemetry export is reported.
        fail: stops the worker with an error (too many records past their deadline still running).
    """

    def __init__(
        self,
        settings: WorkerSettings,
        *,
        telemetry: WorkerTelemetry,
        metrics: WorkerMetrics,
        core: EvaluationCore,
        ledger: ResultLedger,
        cpu: DeadlineExecutor,
        assembler: TraceAssembler,
        health: WorkerHealth,
        fail: Callable[[BaseException], None],
    ) -> None:
        self.settings = settings
        self.telemetry = telemetry
        self.metrics = metrics
        self.core = core
        self.ledger = ledger
        self.cpu = cpu
        self.assembler = assembler
        self.health = health
        self._fail = fail
        self._topics = settings.topics
        self._consumer: Any = None
        self._publisher: ResultsPublisher | None = None
        self._dead_letters: DeadLetters | None = None
        self._sessions_topic: SessionsTopic | None = None
        self._read_barrier: ReadBarrier | None = None
        self.offsets = PartitionOffsets()
        """Each partition's read position and committed offset."""
        self._settling: tuple[asyncio.Task[None], list[InvocationKey]] | None = None
        self.handled = HandledInvocations(ledger)
        """What was handled already: the evaluation is at least once, not more than it must."""
        self._reads = core.reads()
        """What the Collector path rebuilds: what the core's metrics read (the requests carry no criteria)."""
        self.sessions = OpenSessions(core, settings.session_limits, ledger)
        """The turns of open sessions, held until their windows are judged."""
        self.tenancy = Tenancy(settings.tenant_header, settings.tenant_attribute)
        """Whose traces and sessions the records' content is (see :mod:`otel_eval.worker._tenancy`)."""
        self.cut = BatchCut()
        """Cuts the batch under way short (the worker stops, or its partitions go): see :mod:`otel_eval.worker._cut`."""

    def attach(
        self, consumer: Any, dead_letters: DeadLetters, publisher: ResultsPublisher | None, producer: Any
    ) -> None:
        """The Kafka clients batches are read and committed, dead-lettered and published through (at startup);
        ``producer`` also re-keys the Collector path's session turns to the sessions topic."""
        self._consumer = consumer
        self._dead_letters = dead_letters
        self._publisher = publisher
        settings = self.settings
        if SOURCE_OTLP_SPANS in settings.sources:
            self._read_barrier = ReadBarrier(
                consumer,
                spans_topic=settings.kafka_spans_topic,
                logs_topic=settings.kafka_logs_topic if SOURCE_OTLP_LOGS in settings.sources else None,
                idle_timeout=self.assembler.idle_timeout,
                clock=self.assembler.clock,
            )
            if settings.kafka_sessions_topic:
                self._sessions_topic = SessionsTopic(producer, settings.kafka_sessions_topic)

    @property
    def settling(self) -> bool:
        """Whether a batch's publication and commit is under way (or finished, its outcome not collected yet)."""
        return self._settling is not None

    @property
    def sessions_due(self) -> bool:
        """Whether a session window is due to be judged (:meth:`process` judges it, even with nothing fetched)."""
        return self.sessions.seconds_to_next_close() == 0

    def poll_timeout_ms(self, longest: int) -> int:
        """How long a fetch may wait for records: ``longest``, or less when a session window closes sooner."""
        seconds = self.sessions.seconds_to_next_close()
        return longest if seconds is None else max(0, min(longest, int(seconds * 1000) + 1))

    @property
    def settled_pending(self) -> bool:
        """Whether the batch being settled has finished (:meth:`settled` returns at once)."""
        return self._settling is not None and self._settling[0].done()

    async def process(self, batch: dict[Any, list[Any]], ready: list[Any]) -> None:
        """Evaluates ``batch`` (fetched messages by partition) and the Collector-path traces ``ready``, waits for the
        previous batch to be settled, flushes this batch's telemetry and starts settling it: publishing its results
        and committing its offsets run while the next batch is fetched and evaluated (:meth:`settled` waits for it).

        Whatever fails is raised with nothing of this batch committed: the caller waits for :meth:`settled`, rewinds
        (:meth:`rewind`) and retries from the committed offsets.
        """
        prepared = await self._prepare(batch, ready)
        await self.settled()
        # Exported after the batch before it settled: what this flush exports is then never ahead of what is
        # published by more than this batch (a crash re-emits at most this batch's telemetry).
        if (prepared.records or prepared.evaluated_keys) and self.telemetry.buffers:
            await self._flush()
        task = asyncio.create_task(self._settle(prepared), name="otel-eval-worker-settle")
        self._settling = (task, prepared.evaluated_keys)

    async def settled(self) -> None:
        """Waits until the batch being settled is committed. Raises what failed (nothing of it is committed)."""
        settling, self._settling = self._settling, None
        if settling is not None:
            task, evaluated = settling
            try:
                await task
            finally:
                self.handled.settled(evaluated)

    def cancel(self) -> None:
        """Abandons the batch being settled (the worker stops at once): what it did not commit is redelivered."""
        if self._settling is not None:
            self._settling[0].cancel()

    async def _prepare(self, batch: dict[Any, list[Any]], ready: list[Any]) -> _Prepared:
        started = time.monotonic()
        work: list[Work] = []
        self.cut.reset()
        self.offsets.fetched(batch)
        fetched = [
            (tp, message, self._topics.get(tp.topic, SOURCE_REQUESTS))
            for tp, messages in batch.items()
            for message in messages
        ]
        tenancy = self.tenancy
        decoded = await self.cpu.map_async([decoding(message, source, tenancy) for _, message, source in fetched])
        for (tp, message, source), outcome in zip(fetched, decoded, strict=True):
            if isinstance(outcome, (InputError, RecordTimeoutError)):
                await self._dead_letter([message], outcome)
            elif isinstance(outcome, Exception):
                raise outcome
            elif source == SOURCE_OTLP_SPANS:
                tenant = tenancy.of_message(message)  # None: each span's resource says
                self.assembler.add(
                    message.partition, message.offset, outcome, message, tenant=tenant, tenant_of=tenancy.of_span
                )
            elif source == SOURCE_OTLP_LOGS:
                for tenant, records in outcome:
                    self.assembler.add_logs(message.partition, message.offset, records, tenant=tenant)
            elif source == SOURCE_SESSIONS:
                self.sessions.hold_rekeyed(tp, message.offset, outcome, of_worker_record(message))
            else:
                tenant = tenancy.of_request(message)
                hold = (
                    partial(self.sessions.hold, tp, message.offset, tenant=tenant) if _has_sessions(outcome) else None
                )
                work.append(Work(message.partition, outcome, tenant, hold, ((tp.topic, tp.partition, message.offset),)))
        self.offsets.read(batch)
        if batch:
            ready = ready + await self.idle_traces()
        fresh = [trace for trace in ready if not self.ledger.has_trace(trace.trace_id, trace.tenant)]
        rekeyed: list[tuple[EvaluationRequest, str]] = []
        self.metrics.duplicates_skipped(len(ready) - len(fresh))
        rebuilt = await self.cpu.map_async(
            [
                (
                    f"rebuilding trace {trace.trace_id} ({len(trace.spans)} spans)",
                    partial(requests_from_trace, trace, self._reads),
                )
                for trace in fresh
            ]
        )
        for trace, outcome in zip(fresh, rebuilt, strict=True):
            if isinstance(outcome, RecordTimeoutError):
                await self._dead_letter(list(trace.messages.values()), outcome)
                continue
            if isinstance(outcome, Exception):
                raise outcome
            rekey = partial(_rekey, rekeyed, trace.tenant) if self._sessions_topic is not None else None
            starts = trace_starts(trace, self.settings.kafka_spans_topic, self.settings.kafka_logs_topic)
            for request in outcome:
                held = rekey if rekey is not None and _has_sessions(request) else None
                work.append(Work(trace.partition, request, trace.tenant, held, starts))
            unjoined = len(trace.log_records) if not trace.spans else trace.unmatched_log_records
            self.metrics.log_records_dropped(semconv.DROP_NO_TRACE, unjoined)
        for reason, count in self.assembler.take_log_drops().items():
            self.metrics.log_records_dropped(reason, count)
        for reason, count in self.assembler.take_span_drops().items():
            self.metrics.spans_dropped(reason, count)
        evaluated_keys, records = await score(
            work,
            core=self.core,
            handled=self.handled,
            cut=self.cut,
            metrics=self.metrics,
            concurrency=self.settings.worker_concurrency,
        )
        if not self.cut.requested:  # cut short: the windows due stay open, their records uncommitted
            windows, rejudged = await self.sessions.judge(self.settings.worker_concurrency)
            self.metrics.duplicates_skipped(rejudged)
            records += windows
        self.handled.settling(evaluated_keys)
        source = SOURCE_OTLP_SPANS if ready else SOURCE_REQUESTS
        return _Prepared(evaluated_keys, records, self._committable(), started, source, rekeyed)

    async def _flush(self) -> None:
        flushed = await asyncio.to_thread(self.telemetry.flush, self.settings.worker_flush_timeout)
        self.health.telemetry_error = None if flushed else "telemetry_flush_timeout"
        if not flushed:
            logger.warning("telemetry export did not finish within %g s", self.settings.worker_flush_timeout)
            self.metrics.error("telemetry_flush_timeout")

    async def _settle(self, prepared: _Prepared) -> None:
        """Publishes the batch's results (its telemetry was flushed), and then commits its offsets."""
        if self._publisher is not None and prepared.records:
            pairs = [(partition, record) for partition, record, _ in prepared.records]
            tenants = [tenant for _, _, tenant in prepared.records]
            self.metrics.published(await self._publisher.publish(pairs, tenants))
        if self._sessions_topic is not None and prepared.rekeyed:
            await self._sessions_topic.publish(prepared.rekeyed)
        # Every record's invocation is among the evaluated ones, remembered once each just below.
        for tenant, routed in groupby(prepared.records, key=itemgetter(2)):
            self.ledger.add((record for _, record, _ in routed), tenant=tenant, invocations=False)
        self.handled.published(prepared.evaluated_keys)
        await self.offsets.commit(self._consumer, prepared.offsets)
        self.metrics.batch(time.monotonic() - prepared.started, prepared.source)

    async def _dead_letter(self, messages: Sequence[Any], error: Exception) -> None:
        """Sends ``messages`` to the dead-letter topic with ``error`` as the reason, and counts them.

        After too many records past their deadline whose threads still run, the worker stops with an error (see
        :mod:`otel_eval._runtime.deadline`): these records are committed as dead-lettered, so a restart moves on.
        """
        if self._dead_letters is None:
            raise RuntimeError("BatchPipeline.attach was not called")
        reason = semconv.DROP_RECORD_TIMEOUT if isinstance(error, RecordTimeoutError) else semconv.DROP_UNREADABLE
        for message in messages:
            await self._dead_letters.send(message, error)
            self.metrics.dead_lettered(message.topic, reason)
        if isinstance(error, RecordTimeoutError) and self.cpu.exhausted:
            self.metrics.error("record_threads_exhausted")
            self._fail(
                RecordTimeoutError(
                    f"{self.cpu.abandoned_running} records past their deadline are still being processed: "
                    "stopping so that the process is restarted"
                )
            )

    async def observe_lag(self) -> None:
        """Reports the lag of every assigned partition (high watermark minus the consumer's position: 0 for an empty
        or caught-up one) once a fetch has told its high watermark; called after each fetch, so a partition without
        traffic has its lag series too."""
        for tp in self._consumer.assignment():
            highwater = self._consumer.highwater(tp)
            if highwater is not None:
                self.metrics.lag(tp.topic, tp.partition, highwater - await self._consumer.position(tp))

    async def idle_traces(self) -> list[AssembledTrace]:
        """The ``otlp_spans`` traces idle by now, handed on (none when the worker does not read that source) once the
        worker has read what was written before they went idle (:mod:`~otel_eval.worker._read_barrier`). With a
        batch, :meth:`process` asks after adding its spans: asked before, a trace whose next spans were in the batch
        would go on without them."""
        if self._read_barrier is None:
            return []
        held = await self._read_barrier.holds(self.assembler.idle())
        # ready() looks at the idle traces again: a rebalance during the await may have forgotten some.
        return self.assembler.ready(held=held)

    def _committable(self) -> dict[Any, int]:
        """The offset to commit per partition read: the next one to read, held back by still open traces and
        sessions."""
        offsets: dict[Any, int] = {}
        for tp, position in self.offsets.positions.items():
            if self._topics.get(tp.topic) in (SOURCE_OTLP_SPANS, SOURCE_OTLP_LOGS):
                logs = self._topics.get(tp.topic) == SOURCE_OTLP_LOGS
                offset = self.assembler.committable(tp.partition, position, logs=logs)
            else:
                offset = self.sessions.committable(tp, position)
            offsets[tp] = self.cut.committable(tp, offset)
        return offsets

    def rewind(self) -> None:
        """Seeks every partition read from back to its committed offset and forgets open traces and sessions (they
        are re-read). Call it once :meth:`settled` has returned or raised.

        Local only (no broker round trip), so it works while the broker is unreachable.
        """
        self.handled.rewind()
        assigned = set(self._consumer.assignment())
        self.sessions.forget(assigned)
        self.assembler.forget({tp.partition for tp in assigned if self._topics.get(tp.topic) == SOURCE_OTLP_SPANS})
        self.assembler.forget(
            {tp.partition for tp in assigned if self._topics.get(tp.topic) == SOURCE_OTLP_LOGS}, logs=True
        )
        self.offsets.rewind(self._consumer, assigned)

    def forget(self, revoked: set[Any]) -> None:
        """Drops what is kept for the ``revoked`` partitions: open traces and sessions (left to their next owner),
        offsets, lag."""
        sessions = self.sessions.forget(revoked)
        if sessions:
            logger.info("partitions revoked: %d open sessions left to their next owner", sessions)
        spans = [tp.partition for tp in revoked if self._topics.get(tp.topic) == SOURCE_OTLP_SPANS]
        self.assembler.forget(
            [tp.partition for tp in revoked if self._topics.get(tp.topic) == SOURCE_OTLP_LOGS], logs=True
        )
        if spans:
            lost = self.assembler.forget(spans)
            if lost:
                logger.info("partitions revoked: %d open traces left to their next owner", lost)
        self.offsets.forget(revoked)
        self.cut.forget(revoked)
        self.handled.forget(tp.partition for tp in revoked)
        self.metrics.forget_lag((tp.topic, tp.partition) for tp in revoked)


def _has_sessions(request: EvaluationRequest) -> bool:
    """Whether every invocation of ``request`` carries a session id (else its turns never wait for a session)."""
    invocations = request.invocations
    return bool(invocations) and all(i.session_id for i in invocations)


def _rekey(rekeyed: list[tuple[EvaluationRequest, str]], tenant: str, request: EvaluationRequest) -> None:
    """Puts ``request`` (of ``tenant``), whose turns wait for their session, among those re-keyed to the sessions
    topic."""
    rekeyed.append((request, tenant))
