"""The worker's evaluation core: the shared :class:`~otel_eval.evaluation.core.EvaluationCore`, configured from the
worker's settings and emitting through its telemetry."""

from __future__ import annotations

import logging
import warnings
from functools import partial
from typing import Final

from otel_eval import environment_variables as env
from otel_eval.emit import Emitters
from otel_eval.evaluation.core import EvaluationCore, Scope, Started
from otel_eval.evaluation.criteria import check_metric_names, never_run_custom_metrics_of, registry_with_custom_metrics
from otel_eval.evaluation.request_criteria import ANY_METRIC
from otel_eval.model.messages import EvaluationRequest
from otel_eval.reconstruct.plain import PlainRequest
from otel_eval.reconstruct.reads import Reads
from otel_eval.transport import RequestEvaluator
from otel_eval.worker._judge_watch import JudgeWatch
from otel_eval.worker._metrics import WorkerMetrics
from otel_eval.worker.settings import SOURCE_OTLP_SPANS, WorkerSettings
from otel_eval.worker.telemetry import WorkerTelemetry

logger = logging.getLogger(__name__)


def build_core(
    settings: WorkerSettings, telemetry: WorkerTelemetry, metrics: WorkerMetrics | None = None
) -> EvaluationCore:
    """The shared evaluation core, configured from ``settings``, emitting through ``telemetry``'s providers (and
    nothing of what it has no provider for: ``--telemetry none`` emits no span, event or metric, nor what
    ``settings.emit`` does not select); its
    judge is the process-wide one (from the environment), reporting its calls through ``telemetry``'s meter provider.
    Requests' criteria pass the settings' :attr:`~WorkerSettings.request_policy`; refusals are counted in
    ``metrics``.

    Raises:
        ConfigurationError: bad criteria or eval set, or an unknown metric in ``settings.metrics`` or (honoured)
            ``settings.request_metrics``.
    """
    from opentelemetry.metrics import NoOpMeterProvider

    from otel_eval.emit.pipeline import PipelineMetrics
    from otel_eval.emit.sinks import sinks_from_env
    from otel_eval.judge import default_judge
    from otel_eval.model.loading import criteria_setting, eval_set_setting, setting_source

    # The worker emits through its own providers only (flushed before each commit): none for what it has none of,
    # and only the signals OTEL_EVAL_EMIT / --emit selects.
    emit = settings.emit_signals
    emitters = Emitters.create(
        tracer_provider=telemetry.tracer_provider,
        logger_provider=telemetry.logger_provider,
        meter_provider=telemetry.meter_provider,
        spans=telemetry.tracer_provider is not None and env.EMIT_SPANS in emit,
        events=telemetry.logger_provider is not None and env.EMIT_EVENTS in emit,
        metrics=telemetry.meter_provider is not None and env.EMIT_METRICS in emit,
        sinks=sinks_from_env(meter_provider=telemetry.meter_provider),  # OTEL_EVAL_SINKS: backends' score APIs
    )
    emitters.add_sink(JudgeWatch())
    # Without a meter provider of its own (``--telemetry none``) the core counts into a no-op one: the global
    # provider, which the worker never sets then, would be looked up (and found unset) for every request.
    pipeline_meters = telemetry.meter_provider if telemetry.meter_provider is not None else NoOpMeterProvider()
    judge = default_judge()
    judge.use_meter_provider(telemetry.meter_provider)
    source = setting_source(settings.criteria, setting=settings.setting_name("criteria"))
    criteria = criteria_setting(settings.criteria, setting=settings.setting_name("criteria"))
    for line in never_run_custom_metrics_of(criteria, settings.metric_names):
        logger.warning("%s: %s", source, line)
    policy = settings.request_policy
    if policy.honour:  # a misspelt name would refuse every request naming the metric meant, quietly
        allowed = sorted(policy.metrics - {ANY_METRIC})
        setting = settings.setting_name("request_metrics")
        check_metric_names(allowed, registry_with_custom_metrics(criteria), setting=setting)
    core = EvaluationCore(
        criteria=criteria,
        metric_names=settings.metric_names,
        metrics_setting=settings.setting_name("metrics"),
        criteria_setting=source,
        judge=judge,
        eval_set=eval_set_setting(settings.eval_set, setting=settings.setting_name("eval_set")),
        emitters=emitters,
        pipeline=PipelineMetrics(pipeline_meters, transport="kafka"),
        request_policy=policy,
        on_refused=metrics.criteria_refused if metrics is not None else None,
        explanations=settings.explanations,
    )
    _warn_reference_metrics_without_eval_set(settings, core)
    return core


def _warn_reference_metrics_without_eval_set(settings: WorkerSettings, core: EvaluationCore) -> None:
    """Said once at start-up: on the Collector path nothing but the worker's eval set pairs a trace with a case, so
    without one its reference metrics are never scored (online, an unpaired invocation gets none of them)."""
    if settings.eval_set or SOURCE_OTLP_SPANS not in settings.sources:
        return
    names = core.reference_metrics()
    if names:
        logger.warning(
            "%s need an eval set (%s): the traces read from %s pair with no case, so these metrics are never scored",
            ", ".join(names),
            settings.setting_name("eval_set"),
            settings.kafka_spans_topic,
        )


EVALUATOR_CORE_REMOVED_IN: Final = "0.3.0"
"""The version in which ``Worker(core=...)`` takes only an :class:`~otel_eval.evaluation.core.EvaluationCore`."""


class _EvaluatorCore(EvaluationCore):
    """A core of the earlier form: any :class:`~otel_eval.transport.RequestEvaluator` (an ``evaluate(request)``
    coroutine that scores and emits), which the worker scores each request with, alone, as it did before it took only
    an :class:`EvaluationCore`: everything rebuilt, no turn held for its session."""

    def __init__(self, evaluator: RequestEvaluator) -> None:
        super().__init__(judge_configured=False, emitters=Emitters(None))
        self._evaluator = evaluator

    def reads(self) -> Reads:
        return Reads.ALL

    def holds_sessions(self, request: EvaluationRequest) -> bool:
        return False

    def start(
        self, request: EvaluationRequest | PlainRequest, *, scope: Scope = "all", sessions: bool = False
    ) -> Started:
        full = request if isinstance(request, EvaluationRequest) else request.full()
        return Started([], on_loop=partial(self._evaluator.evaluate, full))

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        flush = getattr(self._evaluator, "force_flush", None)
        return bool(flush(timeout_millis)) if callable(flush) else True

    def shutdown(self, timeout_millis: int = 30000) -> None:
        stop = getattr(self._evaluator, "shutdown", None)
        if callable(stop):
            stop(timeout_millis)


def worker_core(core: EvaluationCore | RequestEvaluator) -> EvaluationCore:
    """``core`` as the worker uses it: an :class:`EvaluationCore` as it is; any other
    :class:`~otel_eval.transport.RequestEvaluator` (the form ``Worker(core=...)`` took before), with a
    ``DeprecationWarning``, scoring each request alone."""
    if isinstance(core, EvaluationCore):
        return core
    warnings.warn(
        f"Worker(core={type(core).__name__}(...)): a core that is not an EvaluationCore is deprecated and stops "
        f"working in otel-eval {EVALUATOR_CORE_REMOVED_IN}: pass an otel_eval.evaluation.core.EvaluationCore "
        "(it scores each request alone until then: no session is held, everything is rebuilt)",
        DeprecationWarning,
        stacklevel=3,  # the caller of Worker(...)
    )
    return _EvaluatorCore(core)
