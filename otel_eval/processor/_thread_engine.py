"""The in-thread engine (``isolation="thread"``): the agent's hooks append to bounded queues; one daemon thread
(``OtelEvalSpanProcessor``) assembles the invocations, and hands them to the transport.

With the embedded worker (no ``exporter``), that same thread also scores and emits every invocation that needs no
judge: :meth:`~otel_eval.evaluation.embedded_worker.EmbeddedWorker.export` starts each request there
(:meth:`~otel_eval.evaluation.core.EvaluationCore.start`), so an invocation crosses one thread boundary, from the
agent's thread to this one. Only requests that call the judge go on to the embedded worker's event loop.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from functools import partial

from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span

from otel_eval import environment_variables as env
from otel_eval._runtime.collector import collections_deferred
from otel_eval._runtime.forking import reinit_after_fork
from otel_eval._runtime.log_filters import DuplicateLogFilter
from otel_eval.emit.enrichment import RootSpanEnricher
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.errors import ConfigurationError
from otel_eval.evaluation import builtin_metric_names, criteria_from, custom_metrics_of
from otel_eval.evaluation.embedded import embedded_worker
from otel_eval.metrics import default_registry
from otel_eval.processor._assembler import SpanAssembler
from otel_eval.processor._buffers import TraceBuffers
from otel_eval.processor._embedded_start import plan_embedded
from otel_eval.processor._intake import SpanIntake, WakeSchedule, drain, millis_until
from otel_eval.processor._logs import EvaluationLogRecordProcessor, LogJoin
from otel_eval.processor._open_spans import IncompleteCounter, OpenSpans
from otel_eval.processor._request_builder import RequestBuilder, full_rebuild
from otel_eval.processor._selection import InvocationFilters, Sampling
from otel_eval.processor._settings import EngineOptions, Limits
from otel_eval.reconstruct import Reads
from otel_eval.transport.base import InvocationExporter

logger = logging.getLogger(__name__)
logger.addFilter(DuplicateLogFilter())

_SCHEDULE_DELAY_SECONDS = 0.2
"""The background thread's period for idle sweeps; a local root's end wakes it at once, unless it is polling."""
_SLOW_PERIOD_SECONDS = 1.0
"""At most this often (and a quarter of the idle timeout), a tick steps for what it finds queued without a wake-up
and for what is held for the idle timeout: invocations under way, idle traces, roots waiting for descendants."""
_WAKE_BATCH_SPANS = 512


class InThreadEngine:
    """Evaluates in this process (see the module docs).

    Args:
        exporter: The transport the requests go to.
        pipeline: The pipeline counters.
        builder: Rebuilds the invocations of a finished subtree and wraps them in requests.
        limits: The intake's and the buffers' bounds.
        sampling: Which traces are evaluated.
        enricher: Holds sampled roots for their scores (``enrich=``), or None.
        meter_provider: Where the incomplete-invocation counter goes.
        enrichment_wait_seconds: How long the enricher holds a root (sets the thread's period with the idle timeout).
        threaded: False: no background thread; the caller queues the spans and runs each :meth:`step` on its own
            thread (the evaluation process's reader: no hand-off between threads per batch).
        start_up: Start-up work that must not hold up the caller (the agent's thread): run first on the background
            thread, before its first step (here, when not ``threaded``).
    """

    def __init__(
        self,
        *,
        exporter: InvocationExporter,
        pipeline: PipelineMetrics,
        builder: RequestBuilder,
        limits: Limits,
        sampling: Sampling,
        enricher: RootSpanEnricher | None,
        meter_provider: MeterProvider | None,
        enrichment_wait_seconds: float,
        threaded: bool = True,
        start_up: Callable[[], None] | None = None,
    ) -> None:
        self.exporter = exporter
        self._start_up = start_up
        self._threaded = threaded
        self.pipeline = pipeline
        self._builder = builder
        self._limits = limits
        self._sampling = sampling
        self._enricher = enricher
        idle = limits.trace_idle_timeout
        self._tick = max(0.01, min(_SCHEDULE_DELAY_SECONDS, idle / 4, enrichment_wait_seconds / 2 or 1.0))
        self._slow_tick = max(self._tick, min(_SLOW_PERIOD_SECONDS, idle / 4))
        self._intake = SpanIntake(
            max_pending=limits.max_pending_spans, sampling=sampling, wake_batch=_WAKE_BATCH_SPANS, enricher=enricher
        )
        self.on_start: Callable[[Span, Context | None], None] = self._intake.on_start
        """Queues the start for the open-span bookkeeping (:mod:`otel_eval.processor._intake`)."""
        self.on_end: Callable[[ReadableSpan], None] = self._intake.on_end
        """Queues a sampled ended span for the background thread (:mod:`otel_eval.processor._intake`)."""
        self.queue_batch = self._intake.queue_batch
        """Queues a batch of starts and ends the agent's process let in (the evaluation process's intake)."""
        self._shutdown = False
        self._incomplete = IncompleteCounter(meter_provider)
        self._wakeups = 0
        self.log_record_processor = EvaluationLogRecordProcessor(
            max_pending=limits.max_pending_spans, sample_bound=sampling.intake_bound
        )
        weak_self = weakref.ref(self)
        self.pipeline.register_queue("spans", lambda: _pending_spans(weak_self))
        self._start()
        reinit_after_fork(self._at_fork_reinit)
        if not threaded:
            self._run_start_up()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(exporter={type(self.exporter).__name__})"

    # --- state that a fork must recreate -------------------------------------------------------------------------

    def _start(self) -> None:
        self._intake.reset()
        self._flush_waiters: list[threading.Event] = []
        self._flush_lock = threading.Lock()
        self._rejected: deque[tuple[int, str]] = deque()
        limits = self._limits
        self._assembler = SpanAssembler(
            buffers=TraceBuffers(
                max_open_traces=limits.max_open_traces,
                max_spans_per_trace=limits.max_spans_per_trace,
                max_bytes=limits.max_buffer_bytes,
            ),
            builder=self._builder,
            exporter=self.exporter,
            pipeline=self.pipeline,
            idle_timeout=limits.trace_idle_timeout,
            max_age=limits.max_trace_age,
            suppressed={},
            enricher=self._enricher,
            open_spans=OpenSpans(max_traces=limits.max_open_traces, max_spans_per_trace=limits.max_spans_per_trace),
            incomplete=self._incomplete,
            sample_bound=self._sampling.bound,
            priority=self._sampling.priority,
            logs=LogJoin(
                self.log_record_processor,
                self.pipeline,
                max_traces=limits.max_open_traces,
                max_bytes=limits.max_buffer_bytes,
            ),
        )
        self._intake.waiting = self._assembler.waiting_traces  # read on the agent's threads, written by the assembler
        self._thread: threading.Thread | None = None
        if self._threaded:
            self._thread = threading.Thread(name="OtelEvalSpanProcessor", target=self._worker, daemon=True)
            self._thread.start()

    def _at_fork_reinit(self) -> None:
        if not self._shutdown:
            self._start()

    # --- the agent's threads: never block ------------------------------------------------------------------------

    # ``on_start`` and ``on_end`` are the intake's own (bound in ``__init__``: one call less on every span).

    # --- flush and shutdown --------------------------------------------------------------------------------------

    def force_flush(self, timeout_millis: int) -> bool:
        """Hands every complete buffered trace to the transport and waits until it is evaluated."""
        deadline = time.monotonic() + max(0, timeout_millis) / 1000
        if self._thread is None:
            self.step()
        else:
            done = threading.Event()
            with self._flush_lock:
                self._flush_waiters.append(done)
            self._intake.wake.set()
            if not done.wait(max(0.0, deadline - time.monotonic())):
                return False
        flushed = self._export_scored_roots(deadline)
        flushed = self.exporter.force_flush(millis_until(deadline)) and flushed
        if self._enricher is not None:
            flushed = self._enricher.force_flush(millis_until(deadline)) and flushed
        return flushed and time.monotonic() <= deadline

    def shutdown(self, timeout_millis: int) -> None:
        """Stops intake, hands on complete traces, drains the transport within ``timeout_millis``."""
        self._shutdown = True
        self._intake.closed = True
        self.log_record_processor.closed = True
        deadline = time.monotonic() + max(0, timeout_millis) / 1000
        if self._thread is None:
            self.step()  # the last one (``final``)
        else:
            self._intake.wake.set()
            self._thread.join(max(0.0, deadline - time.monotonic()))
        self._export_scored_roots(deadline)
        try:
            self.exporter.shutdown(millis_until(deadline))
        except Exception:  # a broken transport must not break the provider's shutdown
            logger.exception("the evaluation transport failed to shut down")
        if self._enricher is not None:
            self._enricher.shutdown(millis_until(deadline))

    def _export_scored_roots(self, deadline: float) -> bool:
        """With ``enrich=`` and a transport that scores here (the embedded worker): evaluates what is queued, then
        exports the root spans held for their scores, before the backend sinks are flushed or stopped. The sinks
        annotate those very spans (a Phoenix annotation, an MLflow assessment): stopped first, they would wait for
        spans still held here."""
        if self._enricher is None or not self.exporter.scores_here:
            return True
        drained = self.exporter.drain(millis_until(deadline))
        return self._enricher.force_flush(millis_until(deadline)) and drained

    def reject_traces(self, trace_ids: Sequence[int], reason: str) -> None:
        """Drops these traces whole at the next step: their buffered spans and those still to come (counted with
        ``reason``). Thread safe; the evaluation process uses it for traces the agent's process shed or lost part
        of."""
        self._rejected.extend((trace_id, reason) for trace_id in trace_ids)
        self._intake.wake.set()

    def stats(self) -> dict[str, int]:
        """Pipeline counts plus the current buffer occupancy."""
        counts = self.pipeline.snapshot()
        logs = self._assembler.logs
        if self._sampling.priority is not None:
            counts.update(self._sampling.priority.snapshot())
        counts.update(
            {
                "invocations.incomplete": self._incomplete.total,
                "wakeups": self._wakeups,
                "waiting_roots": self._assembler.waiting_roots,
                "pending_spans": len(self._intake.ends),
                "open_traces": self._assembler.buffers.open_traces,
                "buffered_spans": self._assembler.buffers.total_spans,
                "buffered_bytes": self._assembler.buffers.total_bytes,
                "buffered_log_records": logs.buffered_records if logs is not None else 0,
                "shedding": int(self._intake.shedder.active),
            }
        )
        return counts

    def held(self) -> tuple[int, int]:
        """The ended spans and log records it holds (queued or buffered): neither handed on nor dropped yet."""
        logs = self._assembler.logs
        records = len(self.log_record_processor.queue) + (logs.buffered_records if logs is not None else 0)
        return len(self._intake.ends) + self._assembler.buffers.total_spans, records

    @property
    def period(self) -> float:
        """Seconds between steps when no span asks for one (idle traces, roots waiting for their descendants)."""
        return self._tick

    def step(self) -> None:
        """Assembles what is queued and hands on what is complete, on the caller's thread (``threaded=False``)."""
        self._intake.wake.clear()
        try:
            self._step(final=self._shutdown)
        except Exception:  # the caller's loop goes on
            logger.exception("EvaluationSpanProcessor step failed")

    # --- the background thread -----------------------------------------------------------------------------------

    def _run_start_up(self) -> None:
        start_up, self._start_up = self._start_up, None  # once, not again in a forked child
        if start_up is not None:
            try:
                start_up()
            except Exception:  # the thread boundary: log and carry on
                logger.exception("EvaluationSpanProcessor start-up failed")

    def _worker(self) -> None:
        self._run_start_up()
        intake, records = self._intake, self.log_record_processor.queue
        schedule = WakeSchedule(intake, tick=self._tick)
        due = 0.0  # the next step even if nothing comes (idle traces, waiting roots, held roots)
        slow = 0.0  # the next step for what a tick finds queued, and for what is held for the idle timeout
        while True:
            woken = schedule.wait()
            if woken:
                self._wakeups += 1
            waiters: list[threading.Event] = []
            if self._flush_waiters:  # read without the lock: one appended meanwhile also wakes the thread
                with self._flush_lock:
                    waiters, self._flush_waiters = self._flush_waiters, []
            stopping = self._shutdown
            now = time.monotonic()
            demanded = woken or waiters or stopping or records or self._rejected or intake.shedder.active
            if not demanded and self._step_waits(ticked=schedule.ticked, now=now, due=due, slow=slow):
                continue
            slow = now + self._slow_tick
            due = now + self._tick
            try:
                # The collections due while the step runs, the agent's included, run on this thread after it.
                with collections_deferred():
                    took = self._step(final=stopping)
                if took:
                    schedule.busy()
            except Exception:  # the thread boundary: log and carry on
                logger.exception("EvaluationSpanProcessor background step failed")
            for waiter in waiters:
                waiter.set()
            if stopping:
                return

    def _step_waits(self, *, ticked: bool, now: float, due: float, slow: float) -> bool:
        """Whether a look that nothing demands (no wake-up, flush, shutdown, log record, rejection or shedding) leaves
        the step (~50k instructions of bookkeeping) for later; ``due`` and ``slow``: when the period's and the slow
        period's steps are due.

        A poll steps for the ends it finds: starts alone only matter to the ends that follow them (taken in the same
        step), so a poll that lands mid-invocation leaves them queued. A tick that nobody's wake-up cut short finds no
        complete invocation (a local root's end wakes the thread): what it finds queued (the spans of invocations
        under way) and what is held for the idle timeout (buffered and tracked traces, roots waiting for
        descendants) wait for the slow period, so an invocation that runs across ticks is not stepped at each (one
        paced invocation took ~1.8 steps); only a root held for its scores (``enrich=``, released after a few
        seconds) keeps the tick's period. With nothing held or queued the step would do nothing: an agent that
        pauses between invocations pays no step per period.
        """
        intake, assembler = self._intake, self._assembler
        if not ticked:
            return not intake.ends and (now < due or (not intake.starts and assembler.holds_nothing))
        if now < due or (now < slow and not assembler.holds_roots):
            return True
        return not (intake.ends or intake.starts) and assembler.holds_nothing

    def _step(self, *, final: bool) -> int:
        """One pass of the assembler over what was queued; returns how many ended spans it took."""
        intake = self._intake
        dropped_at_intake = intake.take_dropped()
        shed = self._update_shedding()
        # Every span counted here started before it ended: so its start is among the starts drained after counting.
        ended = len(intake.ends)
        starts = drain(intake.starts, len(intake.starts))
        self._assembler.step(
            drain(intake.ends, ended),
            final=final,
            dropped_at_intake=dropped_at_intake,
            shed=shed,
            starts=starts,
            rejected=drain(self._rejected, len(self._rejected)),
        )
        return ended

    def _update_shedding(self) -> tuple[int, list[int]]:
        """Starts shedding in ``on_end`` when the transport is full, stops when it has room again (or at shutdown).

        Returns the spans shed since the last step and the ids of their traces, which the assembler drops whole
        (their other spans would rebuild into partial invocations).
        """
        full = not self.exporter.has_capacity() and not self._shutdown
        shedder = self._intake.shedder
        if not full and not shedder.active:
            return 0, []  # only this thread turns shedding on and off: none since the last step's ``take``
        if full and shedder.start():
            self._assembler.shed_open_traces()  # their later spans are being shed: drop them whole now
        return shedder.take(full=full)


def in_thread_engine(options: EngineOptions, *, threaded: bool = True) -> InThreadEngine:
    """The engine of the processor's arguments (``isolation="thread"``, and in the evaluation process): with
    ``options.exporter``, or (None) with the embedded worker built from the settings and the worker's objects
    (``judge``, the providers, ``sinks``), which then gets the criteria and the eval set (the requests need not carry
    them). ``threaded``: see :class:`InThreadEngine`.

    Raises:
        ConfigurationError: an unknown metric or invalid criterion, or ``settings.metrics`` with an exporter.
    """
    criteria, settings, exporter = options.criteria, options.settings, options.exporter
    meter_provider, enrich, registry = options.meter_provider, options.enrich, options.registry
    enrichment_wait_seconds = options.enrichment_wait_seconds
    sampling = Sampling.create(settings.sample_rate, settings.sample_priority, meter_provider)
    parsed = criteria_from(criteria)
    eval_set = settings.golden
    pipeline = options.pipeline or PipelineMetrics(
        meter_provider, transport="embedded" if exporter is None else "custom"
    )
    enricher = None
    if enrich is not None:  # with another exporter, or no ``attributes`` asked, it passes every span straight on
        waits = exporter is None and env.EMIT_ATTRIBUTES in settings.emit
        enricher = RootSpanEnricher(enrich, wait_seconds=enrichment_wait_seconds if waits else 0.0)
    reads: Callable[[], Reads] = full_rebuild
    start_up = None
    if exporter is None:
        holds_roots = enricher is not None and enricher.wait_seconds
        exporter = embedded = embedded_worker(
            criteria if custom_metrics_of(criteria) else parsed,
            metric_names=settings.metrics,
            eval_set=eval_set,
            registry=registry,
            meter_provider=meter_provider,
            pipeline=pipeline,
            judge=options.judge,
            tracer_provider=options.tracer_provider,
            logger_provider=options.logger_provider,
            sinks=[*options.sinks, enricher.on_records] if holds_roots and enricher is not None else options.sinks,
            max_queue_size=settings.max_queue_size,
            concurrency=settings.concurrency,
            sessions=settings.sessions,
            emit=settings.emit,
            explanations=settings.explanations,
            holds_session=sampling.session_in_sample,
        )
        # Its plan asks the judge whether it is configured (a LiteLLM judge's check imports LiteLLM, seconds): on
        # the background thread, not the caller's.
        start_up = partial(plan_embedded, embedded.core, settings.sample_rate if sampling.head_sampling else None)
        parsed = eval_set = None  # the embedded core has them and pairs each request once, with its plan
        reads = embedded.core.reads  # rebuild only what its metrics read
    else:
        if settings.metrics:
            raise ConfigurationError(
                f"ProcessorSettings.metrics ({env.OTEL_EVAL_METRICS}) chooses what the embedded worker runs; with an "
                f"exporter ({type(exporter).__name__}) the evaluating side chooses (the Kafka worker's "
                f"{env.OTEL_EVAL_METRICS}): leave it empty here"
            )
        registry = registry or default_registry()
        for name in builtin_metric_names(parsed, criteria):
            registry.get(name)  # unknown metric names fail here, not in a remote worker (custom: the worker's)
    return InThreadEngine(
        exporter=exporter,
        pipeline=pipeline,
        builder=RequestBuilder(
            filters=InvocationFilters.create(settings.agent_names, settings.root_span_names),
            criteria=parsed,
            eval_set=eval_set,
            reads=reads,
        ),
        limits=settings.limits,
        sampling=sampling,
        enricher=enricher,
        meter_provider=meter_provider,
        enrichment_wait_seconds=enrichment_wait_seconds,
        threaded=threaded,
        start_up=start_up,
    )


def _pending_spans(weak_self: weakref.ref[InThreadEngine]) -> int:
    engine = weak_self()
    return len(engine._intake.ends) if engine is not None else 0
