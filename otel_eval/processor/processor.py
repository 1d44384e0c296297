"""``EvaluationSpanProcessor``: online evaluation of agent invocations, attached to a ``TracerProvider``."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry._logs import LoggerProvider
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import TracerProvider

from otel_eval import environment_variables as env
from otel_eval._runtime.log_filters import DuplicateLogFilter
from otel_eval._runtime.unknown_variables import warn_unknown_variables
from otel_eval.emit import RecordSink
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.evaluation.criteria import never_run_custom_metrics_of
from otel_eval.judge import Judge
from otel_eval.metrics import MetricRegistry
from otel_eval.model import EvalConfig
from otel_eval.processor._deprecated_keywords import DeprecatedKeywords, with_deprecated_keywords
from otel_eval.processor._process.exporters import process_engine
from otel_eval.processor._settings import Engine, EngineOptions, ProcessorSettings, processor_options
from otel_eval.processor._thread_engine import in_thread_engine
from otel_eval.transport.base import InvocationExporter

if TYPE_CHECKING:
    from typing import Unpack

logger = logging.getLogger(__name__)

logger.addFilter(DuplicateLogFilter())


class EvaluationSpanProcessor(SpanProcessor):
    """Evaluates each agent invocation when its spans end, and emits the scores as OpenTelemetry data.

    Add it to the agent's tracer provider (before the exporting processor, so evaluation spans emitted while it
    drains at shutdown are still exported)::

        provider.add_span_processor(EvaluationSpanProcessor(criteria={"hallucinations_v1": 0.8}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))

    Like ``BatchSpanProcessor``, it takes what it works with as arguments and its plain values as one frozen
    :class:`~otel_eval.processor.ProcessorSettings`::

        EvaluationSpanProcessor(settings=ProcessorSettings(isolation="process", sample_rate=0.1))

    ``on_start`` and ``on_end`` only append to bounded queues and return; a daemon thread (``OtelEvalSpanProcessor``)
    rebuilds each complete invocation and hands it to the transport; with the embedded one, that thread also scores
    and emits every invocation that needs no judge. How completeness is decided, the limits and the counters are
    described in :mod:`otel_eval.processor`; :meth:`stats` returns the same counts in-process.

    Args:
        criteria: ADK criteria (``{metric: threshold | criterion dict}``, ``{"criteria": {...}}`` or an
            ``EvalConfig``); None runs the efficiency metrics, plus ``hallucinations_v1`` and ``safety_v1`` when
            judge credentials are configured, plus ADK's reference metrics on invocations matching the settings'
            ``eval_set``. ADK's efficiency metrics are added to given criteria too, unless the settings' ``metrics``
            name the metrics to run (then only those run, each with its criterion from here when it has one, else
            the metric's default). The ``custom_metrics`` of an ``EvalConfig`` (ADK custom metrics) are imported by
            the embedded worker.
        settings: The plain values: the ``metrics`` to run, sampling, selection, limits, the embedded worker's
            queue, concurrency and sessions, the golden ``eval_set``, the ``isolation`` and the signals the scores
            are emitted as (``emit``: events, spans, metrics, root-span attributes) (defaults when None). With
            ``isolation="process"`` the evaluation runs in a child process, off the agent's GIL; it exports the
            scores as ``OTEL_TRACES_EXPORTER``, ``OTEL_LOGS_EXPORTER`` and ``OTEL_METRICS_EXPORTER`` say, so
            provider, judge and registry objects (which cannot cross) are refused; ``sinks`` are called here with the
            records it sends back, and ``enrich`` holds the roots here for the score attributes it sends back.
        exporter: Transport of the requests (e.g. :class:`~otel_eval.transport.kafka.KafkaInvocationExporter`);
            when None, the embedded worker built by :func:`otel_eval.evaluation.embedded.embedded_worker`.
        registry: Metrics the criteria may name (checked here, at start-up); the embedded worker evaluates with it.
        meter_provider: Where the pipeline counters go, and in embedded mode the score metrics and the judge's usage
            (global when None).
        tracer_provider: Where the embedded worker's evaluation spans go (global when None).
        logger_provider: Where the embedded worker's ``gen_ai.evaluation.result`` events go (global when None).
        judge: The embedded worker's judge client for judged metrics (default: one from the environment).
        sinks: Extra callables given each request's records by the embedded worker.
        enrich: The user's exporting processor to wrap: it receives every span, with each sampled local root span
            held until its scores arrive (then exported with ``gen_ai.evaluation.<metric>.score`` attributes) or
            ``enrichment_wait_seconds`` pass (then exported unchanged). Scores arrive in embedded mode only.
        enrichment_wait_seconds: How long a root span is held for its scores.
        pipeline: The pipeline counters to report through, when the exporter already shares them (``from_env``
            builds one for the Kafka exporter and the processor, so each instrument exists once).
        **deprecated: The settings as keywords, the form before ``settings=`` (``eval_set=``, ``isolation=``,
            ``sample_rate=``, ... :class:`~otel_eval.processor._deprecated_keywords.DeprecatedKeywords`): applied over
            ``settings``, with a ``DeprecationWarning``; removed in 0.3.0.

    Raises:
        ConfigurationError: unknown metric (in the criteria or the settings' ``metrics``) or invalid criterion, or
            ``metrics`` named with an ``exporter`` (the evaluating side chooses them).
        TypeError: the embedded worker's objects (``judge``, the providers, ``sinks``) given together with an
            ``exporter`` (which does not evaluate here), or objects that cannot cross into the evaluation process
            with ``isolation="process"``.
    """

    def __init__(
        self,
        criteria: Mapping[str, Any] | EvalConfig | None = None,
        *,
        settings: ProcessorSettings | None = None,
        exporter: InvocationExporter | None = None,
        registry: MetricRegistry | None = None,
        meter_provider: MeterProvider | None = None,
        tracer_provider: TracerProvider | None = None,
        logger_provider: LoggerProvider | None = None,
        judge: Judge | None = None,
        sinks: Sequence[RecordSink] | None = None,
        enrich: SpanProcessor | None = None,
        enrichment_wait_seconds: float = 5.0,
        pipeline: PipelineMetrics | None = None,
        **deprecated: Unpack[DeprecatedKeywords],
    ) -> None:
        settings = with_deprecated_keywords(settings, deprecated)
        embedded = {"judge": judge, "tracer_provider": tracer_provider, "logger_provider": logger_provider,
                    "sinks": sinks}  # fmt: skip
        given = sorted(name for name, value in embedded.items() if value is not None)
        if exporter is not None and given:
            raise TypeError(
                f"{', '.join(given)}: objects of the embedded worker, which does not run when an exporter "
                f"is given ({type(exporter).__name__}); configure the evaluating side instead"
            )
        self._settings = settings
        self._shutdown = False
        options = EngineOptions(
            criteria, settings, exporter=exporter, registry=registry, meter_provider=meter_provider,
            tracer_provider=tracer_provider, logger_provider=logger_provider, judge=judge, sinks=sinks or (),
            enrich=enrich, enrichment_wait_seconds=enrichment_wait_seconds, pipeline=pipeline,
        )  # fmt: skip
        engine = process_engine if settings.isolation == env.ISOLATION_PROCESS else in_thread_engine
        self._engine: Engine = engine(options)
        for line in never_run_custom_metrics_of(criteria, settings.metrics):
            logger.warning("EvaluationSpanProcessor: %s", line)
        if (
            type(self).on_start is EvaluationSpanProcessor.on_start
            and type(self).on_end is EvaluationSpanProcessor.on_end
        ):
            # The engine's hooks catch everything themselves: called directly, without the methods' frame (they run
            # on the agent's thread for every span). A subclass overriding a hook keeps the methods.
            self.on_start = self._engine.on_start  # type: ignore[method-assign, assignment]
            self.on_end = self._engine.on_end  # type: ignore[method-assign, assignment]
        self.pipeline = self._engine.pipeline
        self.log_record_processor = self._engine.log_record_processor
        """Add to the ``LoggerProvider`` when the instrumentation puts message content on log records
        (``EVENT_ONLY``): they are joined to their spans before the rebuild (:mod:`otel_eval.processor._logs`)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> EvaluationSpanProcessor:
        """A processor configured by the ``OTEL_EVAL_*`` variables (:mod:`otel_eval.environment_variables`).

        With ``OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS`` set, requests go to Kafka (and the embedded worker's overrides,
        such as ``logger_provider=``, are left out); otherwise to the embedded worker. Keyword ``overrides`` win over
        the environment: plain values (``sample_rate=0.1``) replace the settings', objects are passed on (e.g.
        ``tracer_provider=...``). With ``OTEL_EVAL_ISOLATION=process`` the evaluation process
        exports as ``OTEL_*_EXPORTER`` say, so ``tracer_provider=`` and ``logger_provider=`` are left out (said at
        INFO): the same line serves every set-up.

        Raises:
            ConfigurationError: a bad ``OTEL_EVAL_*`` value (naming the variable), or bad Kafka settings.
        """
        warn_unknown_variables(os.environ if environ is None else environ)  # a misspelt name is said, not ignored
        return cls(**processor_options(environ, overrides))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(isolation={self._settings.isolation!r}, {self._engine!r}, shutdown={self._shutdown})"

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
        the wait never exceeds it. With ``isolation="process"``, also False when spans or log records handed on since
        the previous flush were lost with the evaluation process (it died or stopped answering before evaluating
        them, or none was running to take them: ``otel_eval.spans.dropped{otel_eval.drop.reason=transport_error}``
        counts those it could not send). Each loss fails one flush; the next returns True when nothing more was lost.
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
