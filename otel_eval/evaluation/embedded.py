"""The embedded worker, built: the evaluation core on an :class:`EmbeddedWorker`, and where its scores go.

:func:`embedded_worker` is what :class:`~otel_eval.EvaluationSpanProcessor` uses when no ``exporter`` is given;
its keywords (:class:`EmbeddedOptions`) are the processor's embedded-only objects and three of its settings. Without
a provider argument the emitters use the global OpenTelemetry providers, which are no-ops until an SDK provider is
set: a processor attached with one line would evaluate every invocation and show nothing, so that case logs
:data:`NO_DESTINATION_WARNING`.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypedDict

from opentelemetry._logs import LoggerProvider, get_logger_provider
from opentelemetry.metrics import MeterProvider, get_meter_provider
from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.trace import TracerProvider

from otel_eval import environment_variables as env
from otel_eval.emit import Emitters, RecordSink
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.emit.sinks import sinks_from_env
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.evaluation.criteria import criteria_from, judge_problems, select_criteria
from otel_eval.evaluation.embedded_worker import EmbeddedWorker
from otel_eval.evaluation.sessions import SessionLimits
from otel_eval.judge import JUDGE_NOT_CONFIGURED, Judge
from otel_eval.metrics import REFERENCE_FREE_JUDGE_METRICS, MetricRegistry, default_registry
from otel_eval.model import EvalConfig, EvalSet

if TYPE_CHECKING:
    from typing import Unpack

logger = logging.getLogger(__name__)

NO_DESTINATION_WARNING = (
    "EvaluationSpanProcessor: the scores go nowhere: no logger_provider= or meter_provider= was passed and no "
    "OpenTelemetry SDK LoggerProvider or MeterProvider is set globally, so gen_ai.evaluation.result events and "
    "score metrics are dropped. Pass logger_provider= and meter_provider= (or set them with "
    "opentelemetry._logs.set_logger_provider / opentelemetry.metrics.set_meter_provider), sinks=[...], or set "
    f"{env.OTEL_EVAL_CONSOLE}=true to print one line per score."
)

NOTHING_EMITTED_WARNING = (
    f"EvaluationSpanProcessor: the scores go nowhere: {env.OTEL_EVAL_EMIT} (ProcessorSettings.emit) selects none of "
    "events, spans and metrics, and no sink is configured. Select a signal, pass sinks=[...], set "
    f"{env.OTEL_EVAL_SINKS}, or {env.OTEL_EVAL_CONSOLE}=true to print one line per score."
)


class EmbeddedOptions(TypedDict, total=False):
    """The embedded worker's own settings. :class:`~otel_eval.EvaluationSpanProcessor` takes the objects
    (``judge``, the providers, ``sinks``) as keywords; ``max_queue_size``, ``concurrency`` and ``sessions`` come from
    its :class:`~otel_eval.processor.ProcessorSettings`.

    Keys:
        judge: Judge client for judged metrics (default: one from the environment).
        tracer_provider: Where evaluation spans go (global when absent).
        logger_provider: Where ``gen_ai.evaluation.result`` events go (global when absent).
        sinks: Extra callables given each request's records.
        max_queue_size: Requests waiting for the worker (``OTEL_EVAL_QUEUE_SIZE``).
        concurrency: Requests evaluated at once (``OTEL_EVAL_WORKER_CONCURRENCY``).
        sessions: When a session's conversation-level metrics run and how many open sessions are held
            (``OTEL_EVAL_SESSION_IDLE_TIMEOUT``, ``OTEL_EVAL_SESSION_MAX_TURNS``, ``OTEL_EVAL_MAX_OPEN_SESSIONS``,
            ``OTEL_EVAL_MAX_SESSION_BYTES``); see :mod:`otel_eval.evaluation.embedded_worker`.
        explanations: False: results carry no explanation (``OTEL_EVAL_EXPLANATIONS``).
    """

    judge: Judge | None
    tracer_provider: TracerProvider | None
    logger_provider: LoggerProvider | None
    sinks: Sequence[RecordSink]
    max_queue_size: int
    concurrency: int
    sessions: SessionLimits
    explanations: bool


EMBEDDED_OPTIONS = frozenset(EmbeddedOptions.__annotations__)
"""The keyword names of :class:`EmbeddedOptions`."""


def embedded_worker(
    criteria: Mapping[str, Any] | EvalConfig | None = None,
    *,
    metric_names: Sequence[str] = (),
    eval_set: EvalSet | None = None,
    registry: MetricRegistry | None = None,
    meter_provider: MeterProvider | None = None,
    pipeline: PipelineMetrics | None = None,
    emit: Collection[str] = env.DEFAULT_EMIT,
    holds_session: Callable[[str], bool] | None = None,
    **options: Unpack[EmbeddedOptions],
) -> EmbeddedWorker:
    """The embedded worker: an in-process :class:`EmbeddedWorker` evaluating each request with an
    :class:`EvaluationCore` and emitting its scores.

    Args:
        criteria: What every request without its own criteria is scored with (see :class:`EvaluationCore`).
        metric_names: Run only these metrics, each with its criterion from ``criteria`` when it names it, else the
            metric's default (empty: ``criteria``, else the defaults, plus ADK's efficiency metrics).
        eval_set: Golden cases for the reference metrics (the core pairs each request with them).
        registry: Metric registry (the default one when None).
        meter_provider: Where score metrics and the judge's usage go (global when None).
        pipeline: Pipeline counters the worker reports drops and its queue through.
        emit: The signals emitted (checked names, :func:`~otel_eval.emit.selection.emit_signals`): ``spans``,
            ``events``, ``metrics``; an emitter not selected is not made (the sinks do not depend on it).
        holds_session: Which sessions' turns are held for their conversation-level metrics (all when None; see
            :class:`EmbeddedWorker`).
        **options: The worker's own objects and bounds (:class:`EmbeddedOptions`: ``judge``, ``tracer_provider``,
            ``logger_provider``, ``sinks``, ``max_queue_size``, ``concurrency``, ``sessions``).
            ``OTEL_EVAL_SINKS`` (and ``OTEL_EVAL_CONSOLE=true``) add the sinks they name.

    The judged metrics the judge cannot serve are warned of (:func:`warn_unservable_judges`) from the worker's thread
    as it starts, not here: asking a LiteLLM judge imports LiteLLM (seconds), which the caller (the agent's thread,
    for the span processor) should not wait for.

    Raises:
        ConfigurationError: unknown metric or invalid criterion.
        ValueError: ``max_queue_size`` or ``concurrency`` below 1.
    """
    judge = options.get("judge")
    tracer_provider = options.get("tracer_provider")
    logger_provider = options.get("logger_provider")
    if meter_provider is not None:
        judge = _judge_reporting_to(judge, meter_provider)
    emitters = Emitters.create(
        tracer_provider=tracer_provider,
        logger_provider=logger_provider,
        meter_provider=meter_provider,
        spans=env.EMIT_SPANS in emit,
        events=env.EMIT_EVENTS in emit,
        metrics=env.EMIT_METRICS in emit,
        sinks=output_sinks(
            options.get("sinks", ()),
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            logger_provider=logger_provider,
            emit=emit,
        ),
    )
    core = EvaluationCore(
        criteria=criteria,
        metric_names=metric_names,
        eval_set=eval_set,
        registry=registry,
        judge=judge,
        emitters=emitters,
        pipeline=pipeline,
        explanations=options.get("explanations", env.DEFAULT_EXPLANATIONS),
    )
    return EmbeddedWorker(
        core,
        max_queue_size=options.get("max_queue_size", env.DEFAULT_QUEUE_SIZE),
        concurrency=options.get("concurrency", env.DEFAULT_CONCURRENCY),
        pipeline=pipeline,
        sessions=options.get("sessions"),
        holds_session=holds_session,
        start_up=partial(warn_unservable_judges, criteria, metric_names, core.registry, judge),
    )


def embedded_exporter(criteria: Mapping[str, Any] | EvalConfig | None = None, **keywords: Any) -> EmbeddedWorker:
    """Deprecated name of :func:`embedded_worker` (the same arguments), with a ``DeprecationWarning``; removed in
    0.3.0."""
    warnings.warn(
        "otel_eval.evaluation.embedded.embedded_exporter is deprecated and removed in otel-eval 0.3.0: "
        "use embedded_worker (the same arguments)",
        DeprecationWarning,
        stacklevel=2,
    )
    return embedded_worker(criteria, **keywords)


def output_sinks(
    sinks: Sequence[RecordSink],
    *,
    tracer_provider: TracerProvider | None,
    meter_provider: MeterProvider | None,
    logger_provider: LoggerProvider | None,
    emit: Collection[str] = env.DEFAULT_EMIT,
) -> list[RecordSink]:
    """``sinks``, plus those ``OTEL_EVAL_SINKS`` and ``OTEL_EVAL_CONSOLE`` name (:func:`sinks_from_env`); logs
    :data:`NO_DESTINATION_WARNING` once when nothing would receive the scores (:data:`NOTHING_EMITTED_WARNING` when
    ``emit`` selects none of the signals).

    Only the signals ``emit`` selects count. An explicit ``tracer_provider`` counts (the caller chose where the
    evaluation spans go); the global tracer provider does not: agents set it after making the processor (ADK's set-up), and it exports only if the agent
    added an exporting processor, which cannot be told from here.
    """
    result = [*sinks, *sinks_from_env(meter_provider=meter_provider)]
    has_events = env.EMIT_EVENTS in emit and (
        logger_provider is not None or isinstance(get_logger_provider(), SdkLoggerProvider)
    )
    has_metrics = env.EMIT_METRICS in emit and (
        meter_provider is not None or isinstance(get_meter_provider(), SdkMeterProvider)
    )
    has_spans = env.EMIT_SPANS in emit and tracer_provider is not None
    if not (result or has_events or has_metrics or has_spans):
        signals = {env.EMIT_EVENTS, env.EMIT_METRICS, env.EMIT_SPANS}
        logger.warning(NO_DESTINATION_WARNING if signals & set(emit) else NOTHING_EMITTED_WARNING)
    return result


def warn_unservable_judges(
    criteria: Mapping[str, Any] | EvalConfig | None,
    metric_names: Sequence[str],
    registry: MetricRegistry | None,
    judge: Judge | None,
) -> None:
    """Logs at start-up, once per metric, each judged metric the judge cannot serve (every result of it would be
    NOT_EVALUATED, ``judge_not_configured``, with no other word), naming the metric and what to set. With no criteria
    the judged default metrics run only when the judge is configured; a judge model named in
    ``OTEL_EVAL_JUDGE_MODEL`` that is not says so too, since its metrics then silently do not run."""
    if judge is None:
        from otel_eval.judge import default_judge  # deferred: the client's modules load on first use

        judge = default_judge()
    registry = registry or default_registry()
    parsed = criteria_from(criteria)
    if parsed is None and not metric_names:
        if not judge.configured and os.environ.get(env.OTEL_EVAL_JUDGE_MODEL, "").strip():
            logger.warning(
                "EvaluationSpanProcessor: the judged metrics (%s) do not run: %s",
                ", ".join(name for name in REFERENCE_FREE_JUDGE_METRICS if name in registry),
                judge.not_configured_reason,
            )
        return
    selected = select_criteria(
        parsed, with_reference=False, with_judge=False, metric_names=metric_names, registry=registry
    )
    for metric, problem in judge_problems(selected, registry, judge).items():
        logger.warning(
            "EvaluationSpanProcessor: %s is NOT_EVALUATED on every invocation (%s): %s",
            metric,
            JUDGE_NOT_CONFIGURED,
            problem,
        )


def _judge_reporting_to(judge: Judge | None, meter_provider: MeterProvider) -> Judge:
    """The judge whose calls, tokens and cost go to ``meter_provider``, next to the scores.

    Without a judge, this worker gets its own client from the environment instead of the process-wide default,
    whose instruments may already report to another provider (the global one, or another processor's).
    """
    if judge is None:
        from otel_eval.judge.client import JudgeClient  # deferred: only an embedded evaluation needs it

        return JudgeClient(meter_provider=meter_provider)
    judge.use_meter_provider(meter_provider)
    return judge
