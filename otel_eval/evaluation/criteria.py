"""Which metrics run with which criterion: ADK criteria parsed, and the defaults when none are given."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import pydantic

from otel_eval import environment_variables as env
from otel_eval.errors import ConfigurationError, MetricNotFoundError
from otel_eval.judge import ModelAwareJudge
from otel_eval.metrics import (
    EFFICIENCY_METRICS,
    REFERENCE_FREE_JUDGE_METRICS,
    MetricRegistry,
    default_registry,
)
from otel_eval.model import (
    DEFAULT_EVAL_CONFIG,
    BaseCriterion,
    CustomMetricConfig,
    EvalConfig,
)
from otel_eval.model.loading import EVAL_CONFIG_KEYS, criteria_object_problem, validation_problems

if TYPE_CHECKING:
    from otel_eval.judge import Judge


def criteria_from(value: Mapping[str, Any] | EvalConfig | None) -> dict[str, BaseCriterion] | None:
    """ADK criteria (``{metric: threshold | criterion}``, ``{"criteria": {...}}`` or an ``EvalConfig``), parsed.

    Raises:
        ConfigurationError: not an ADK criteria mapping.
    """
    if value is None:
        return None
    if isinstance(value, EvalConfig):
        config = value
    else:
        data = dict(value)
        problem = criteria_object_problem(data)
        if problem is not None:
            raise ConfigurationError(f"criteria: {problem}")
        if set(data) <= EVAL_CONFIG_KEYS and isinstance(data.get("criteria"), Mapping):
            data = dict(data["criteria"])
        try:
            config = EvalConfig.model_validate({"criteria": data})
        except pydantic.ValidationError as exc:
            problems = validation_problems(exc)  # one line each, not pydantic's multi-line dump
            more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
            raise ConfigurationError(f"invalid criteria: {'; '.join(problems[:3])}{more}") from exc
    return {name: config.criterion_for(name) for name in config.criteria}


def custom_metrics_of(value: Mapping[str, Any] | EvalConfig | None) -> dict[str, CustomMetricConfig]:
    """The ``custom_metrics`` of an ``EvalConfig`` (or of its JSON mapping), validated as data: nothing is imported.

    Raises:
        ConfigurationError: ``custom_metrics`` is not ADK's shape.
    """
    if value is None:
        return {}
    if isinstance(value, EvalConfig):
        return dict(value.custom_metrics or {})
    raw = (value.get("custom_metrics") or value.get("customMetrics")) if isinstance(value, Mapping) else None
    if not raw:
        return {}
    try:
        config = EvalConfig.model_validate({"custom_metrics": raw})
    except ValueError as exc:
        raise ConfigurationError(f"custom_metrics: {exc}") from exc
    return dict(config.custom_metrics or {})


def never_run_custom_metrics(custom_metrics: Iterable[str], criteria: Iterable[str]) -> list[str]:
    """One line for each custom metric (by name) that ``criteria`` (the names) does not name: ADK runs only the
    metrics its criteria name, and so does otel-eval, so such a metric never runs and gives no score."""
    return [
        f"custom_metrics.{name}: not in criteria, so it never runs (as in ADK): give it a threshold under "
        f"criteria.{name}"
        for name in sorted(set(custom_metrics) - set(criteria))
    ]


def never_run_custom_metrics_of(
    config: Mapping[str, Any] | EvalConfig | None, metric_names: Sequence[str] = ()
) -> list[str]:
    """:func:`never_run_custom_metrics` of an eval config (the process's own: ``run --config``, the processor's
    criteria, the worker's ``--criteria``); none when ``metric_names`` choose the metrics to run, or when the config is
    invalid (refused where it is planned)."""
    if metric_names:
        return []
    try:
        custom = custom_metrics_of(config)
        criteria = criteria_from(config) if custom else None
    except ConfigurationError:
        return []
    return never_run_custom_metrics(custom, criteria or {})


def registry_with_custom_metrics(
    own_config: Mapping[str, Any] | EvalConfig | None, registry: MetricRegistry | None = None
) -> MetricRegistry:
    """``registry`` (default: :func:`default_registry`), forked, with the custom metrics of ``own_config`` -- the
    process's own configuration (its criteria file, flags, environment), never a request's criteria: their
    functions are imported here. Without custom metrics, ``registry`` itself.

    Raises:
        ConfigurationError: a custom metric's function cannot be loaded (naming the metric and its path).
    """
    registry = registry or default_registry()
    custom = custom_metrics_of(own_config)
    if not custom:
        return registry
    from otel_eval.metrics.custom_metric import with_custom_metrics  # deferred: imports user code

    return with_custom_metrics(registry.fork(), custom)


METRICS_SETTING: Final = f"{env.OTEL_EVAL_METRICS} / metrics"
"""How a start-up error names the metrics to run (``ProcessorSettings.metrics``, the worker's ``--metrics``)."""


def metric_names_setting(names: str | Iterable[str]) -> tuple[str, ...]:
    """The metrics to run, as a tuple without blanks or repeats: from names, or one comma-separated string."""
    return env.names_setting(names)


def check_metric_names(names: Iterable[str], registry: MetricRegistry, *, setting: str = METRICS_SETTING) -> None:
    """Fails at start-up on a name of the metrics to run that ``registry`` does not hold.

    Raises:
        ConfigurationError: naming ``setting`` (where the names came from) and the unknown name (with close names).
    """
    for name in names:
        try:
            registry.get(name)
        except MetricNotFoundError as error:
            raise ConfigurationError(f"{setting}: {error}") from None


def check_budget_metrics(judge: Judge | None, registry: MetricRegistry) -> None:
    """Fails at start-up on a metric name of the judge budget (``OTEL_EVAL_JUDGE_BUDGET``) that ``registry`` does not
    hold: ``judge``'s budget, else the process-wide default judge's (what the metrics use without one); a Judge of
    another kind has none.

    Raises:
        ConfigurationError: naming the setting and the unknown name (with close names).
    """
    if judge is None:
        from otel_eval.judge import default_judge

        judge = default_judge()
    budget = getattr(judge, "budget", None)
    if budget is not None:
        budget.spec.check_metrics(registry)


def judge_problems(criteria: Mapping[str, Any], registry: MetricRegistry, judge: Judge | None = None) -> dict[str, str]:
    """Each judged metric of ``criteria`` whose judge model ``judge`` (else the process-wide default judge) cannot
    serve -- its provider has no credentials, its extra is missing, ADK resolves it to a class not served here --
    with why: such a metric is NOT_EVALUATED (``judge_not_configured``) on every invocation. Known without a network
    call."""
    if judge is None:
        from otel_eval.judge import default_judge

        judge = default_judge()
    found: dict[str, str] = {}
    for name, criterion in criteria.items():
        if name not in registry or not registry.info(name).requires_judge:
            continue
        model = _judge_model_of(name, criterion, registry, judge)
        # A judge that cannot tell models apart is asked about itself (a Judge of another kind, a test double).
        problem = judge.problem_for(model) if isinstance(judge, ModelAwareJudge) else judge.not_configured_reason
        if problem is not None:
            found[name] = problem
    return found


def _judge_model_of(name: str, criterion: BaseCriterion | None, registry: MetricRegistry, judge: Judge) -> str:
    """The judge model metric ``name`` asks with ``criterion``, read as the metric reads it (a config's criterion
    holds ``judge_model_options`` as raw JSON until the metric validates it); the judge's default when the criterion
    is invalid (refused where the plan is built) or the metric names no model of its own."""
    try:
        model = getattr(registry.create(name, criterion, judge=judge), "judge_model", None)
    except ConfigurationError:
        model = None
    return model if isinstance(model, str) else judge.model_for(None)


def builtin_metric_names(
    criteria: Mapping[str, BaseCriterion] | None, config: Mapping[str, Any] | EvalConfig | None
) -> list[str]:
    """The metrics of ``criteria`` that are not custom metrics of ``config`` (those are checked where they load)."""
    custom = custom_metrics_of(config)
    return [name for name in criteria or {} if name not in custom]


def select_criteria(
    criteria: Mapping[str, BaseCriterion] | None,
    *,
    with_reference: bool,
    with_judge: bool,
    metric_names: Sequence[str] = (),
    registry: MetricRegistry | None = None,
) -> dict[str, BaseCriterion | None]:
    """Which metrics run with which criterion.

    ``metric_names`` when given (each with its criterion from ``criteria`` when it has one, else the metric's
    default), else ``criteria`` (empty criteria, like ADK's config with ``"criteria": {}``, select none), else (None:
    no criteria given at all) the defaults: ADK's (``tool_trajectory_avg_score`` 1.0, ``response_match_score`` 0.8)
    ``with_reference``, plus the reference-free judged metrics ``with_judge``. ADK's informational efficiency
    metrics are added unless metrics were named.

    Raises:
        ConfigurationError: a name in ``metric_names`` is not a registered metric.
    """
    registry = registry or default_registry()
    if metric_names:
        for name in metric_names:
            registry.get(name)  # unknown names fail here, before any work
        return {name: (criteria or {}).get(name) for name in metric_names}
    selected: dict[str, BaseCriterion | None]
    if criteria is not None:
        selected = dict(criteria)
    else:
        selected = {}
        if with_reference:
            selected = {name: DEFAULT_EVAL_CONFIG.criterion_for(name) for name in DEFAULT_EVAL_CONFIG.criteria}
        if with_judge:
            selected.update({name: None for name in REFERENCE_FREE_JUDGE_METRICS if name in registry})
    for name in EFFICIENCY_METRICS:
        if name in registry:
            selected.setdefault(name, None)
    return selected
