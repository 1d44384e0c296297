"""The explicit registry of metrics: name -> evaluator class (with its :class:`MetricInfo`).

Metrics of your own, written against :class:`~otel_eval.metrics.Evaluator`, join every registry
:func:`default_registry` makes (``otel-eval run``, the embedded worker, the Kafka worker) in one of two ways:

* :func:`register` (``otel_eval.metrics.register(MyEvaluator)``, also a class decorator), called in the process
  before the evaluation starts;
* an entry point in the group ``otel_eval.metrics`` of an installed package, naming the evaluator class
  (``[project.entry-points."otel_eval.metrics"] my_metric = "mypkg.metrics:MyEvaluator"``), loaded once.

ADK's custom metrics (functions named in an ``EvalConfig``'s ``custom_metrics``) are added per configuration by
:func:`otel_eval.metrics.custom_metric.with_custom_metrics`.
"""

from __future__ import annotations

import difflib
import logging
import threading
from importlib import metadata
from typing import TypeVar

from otel_eval.errors import ConfigurationError, MetricNotFoundError
from otel_eval.judge import Judge
from otel_eval.metrics.base import Evaluator, MetricInfo
from otel_eval.model import BaseCriterion

logger = logging.getLogger(__name__)

EFFICIENCY_METRICS: tuple[str, ...] = (
    "tool_call_count_v1",
    "inference_call_count_v1",
    "token_usage_v1",
    "invocation_duration_v1",
)
"""ADK's informational efficiency metrics, added to every evaluation (offline and online)."""

REFERENCE_FREE_JUDGE_METRICS: tuple[str, ...] = ("hallucinations_v1", "safety_v1")
"""Judged metrics run by default, without an eval set, when judge credentials are configured."""

ENTRY_POINT_GROUP = "otel_eval.metrics"
"""Entry-point group of installed packages' metrics (each entry point names an :class:`Evaluator` subclass)."""

EvaluatorT = TypeVar("EvaluatorT", bound=type[Evaluator])

_registered: list[type[Evaluator]] = []
_entry_points: list[type[Evaluator]] | None = None
_lock = threading.Lock()


