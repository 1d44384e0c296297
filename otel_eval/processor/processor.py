"""``EvaluationSpanProcessor``: online evaluation of agent invocations, attached to a ``TracerProvider``."""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, Context, get_value
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_eval import environment_variables as env
from otel_eval._runtime.forking import reinit_after_fork
from otel_eval._runtime.log_filters import DuplicateLogFilter
from otel_eval.emit.enrichment import RootSpanEnricher
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.evaluation import (
    builtin_metric_names,
    criteria_from,
    custom_metrics_of,
    registry_with_custom_metrics,
)
from otel_eval.evaluation.embedded import EMBEDDED_OPTIONS, EmbeddedOptions, embedded_exporter
from otel_eval.evaluation.engine import EmbeddedInvocationExporter
from otel_eval.metrics import MetricRegistry, default_registry
from otel_eval.model import EvalConfig, EvalSet
from otel_eval.model.loading import load_eval_set
from otel_eval.processor import _settings as defaults
from otel_eval.processor._assembler import SpanAssembler
from otel_eval.processor._buffers import TraceBuffers
from otel_eval.processor._completion import IncompleteCounter, OpenSpans
from otel_eval.processor._evaluation_process import EvaluationProcess
from otel_eval.processor._exporters import check_process_options
from otel_eval.processor._handoff import drain, millis_until
from otel_eval.processor._logs import EvaluationLogRecordProcessor, LogJoin
from otel_eval.processor._priority import SamplePriority
from otel_eval.processor._requests import RequestBuilder
from otel_eval.processor._selection import (
    InvocationFilters,
    is_local_root,
    is_own_traffic,
    is_sampled,
    sampling_bound,
)
from otel_eval.processor._settings import processor_options
from otel_eval.processor._shedding import Shedder
from otel_eval.transport.base import InvocationExporter

if TYPE_CHECKING:
    from typing_extensions import Unpack

logger = logging.getLogger(__name__)

_LOW_64_BITS = (1 << 64) - 1
_MAX_SUPPRESSED_MARKS = 4096
_DEFAULT_ENRICHMENT_WAIT_SECONDS = 5.0
_ENRICHMENT_MARGIN = 1.0
"""With ``isolation="process"``, how much longer than the evaluation process a root is held for its answer."""
_SCHEDULE_DELAY_SECONDS = 0.2
"""The background thread's period for idle sweeps; a local root's end wakes it at once."""
_WAKE_BATCH_SPANS = 512

T = TypeVar("T")


logger.addFilter(DuplicateLogFilter())


