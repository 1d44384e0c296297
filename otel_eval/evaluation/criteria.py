"""Which metrics run with which criterion: ADK criteria parsed, and the defaults when none are given."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from otel_eval.errors import ConfigurationError
from otel_eval.metrics import (
    EFFICIENCY_METRICS,
    REFERENCE_FREE_JUDGE_METRICS,
    MetricRegistry,
    default_registry,
)
from otel_eval.model import (
    DEFAULT_EVAL_CONFIG,
    BaseCriterion,
    EvalConfig,
)

_CONFIG_KEYS = {"criteria", "custom_metrics", "user_simulator_config", "live_model_config"}


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
        if set(data) <= _CONFIG_KEYS and isinstance(data.get("criteria"), Mapping):
            data = dict(data["criteria"])
        try:
            config = EvalConfig.model_validate({"criteria": data})
        except ValueError as exc:
            raise ConfigurationError(f"criteria: {exc}") from exc
    return {name: config.criterion_for(name) for name in config.criteria}


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
    default), else ``criteria``, else the defaults: ADK's (``tool_trajectory_avg_score`` 1.0,
    ``response_match_score`` 0.8) ``with_reference``, plus the reference-free judged metrics ``with_judge``. ADK's
    informational efficiency metrics are added unless metrics were named.

    Raises:
        ConfigurationError: a name in ``metric_names`` is not a registered metric.
    """
    registry = registry or default_registry()
    if metric_names:
        for name in metric_names:
            registry.get(name)  # unknown names fail here, before any work
        return {name: (criteria or {}).get(name) for name in metric_names}
    selected: dict[str, BaseCriterion | None]
    if criteria:
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