class MetricRegistry:
    """Maps metric names to evaluator classes. :meth:`create` returns a fresh evaluator per call."""

    def __init__(self) -> None:
        self._evaluators: dict[str, type[Evaluator]] = {}

    def register(self, evaluator_type: type[Evaluator]) -> None:
        """Adds (or replaces, with a log line) the metric ``evaluator_type.info.name``."""
        name = evaluator_type.info.name
        if name in self._evaluators:
            logger.info("replacing metric %s: %s -> %s", name, self._evaluators[name], evaluator_type)
        self._evaluators[name] = evaluator_type

    def get(self, name: str) -> type[Evaluator]:
        """The evaluator class of ``name``.

        Raises:
            MetricNotFoundError: no such metric; the message suggests close names.
        """
        try:
            return self._evaluators[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._evaluators, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; known metrics: {', '.join(self.names())}"
            raise MetricNotFoundError(f"unknown metric {name!r}{hint}") from None

    def info(self, name: str) -> MetricInfo:
        """The :class:`MetricInfo` of ``name``."""
        return self.get(name).info

    def create(self, name: str, criterion: BaseCriterion | None = None, *, judge: Judge | None = None) -> Evaluator:
        """A new evaluator of ``name`` with ``criterion`` (validated; ConfigurationError when invalid)."""
        return self.get(name)(criterion, judge=judge)

    def names(self) -> list[str]:
        """Registered metric names, in registration order."""
        return list(self._evaluators)

    def infos(self) -> list[MetricInfo]:
        """Every registered metric's info, in registration order."""
        return [evaluator.info for evaluator in self._evaluators.values()]

    def __contains__(self, name: object) -> bool:
        return name in self._evaluators

    def fork(self) -> MetricRegistry:
        """A copy with the same metrics; what is registered afterwards on either is invisible to the other."""
        forked = MetricRegistry()
        forked._evaluators = dict(self._evaluators)
        return forked


def register(evaluator_type: EvaluatorT) -> EvaluatorT:
    """Adds a metric of your own to every registry :func:`default_registry` makes from now on (usable as a class
    decorator). It replaces a built-in metric of the same name.

    Raises:
        TypeError: not an :class:`Evaluator` subclass with a :class:`MetricInfo` ``info``.
    """
    _check_evaluator(evaluator_type, f"register({getattr(evaluator_type, '__name__', evaluator_type)!r})")
    with _lock:
        _registered.append(evaluator_type)
    return evaluator_type


def _check_evaluator(evaluator_type: object, where: str) -> None:
    if not (isinstance(evaluator_type, type) and issubclass(evaluator_type, Evaluator)):
        raise TypeError(f"{where}: not a subclass of otel_eval.metrics.Evaluator")
    if not isinstance(getattr(evaluator_type, "info", None), MetricInfo):
        raise TypeError(f"{where}: the evaluator class has no MetricInfo 'info'")


def _entry_point_evaluators() -> list[type[Evaluator]]:
    """The evaluator classes of the ``otel_eval.metrics`` entry points, loaded once.

    Raises:
        ConfigurationError: an entry point that cannot be loaded or is not an evaluator class (named).
    """
    global _entry_points
    with _lock:
        if _entry_points is not None:
            return _entry_points
        loaded: list[type[Evaluator]] = []
        for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
            where = f"entry point {entry_point.name} = {entry_point.value} (group {ENTRY_POINT_GROUP})"
            try:
                evaluator_type = entry_point.load()
            except Exception as exc:  # any failure of installed code stops start-up with its cause
                raise ConfigurationError(f"{where}: cannot load: {type(exc).__name__}: {exc}") from exc
            try:
                _check_evaluator(evaluator_type, where)
            except TypeError as exc:
                raise ConfigurationError(str(exc)) from None
            loaded.append(evaluator_type)
        _entry_points = loaded
        return loaded


def default_registry() -> MetricRegistry:
    """A registry with every built-in metric, registered explicitly one by one, then the metrics of the
    ``otel_eval.metrics`` entry points and those given to :func:`register`.

    Raises:
        ConfigurationError: an entry point cannot be loaded.
    """
    registry = MetricRegistry()
    for evaluator in _builtin_evaluators():
        registry.register(evaluator)
    for evaluator in _entry_point_evaluators():
        registry.register(evaluator)
    with _lock:
        registered = list(_registered)
    for evaluator in registered:
        registry.register(evaluator)
    return registry


def _builtin_evaluators() -> list[type[Evaluator]]:
    # Imported here so that importing the registry stays cheap and free of cycles.
    # Each metric module adds exactly one line below.
    from otel_eval.metrics.final_response_match_v2 import FinalResponseMatchV2Evaluator
    from otel_eval.metrics.hallucinations_v1 import HallucinationsV1Evaluator
    from otel_eval.metrics.inference_call_count_v1 import InferenceCallCountV1Evaluator
    from otel_eval.metrics.invocation_duration_v1 import InvocationDurationV1Evaluator
    from otel_eval.metrics.multi_turn_task_success_v1 import MultiTurnTaskSuccessV1Evaluator
    from otel_eval.metrics.multi_turn_tool_use_quality_v1 import MultiTurnToolUseQualityV1Evaluator
    from otel_eval.metrics.multi_turn_trajectory_quality_v1 import MultiTurnTrajectoryQualityV1Evaluator
    from otel_eval.metrics.per_turn_user_simulator_quality_v1 import PerTurnUserSimulatorQualityV1
    from otel_eval.metrics.response_evaluation_score import ResponseEvaluationScoreEvaluator
    from otel_eval.metrics.response_match_score import ResponseMatchScoreEvaluator
    from otel_eval.metrics.rubric_based_final_response_quality_v1 import RubricBasedFinalResponseQualityV1Evaluator
    from otel_eval.metrics.rubric_based_multi_turn_trajectory_quality_v1 import (
        RubricBasedMultiTurnTrajectoryV1Evaluator,
    )
    from otel_eval.metrics.rubric_based_tool_use_quality_v1 import RubricBasedToolUseV1Evaluator
    from otel_eval.metrics.safety_v1 import SafetyEvaluatorV1
    from otel_eval.metrics.token_usage_v1 import TokenUsageV1Evaluator
    from otel_eval.metrics.tool_call_count_v1 import ToolCallCountV1Evaluator
    from otel_eval.metrics.tool_parameter_match import ToolParameterMatchEvaluator
    from otel_eval.metrics.tool_trajectory_avg_score import ToolTrajectoryAvgScoreEvaluator
    from otel_eval.metrics.tool_trajectory_f1 import ToolTrajectoryF1Evaluator

    evaluators: list[type[Evaluator]] = []
    evaluators.append(ToolTrajectoryAvgScoreEvaluator)
    evaluators.append(ResponseMatchScoreEvaluator)
    evaluators.append(ToolParameterMatchEvaluator)
    evaluators.append(ToolTrajectoryF1Evaluator)
    evaluators.append(ToolCallCountV1Evaluator)
    evaluators.append(InferenceCallCountV1Evaluator)
    evaluators.append(TokenUsageV1Evaluator)
    evaluators.append(InvocationDurationV1Evaluator)
    evaluators.append(FinalResponseMatchV2Evaluator)
    evaluators.append(RubricBasedFinalResponseQualityV1Evaluator)
    evaluators.append(RubricBasedToolUseV1Evaluator)
    evaluators.append(HallucinationsV1Evaluator)
    evaluators.append(SafetyEvaluatorV1)
    evaluators.append(ResponseEvaluationScoreEvaluator)
    evaluators.append(PerTurnUserSimulatorQualityV1)
    evaluators.append(RubricBasedMultiTurnTrajectoryV1Evaluator)
    evaluators.append(MultiTurnTaskSuccessV1Evaluator)
    evaluators.append(MultiTurnTrajectoryQualityV1Evaluator)
    evaluators.append(MultiTurnToolUseQualityV1Evaluator)
    return evaluators