class EvaluationSpanProcessor(SpanProcessor):
    """Evaluates each agent invocation when its spans end, and emits the scores as OpenTelemetry data.

    Add it to the agent's tracer provider (before the exporting processor, so evaluation spans emitted while it
    drains at shutdown are still exported)::

        provider.add_span_processor(EvaluationSpanProcessor(criteria={"hallucinations_v1": 0.8}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))

    ``on_start`` and ``on_end`` only append to bounded queues and return; a daemon thread (``OtelEvalSpanProcessor``)
    hands each complete invocation to the transport. How completeness is decided, the limits and the counters are
    described in :mod:`otel_eval.processor`; :meth:`stats` returns the same counts in-process.

    Args:
        criteria: ADK criteria (``{metric: threshold | criterion dict}``, ``{"criteria": {...}}`` or an
            ``EvalConfig``); None runs the efficiency metrics, plus ``hallucinations_v1`` and ``safety_v1`` when
            judge credentials are configured, plus ADK's reference metrics on invocations matching ``eval_set``. The
            ``custom_metrics`` of an ``EvalConfig`` (ADK custom metrics) are imported by the embedded worker.
        eval_set: Golden cases (an ``EvalSet`` or a path): an invocation whose user text equals a case turn's is
            also scored with the reference metrics (online reference metrics).
        sample_rate: Fraction of traces evaluated, decided from the low 64 bits of the trace id as
            ``TraceIdRatioBased`` does (the same trace gets the same decision in every process).
        sample_priority: With ``sample_rate`` below 1, also evaluate a left-out trace whose local root span ended
            in error or carries negative feedback (:mod:`otel_eval.processor._priority`); left-out traces are then
            buffered until their root ends. False: pure head sampling.
        agent_names: Evaluate only invocations of these agents (empty: all).
        root_span_names: Evaluate only subtrees whose top span name starts with one of these (empty: all).
        exporter: Transport of the requests (e.g. :class:`~otel_eval.transport.kafka.KafkaInvocationExporter`);
            when None, an embedded worker built by :func:`otel_eval.evaluation.embedded.embedded_exporter`.
        registry: Metrics the criteria may name (checked here, at start-up); the embedded worker evaluates with it.
        meter_provider: Where the pipeline counters go, and in embedded mode the score metrics and the judge's usage
            (global when None).
        max_open_traces: Traces buffered at once.
        max_spans_per_trace: Spans buffered per trace.
        max_buffer_bytes: Approximate attribute bytes buffered over all traces.
        max_pending_spans: Ended spans waiting for the background thread.
        trace_idle_timeout: Seconds after a trace's last span before it is handed on without its root; also the
            longest a local root waits for its open descendants.
        enrich: The user's exporting processor to wrap: it receives every span, with each sampled local root span
            held until its scores arrive (then exported with ``gen_ai.evaluation.<metric>.score`` attributes) or
            ``enrichment_wait_seconds`` pass (then exported unchanged). Scores arrive in embedded mode only.
        enrichment_wait_seconds: How long a root span is held for its scores.
        pipeline: The pipeline counters to report through, when the exporter already shares them (``from_env``
            builds one for the Kafka exporter and the processor, so each instrument exists once).
        isolation: ``"thread"``: the embedded evaluation runs on background threads of this process. ``"process"``:
            in a child process fed the spans over a socket (:mod:`otel_eval.processor._evaluation_process`), off
            the agent's GIL; it exports the scores as ``OTEL_TRACES_EXPORTER``, ``OTEL_LOGS_EXPORTER`` and
            ``OTEL_METRICS_EXPORTER`` say, so provider, judge and registry objects (which cannot cross) are refused;
            ``max_queue_size`` and ``concurrency`` apply there, ``sinks`` are called here with the records it sends
            back, and ``enrich`` holds the roots here for the score attributes it sends back.
        **embedded: The embedded worker's settings (:class:`~otel_eval.evaluation.embedded.EmbeddedOptions`):
            ``judge``, ``tracer_provider``, ``logger_provider``, ``sinks``, ``max_queue_size``, ``concurrency``.

    Raises:
        ConfigurationError: unknown metric or invalid criterion, or an unreadable eval set.
        ValueError: a limit below 1, ``sample_rate`` outside [0, 1], or an unknown ``isolation``.
        TypeError: embedded settings given together with an ``exporter`` (which does not evaluate here), or objects
            that cannot cross into the evaluation process with ``isolation="process"``.
    """

    def __init__(
        self,
        criteria: Mapping[str, Any] | EvalConfig | None = None,
        *,
        eval_set: EvalSet | str | Path | None = None,
        sample_rate: float = defaults.DEFAULT_SAMPLE_RATE,
        sample_priority: bool = env.DEFAULT_SAMPLE_PRIORITY,
        agent_names: Iterable[str] = (),
        root_span_names: Iterable[str] = (),
        exporter: InvocationExporter | None = None,
        registry: MetricRegistry | None = None,
        meter_provider: MeterProvider | None = None,
        max_open_traces: int = env.DEFAULT_MAX_OPEN_TRACES,
        max_spans_per_trace: int = env.DEFAULT_MAX_SPANS_PER_TRACE,
        max_buffer_bytes: int = defaults.DEFAULT_MAX_BUFFER_BYTES,
        max_pending_spans: int = defaults.DEFAULT_MAX_PENDING_SPANS,
        trace_idle_timeout: float = env.DEFAULT_TRACE_IDLE_TIMEOUT,
        enrich: SpanProcessor | None = None,
        enrichment_wait_seconds: float = _DEFAULT_ENRICHMENT_WAIT_SECONDS,
        pipeline: PipelineMetrics | None = None,
        isolation: str = env.DEFAULT_ISOLATION,
        **embedded: Unpack[EmbeddedOptions],
    ) -> None:
        limits = {"max_open_traces": max_open_traces, "max_spans_per_trace": max_spans_per_trace}
        limits.update(max_buffer_bytes=max_buffer_bytes, max_pending_spans=max_pending_spans)
        for name, value in limits.items():
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value!r}")
        if trace_idle_timeout <= 0:
            raise ValueError(f"trace_idle_timeout must be positive, got {trace_idle_timeout!r}")
        unknown = set(embedded) - EMBEDDED_OPTIONS
        if unknown:
            raise TypeError(
                f"EvaluationSpanProcessor() got unexpected keyword argument(s): {', '.join(sorted(unknown))}"
            )
        if exporter is not None and embedded:
            raise TypeError(
                f"{', '.join(sorted(embedded))}: settings of the embedded worker, which does not run when an exporter "
                f"is given ({type(exporter).__name__}); configure the evaluating side instead"
            )
        self._sample_bound = sampling_bound(sample_rate)
        self._priority = SamplePriority(meter_provider) if sample_priority and self._sample_bound is not None else None
        self._intake_bound = None if self._priority is not None else self._sample_bound  # what on_end lets through
        if isinstance(eval_set, (str, Path)):
            eval_set = load_eval_set(eval_set)
        parsed_criteria = criteria_from(criteria)
        self._process: EvaluationProcess | None = None
        self._enricher: RootSpanEnricher | None = None
        if isolation == env.ISOLATION_PROCESS:
            sinks = embedded.pop("sinks", ())  # called here, with the records the evaluation process sends back
            given = {"exporter": exporter, "registry": registry, "pipeline": pipeline, **embedded}
            check_process_options(given, builtin_metric_names(parsed_criteria, criteria))
            registry_with_custom_metrics(criteria)  # custom metric code that cannot load stops start-up here
            settings: dict[str, Any] = {
                "criteria": criteria, "eval_set": eval_set, "sample_rate": sample_rate,
                "sample_priority": sample_priority, "agent_names": tuple(agent_names),
                "root_span_names": tuple(root_span_names), "max_open_traces": max_open_traces,
                "max_spans_per_trace": max_spans_per_trace, "max_buffer_bytes": max_buffer_bytes,
                "max_pending_spans": max_pending_spans, "trace_idle_timeout": trace_idle_timeout,
                "enrichment_wait_seconds": enrichment_wait_seconds if enrich is not None else None,
                "relay_records": bool(sinks), **embedded,
            }  # fmt: skip
            # The roots are held here; the evaluation process says when, and with which scores.
            wait = enrichment_wait_seconds + _ENRICHMENT_MARGIN
            self._enricher = RootSpanEnricher(enrich, wait_seconds=wait) if enrich is not None else None
            self._shutdown = False
            self._process = EvaluationProcess(
                settings, meter_provider=meter_provider, max_pending=max_pending_spans, intake_bound=self._intake_bound,
                idle_timeout=trace_idle_timeout, enricher=self._enricher, sinks=sinks,
            )  # fmt: skip
            self.pipeline, self.log_record_processor = self._process.pipeline, self._process.log_records
            return
        if isolation != env.ISOLATION_THREAD:
            raise ValueError(f"isolation must be 'thread' or 'process', got {isolation!r}")
        self.pipeline = pipeline or PipelineMetrics(
            meter_provider, transport="embedded" if exporter is None else "custom"
        )
        if enrich is not None:  # with another exporter the scores never come back here: nothing to wait for
            wait_seconds = enrichment_wait_seconds if exporter is None else 0.0
            self._enricher = RootSpanEnricher(enrich, wait_seconds=wait_seconds)
        if exporter is None:
            if self._enricher is not None:
                embedded["sinks"] = [*embedded.get("sinks", ()), self._enricher.on_records]
            exporter = embedded_exporter(
                criteria if custom_metrics_of(criteria) else parsed_criteria, eval_set=eval_set, registry=registry, meter_provider=meter_provider,
                pipeline=self.pipeline, **embedded,
            )  # fmt: skip
            parsed_criteria = None  # the embedded core has them; requests need not carry them
        else:
            registry = registry or default_registry()
            for name in builtin_metric_names(parsed_criteria, criteria):
                registry.get(name)  # unknown metric names fail here, not in a remote worker (custom: the worker's)
        self._exporter = exporter
        self._builder = RequestBuilder(
            filters=InvocationFilters.create(agent_names, root_span_names), criteria=parsed_criteria, eval_set=eval_set
        )
        self._limits = (max_open_traces, max_spans_per_trace, max_buffer_bytes)
        self._max_pending = max_pending_spans
        self._idle_timeout = trace_idle_timeout
        self._tick = max(0.01, min(_SCHEDULE_DELAY_SECONDS, trace_idle_timeout / 4, enrichment_wait_seconds / 2 or 1.0))
        self._wake_threshold = min(_WAKE_BATCH_SPANS, max(1, max_pending_spans // 2))
        self._shutdown = False
        self._incomplete = IncompleteCounter(meter_provider)
        self._wakeups = 0
        self.log_record_processor = EvaluationLogRecordProcessor(
            max_pending=max_pending_spans, sample_bound=self._intake_bound
        )
        """Add to the ``LoggerProvider`` when the instrumentation puts message content on log records
        (``EVENT_ONLY``): they are joined to their spans before the rebuild (:mod:`otel_eval.processor._logs`)."""
        weak_self = weakref.ref(self)
        self.pipeline.register_queue("spans", lambda: _pending_spans(weak_self))
        self._start()
        reinit_after_fork(self._at_fork_reinit)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> EvaluationSpanProcessor:
        """A processor configured by the ``OTEL_EVAL_*`` variables (:mod:`otel_eval.environment_variables`).

        With ``OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS`` set, requests go to Kafka (and the embedded worker's overrides,
        such as ``logger_provider=``, are left out); otherwise to the embedded worker. Keyword ``overrides`` win over
        the environment (e.g. ``tracer_provider=...``).

        Raises:
            ConfigurationError: a bad ``OTEL_EVAL_*`` value (naming the variable), or bad Kafka settings.
        """
        return cls(**processor_options(environ, overrides))

    def __repr__(self) -> str:
        if self._process is not None:
            return f"{type(self).__name__}(isolation='process', shutdown={self._shutdown})"
        return f"{type(self).__name__}(exporter={type(self._exporter).__name__}, shutdown={self._shutdown})"

    # --- state that a fork must recreate -------------------------------------------------------------------------

    def _start(self) -> None:
        # A deque is thread safe for append/popleft; on_start/on_end only append, the background thread only pops.
        self._queue: deque[ReadableSpan] = deque()
        self._starts: deque[Span] = deque()
        self._waiting: dict[int, int] = {}  # traces with a root waiting for open spans (written by the thread only)
        self._wake = threading.Event()
        self._suppressed: dict[int, None] = {}
        self._intake_dropped = 0
        self._intake_lock = threading.Lock()
        self._flush_waiters: list[threading.Event] = []
        self._flush_lock = threading.Lock()
        self._shedder = Shedder()
        self._rejected: deque[tuple[int, str]] = deque()
        max_open_traces, max_spans_per_trace, max_buffer_bytes = self._limits
        self._assembler = SpanAssembler(
            buffers=TraceBuffers(
                max_open_traces=max_open_traces, max_spans_per_trace=max_spans_per_trace, max_bytes=max_buffer_bytes
            ),
            builder=self._builder,
            exporter=self._exporter,
            pipeline=self.pipeline,
            idle_timeout=self._idle_timeout,
            suppressed=self._suppressed,
            enricher=self._enricher,
            open_spans=OpenSpans(max_traces=max_open_traces, max_spans_per_trace=max_spans_per_trace),
            waiting=self._waiting,
            incomplete=self._incomplete,
            sample_bound=self._sample_bound,
            priority=self._priority,
            logs=LogJoin(
                self.log_record_processor, self.pipeline, max_traces=max_open_traces, max_bytes=max_buffer_bytes
            ),
        )
        self._thread = threading.Thread(name="OtelEvalSpanProcessor", target=self._worker, daemon=True)
        self._thread.start()

    def _at_fork_reinit(self) -> None:
        if not self._shutdown:
            self._start()

    # --- the agent's threads: never block, never raise -----------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Queues the start for the open-span bookkeeping; marks spans started under suppressed instrumentation
        (the evaluator's own work) to be skipped."""
        try:
            if self._enricher is not None:
                self._enricher.on_start(span, parent_context)
            if self._process is not None:
                self._process.on_start(span, parent_context)
                return
            if get_value(_SUPPRESS_INSTRUMENTATION_KEY, parent_context):
                context = span.get_span_context()
                suppressed = self._suppressed
                suppressed[context.span_id] = None
                if len(suppressed) > _MAX_SUPPRESSED_MARKS:  # marks of spans that never ended: forget the oldest
                    suppressed.pop(next(iter(suppressed)), None)
            elif len(self._starts) < self._max_pending and not self._shedder.active:  # else untracked: its root
                # completes when it ends (and while shedding, spans are shed at their end anyway)
                self._starts.append(span)
        except Exception:  # the agent's thread: log (deduplicated), never raise
            logger.exception("EvaluationSpanProcessor.on_start failed")

    def on_end(self, span: ReadableSpan) -> None:
        """Queues a sampled ended span for the background thread; drops and counts it when the queue is full."""
        try:
            if self._process is not None:
                queued = self._process.on_end(span)
                if self._enricher is not None:  # a root that was not queued gets no scores: not held for them
                    trace_id = span.context.trace_id if queued and span.context is not None else 0
                    self._enricher.on_end(span, hold=bool(trace_id) and self._will_evaluate(span, trace_id))
                return
            context = span.context
            bound = self._intake_bound
            if (
                context is not None
                and context.trace_flags.sampled
                and (bound is None or (context.trace_id & _LOW_64_BITS) < bound)
                and not self._shutdown
            ):
                # Own spans (evaluation spans are children of the invocation) never count as a shed agent trace.
                if self._shedder.active and not is_own_traffic(span) and self._shedder.shed(context.trace_id):
                    if self._enricher is not None:
                        self._enricher.on_end(span, hold=False)
                    return
                queue = self._queue
                if len(queue) < self._max_pending:
                    queue.append(span)
                    # Wake the background thread when an invocation may be complete (a local root ended, or a span
                    # of a trace whose root waits for it) or a batch waits; never per span, and never twice.
                    wake = self._wake
                    if not wake.is_set() and (
                        (is_local_root(span) and context.span_id not in self._suppressed and not is_own_traffic(span))
                        or len(queue) >= self._wake_threshold
                        or context.trace_id in self._waiting
                    ):
                        wake.set()
                    if self._enricher is not None:
                        self._enricher.on_end(span, hold=self._will_evaluate(span, context.trace_id))
                    return
                with self._intake_lock:
                    self._intake_dropped += 1
            if self._enricher is not None:
                self._enricher.on_end(span, hold=False)
        except Exception:  # the agent's thread: log (deduplicated), never raise
            logger.exception("EvaluationSpanProcessor.on_end failed")

    def _will_evaluate(self, span: ReadableSpan, trace_id: int) -> bool:
        """Whether ``span`` is a local root whose scores will come (the enricher holds it for them): sampled by its
        trace id, or rescued by priority sampling (decided from the root alone, as the background thread will)."""
        if not is_local_root(span) or is_own_traffic(span):
            return False
        if is_sampled(trace_id, self._sample_bound):
            return True
        return self._priority is not None and self._priority.reason(span) is not None

    # --- flush and shutdown --------------------------------------------------------------------------------------

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Hands every complete buffered trace to the transport and waits until it is evaluated.

        Incomplete traces (root still open) stay buffered. Returns False when ``timeout_millis`` passed first;
        the wait never exceeds it.
        """
        if self._shutdown:
            return False
        deadline = time.monotonic() + max(0, timeout_millis) / 1000
        if self._process is not None:
            flushed = self._process.force_flush(timeout_millis)
            if self._enricher is not None:
                flushed = self._enricher.force_flush(millis_until(deadline)) and flushed
            return flushed
        done = threading.Event()
        with self._flush_lock:
            self._flush_waiters.append(done)
        self._wake.set()
        if not done.wait(max(0.0, deadline - time.monotonic())):
            return False
        flushed = self._export_scored_roots(deadline)
        flushed = self._exporter.force_flush(millis_until(deadline)) and flushed
        if self._enricher is not None:
            flushed = self._enricher.force_flush(millis_until(deadline)) and flushed
        return flushed and time.monotonic() <= deadline

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """Stops intake, hands on complete traces, drains the transport within ``timeout_millis``. Idempotent."""
        if self._shutdown:
            return
        self._shutdown = True
        self.log_record_processor.closed = True
        deadline = time.monotonic() + max(0, timeout_millis) / 1000
        if self._process is not None:
            self._process.shutdown(timeout_millis)
            if self._enricher is not None:
                self._enricher.shutdown(millis_until(deadline))
            return
        self._wake.set()
        self._thread.join(max(0.0, deadline - time.monotonic()))
        self._export_scored_roots(deadline)
        try:
            self._exporter.shutdown(millis_until(deadline))
        except Exception:  # a broken transport must not break the provider's shutdown
            logger.exception("the evaluation transport failed to shut down")
        if self._enricher is not None:
            self._enricher.shutdown(millis_until(deadline))

    def _export_scored_roots(self, deadline: float) -> bool:
        """With ``enrich=`` and the embedded worker: evaluates what is queued, then exports the root spans held for
        their scores, before the backend sinks are flushed or stopped. The sinks annotate those very spans (a
        Phoenix annotation, an MLflow assessment): stopped first, they would wait for spans still held here."""
        if self._enricher is None or not isinstance(self._exporter, EmbeddedInvocationExporter):
            return True
        drained = self._exporter.drain(millis_until(deadline))
        return self._enricher.force_flush(millis_until(deadline)) and drained

    def stats(self) -> dict[str, int]:
        """Pipeline counts (see the class docs) plus the current buffer occupancy. With ``isolation="process"``:
        this process's counts, and the evaluation process's as of the last ``force_flush`` (``evaluation_process.``
        before each name)."""
        counts = self.pipeline.snapshot()
        if self._process is not None:
            counts.update((f"evaluation_process.{name}", value) for name, value in self._process.child_stats.items())
            return counts
        if self._priority is not None:
            counts.update(self._priority.snapshot())
        counts.update(
            {
                "invocations.incomplete": self._incomplete.total,
                "wakeups": self._wakeups,
                "waiting_roots": self._assembler.waiting_roots,
                "pending_spans": len(self._queue),
                "open_traces": self._assembler.buffers.open_traces,
                "buffered_spans": self._assembler.buffers.total_spans,
                "buffered_bytes": self._assembler.buffers.total_bytes,
            }
        )
        return counts

    # --- the background thread -----------------------------------------------------------------------------------

    def _worker(self) -> None:
        while True:
            if self._wake.wait(self._tick):
                self._wakeups += 1
            self._wake.clear()
            with self._flush_lock:
                waiters, self._flush_waiters = self._flush_waiters, []
            stopping = self._shutdown
            try:
                self._step(final=stopping)
            except Exception:  # the thread boundary: log and carry on
                logger.exception("EvaluationSpanProcessor background step failed")
            for waiter in waiters:
                waiter.set()
            if stopping:
                return

    def _step(self, *, final: bool) -> None:
        with self._intake_lock:
            dropped_at_intake, self._intake_dropped = self._intake_dropped, 0
        shed = self._update_shedding()
        # Every span counted here started before it ended: so its start is among the starts drained after counting.
        ended = len(self._queue)
        starts = drain(self._starts, len(self._starts))
        self._assembler.step(
            drain(self._queue, ended),
            final=final,
            dropped_at_intake=dropped_at_intake,
            shed=shed,
            starts=starts,
            rejected=drain(self._rejected, len(self._rejected)),
        )

    def _reject_traces(self, trace_ids: Iterable[int], reason: str) -> None:
        """Drops these traces whole at the next step: their buffered spans and those still to come (counted with
        ``reason``). Thread safe; the evaluation process's feeder (``isolation="process"``) uses it for traces the
        agent's process shed or lost part of."""
        self._rejected.extend((trace_id, reason) for trace_id in trace_ids)
        self._wake.set()

    def _update_shedding(self) -> tuple[int, list[int]]:
        """Starts shedding in ``on_end`` when the transport is full, stops when it has room again (or at shutdown).

        Returns the spans shed since the last step and the ids of their traces, which the assembler drops whole
        (their other spans would rebuild into partial invocations).
        """
        full = not self._exporter.has_capacity() and not self._shutdown
        if full and self._shedder.start():
            self._assembler.shed_open_traces()  # their later spans are being shed: drop them whole now
        return self._shedder.take(full=full)


def _pending_spans(weak_self: weakref.ref[EvaluationSpanProcessor]) -> int:
    processor = weak_self()
    return len(processor._queue) if processor is not None else 0
