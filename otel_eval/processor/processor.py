"""``EvaluationSpanProcessor``: online evaluation of agent invocations, attached to a ``TracerProvider``."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_eval import environment_variables as env
from otel_eval._runtime.log_filters import DuplicateLogFilter
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.evaluation.embedded import EMBEDDED_OPTIONS, EmbeddedOptions
from otel_eval.metrics import MetricRegistry
from otel_eval.model import EvalConfig, EvalSet
from otel_eval.model.loading import load_eval_set
from otel_eval.processor._engine import Engine, Limits
from otel_eval.processor._exporters import process_engine
from otel_eval.processor._settings import ProcessorSettings, processor_options
from otel_eval.processor._thread_engine import in_thread_engine
from otel_eval.transport.base import InvocationExporter

if TYPE_CHECKING:
    from typing_extensions import Unpack

logger = logging.getLogger(__name__)

_DEFAULT_ENRICHMENT_WAIT_SECONDS = 5.0
_DEFAULTS = ProcessorSettings()
"""The keyword arguments' defaults are the settings' (declared once, in :class:`ProcessorSettings`)."""

logger.addFilter(DuplicateLogFilter())


class EvaluationSpanProcessor(SpanProcessor):
    """Evaluates each agent invocation when its spans end, and emits the scores as OpenTelemetry data.

    Add it to the agent's tracer provider (before the exporting processor, so evaluation spans emitted while it
    drains at shutdown are still exported)::

        provider.add_span_processor(EvaluationSpanProcessor(criteria={"hallucinations_v1": 0.8}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))

    ``on_start`` and ``on_end`` only append to bounded queues and return; a daemon thread (``OtelEvalSpanProcessor``)
    rebuilds each complete invocation and hands it to the transport; with the embedded one, that thread also scores
    and emits every invocation that needs no judge. How completeness is decided, the limits and the counters are
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
            ``max_queue_size``, ``concurrency`` and ``sessions`` apply there, ``sinks`` are called here with the records it sends
            back, and ``enrich`` holds the roots here for the score attributes it sends back.
        **embedded: The embedded worker's settings (:class:`~otel_eval.evaluation.embedded.EmbeddedOptions`):
            ``judge``, ``tracer_provider``, ``logger_provider``, ``sinks``, ``max_queue_size``, ``concurrency``,
            ``sessions`` (a :class:`~otel_eval.evaluation.sessions.SessionLimits`: when a session's
            conversation-level metrics run, how many open sessions are held).

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
        sample_rate: float = _DEFAULTS.sample_rate,
        sample_priority: bool = _DEFAULTS.sample_priority,
        agent_names: Iterable[str] = (),
        root_span_names: Iterable[str] = (),
        exporter: InvocationExporter | None = None,
        registry: MetricRegistry | None = None,
        meter_provider: MeterProvider | None = None,
        max_open_traces: int = _DEFAULTS.max_open_traces,
        max_spans_per_trace: int = _DEFAULTS.max_spans_per_trace,
        max_buffer_bytes: int = _DEFAULTS.max_buffer_bytes,
        max_pending_spans: int = _DEFAULTS.max_pending_spans,
        trace_idle_timeout: float = _DEFAULTS.trace_idle_timeout,
        enrich: SpanProcessor | None = None,
        enrichment_wait_seconds: float = _DEFAULT_ENRICHMENT_WAIT_SECONDS,
        pipeline: PipelineMetrics | None = None,
        isolation: str = _DEFAULTS.isolation,
        **embedded: Unpack[EmbeddedOptions],
    ) -> None:
        limits = Limits(max_open_traces, max_spans_per_trace, max_buffer_bytes, max_pending_spans, trace_idle_timeout)
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
        if isolation not in (env.ISOLATION_THREAD, env.ISOLATION_PROCESS):
            raise ValueError(f"isolation must be 'thread' or 'process', got {isolation!r}")
        if isinstance(eval_set, (str, Path)):
            eval_set = load_eval_set(eval_set)
        self._isolation = isolation
        self._shutdown = False
        engine = process_engine if isolation == env.ISOLATION_PROCESS else in_thread_engine
        self._engine: Engine = engine(
            criteria, eval_set=eval_set, sample_rate=sample_rate, sample_priority=sample_priority,
            agent_names=agent_names, root_span_names=root_span_names, limits=limits, exporter=exporter,
            registry=registry, meter_provider=meter_provider, pipeline=pipeline, enrich=enrich,
            enrichment_wait_seconds=enrichment_wait_seconds, **embedded,
        )  # fmt: skip
        self.pipeline = self._engine.pipeline
        self.log_record_processor = self._engine.log_record_processor
        """Add to the ``LoggerProvider`` when the instrumentation puts message content on log records
        (``EVENT_ONLY``): they are joined to their spans before the rebuild (:mod:`otel_eval.processor._logs`)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> EvaluationSpanProcessor:
        """A processor configured by the ``OTEL_EVAL_*`` variables (:mod:`otel_eval.environment_variables`).

        With ``OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS`` set, requests go to Kafka (and the embedded worker's overrides,
        such as ``logger_provider=``, are left out); otherwise to the embedded worker. Keyword ``overrides`` win over
        the environment (e.g. ``tracer_provider=...``). With ``OTEL_EVAL_ISOLATION=process`` the evaluation process
        exports as ``OTEL_*_EXPORTER`` say, so ``tracer_provider=`` and ``logger_provider=`` are left out (said at
        INFO): the same line serves every set-up.

        Raises:
            ConfigurationError: a bad ``OTEL_EVAL_*`` value (naming the variable), or bad Kafka settings.
        """
        return cls(**processor_options(environ, overrides))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(isolation={self._isolation!r}, {self._engine!r}, shutdown={self._shutdown})"

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Queues the start (the open-span bookkeeping decides when an invocation is complete). Never blocks."""
        try:
            self._engine.on_start(span, parent_context)
        except Exception:  # the agent's thread: log (deduplicated), never raise
            logger.exception("EvaluationSpanProcessor.on_start failed")

    def on_end(self, span: ReadableSpan) -> None:
        """Queues a sampled ended span; drops and counts it when the queue is full. Never blocks."""
        try:
            self._engine.on_end(span)
        except Exception:  # the agent's thread: log (deduplicated), never raise
            logger.exception("EvaluationSpanProcessor.on_end failed")

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Hands every complete buffered trace on and waits until it is evaluated (with ``isolation="process"``, and
        its scores exported by the evaluation process).

        Incomplete traces (root still open) stay buffered. Returns False when ``timeout_millis`` passed first;
        the wait never exceeds it.
        """
        if self._shutdown:
            return False
        return self._engine.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """Stops intake, hands on complete traces, drains the transport within ``timeout_millis``. Idempotent."""
        if self._shutdown:
            return
        self._shutdown = True
        self._engine.shutdown(timeout_millis)

    def stats(self) -> dict[str, int]:
        """Pipeline counts (see the class docs) plus the current buffer occupancy. With ``isolation="process"``:
        this process's counts, and the evaluation process's as of the last ``force_flush`` (``evaluation_process.``
        before each name)."""
        return self._engine.stats()
