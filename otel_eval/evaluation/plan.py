"""The metric plan: each selected metric with its evaluator, or the reason it cannot run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from otel_eval.errors import ConfigurationError
from otel_eval.judge import Judge
from otel_eval.metrics import (
    Evaluator,
    MetricInfo,
    MetricRegistry,
    default_registry,
)
from otel_eval.model import (
    BaseCriterion,
    ToolTrajectoryCriterion,
)
from otel_eval.reconstruct import Reads

TRAJECTORY_METRIC = "tool_trajectory_avg_score"


@dataclass(frozen=True, slots=True)
class PlannedMetric:
    """A metric to run: its validated evaluator, or (``strict=False`` plans only) why it cannot run."""

    name: str
    evaluator: Evaluator | None
    problem: str | None = None
    problem_type: str | None = None
    given: BaseCriterion | None = None
    """The criterion as given (its options as written, ``"match_type": "IN_ORDER"``): what ADK's results hold."""

    @property
    def info(self) -> MetricInfo | None:
        """The metric's info (None when it cannot run)."""
        return self.evaluator.info if self.evaluator is not None else None

    @property
    def threshold(self) -> float | None:
        """The threshold statuses are decided by (None for informational metrics)."""
        return self.evaluator.threshold if self.evaluator is not None else None

    @property
    def runs_inline(self) -> bool:
        """Whether the metric is scored on the caller's thread without an event loop: it calls no judge and its
        evaluator :attr:`~otel_eval.metrics.Evaluator.runs_inline` (or it cannot run, which needs no work either)."""
        evaluator = self.evaluator
        return evaluator is None or (evaluator.runs_inline and not evaluator.info.requires_judge)

    @property
    def requires_reference(self) -> bool:
        """Whether the metric needs expected invocations (or a scenario)."""
        return self.info is not None and self.info.requires_reference


@dataclass(slots=True)
class MetricPlan:
    """The metrics to run, in order."""

    metrics: list[PlannedMetric]
    _scopes: tuple[MetricPlan, MetricPlan] | None = field(default=None, init=False, repr=False, compare=False)
    _without_reference: list[PlannedMetric] | None = field(default=None, init=False, repr=False, compare=False)
    _inline: bool | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def reads(self) -> Reads:
        """What the planned metrics read of an invocation, together (:attr:`otel_eval.metrics.Evaluator.reads`): what
        a rebuild for this plan must produce. A metric that cannot run reads nothing."""
        found = Reads.NONE
        for metric in self.metrics:
            if metric.evaluator is not None:
                found |= metric.evaluator.reads
        return found

    @property
    def inline(self) -> bool:
        """Whether every planned metric :attr:`~PlannedMetric.runs_inline`: then so does any subset of them (worked out
        once per plan)."""
        if self._inline is None:
            self._inline = all(metric.runs_inline for metric in self.metrics)
        return self._inline

    @property
    def needs_judge(self) -> bool:
        """Whether any planned metric calls an LLM judge."""
        return any(m.info is not None and m.info.requires_judge for m in self.metrics)

    def applicable(self, *, has_reference: bool) -> list[PlannedMetric]:
        """The metrics that apply to a conversation with (``has_reference``: expected turns or a scenario) or without a
        reference: all of them, else those that do not :attr:`~PlannedMetric.requires_reference` (worked out once
        per plan). A new list each call (the caller's to keep)."""
        if has_reference:
            return list(self.metrics)
        if self._without_reference is None:
            self._without_reference = [m for m in self.metrics if not m.requires_reference]
        return list(self._without_reference)

    def by_scope(self) -> tuple[MetricPlan, MetricPlan]:
        """(the metrics scored on each invocation, the conversation-level ones): the latter need a session's turns
        together (:attr:`~otel_eval.metrics.MetricInfo.conversation_level`); a metric that cannot run is in the
        former, reported at once."""
        if self._scopes is None:  # asked for every request of a session: worked out once per plan
            conversation = [m for m in self.metrics if m.info is not None and m.info.conversation_level]
            self._scopes = MetricPlan([m for m in self.metrics if m not in conversation]), MetricPlan(conversation)
        return self._scopes


def build_plan(
    criteria: Mapping[str, BaseCriterion | None],
    *,
    registry: MetricRegistry | None = None,
    match_type: str | None = None,
    judge: Judge | None = None,
    strict: bool = True,
) -> MetricPlan:
    """Validated evaluators for ``criteria``; ``match_type`` overrides the trajectory metric's match type.

    With ``strict=False`` a metric that cannot run is planned with its problem (reported NOT_EVALUATED) instead.

    Raises:
        ConfigurationError: (``strict``) unknown metric, invalid criterion or a threshold outside the metric's range.
    """
    registry = registry or default_registry()
    planned = []
    for name, criterion in criteria.items():
        try:
            if name == TRAJECTORY_METRIC and match_type is not None:
                criterion = _with_match_type(criterion, match_type, registry)
            planned.append(PlannedMetric(name, registry.create(name, criterion, judge=judge), given=criterion))
        except ConfigurationError as exc:
            if strict:
                raise
            planned.append(PlannedMetric(name, None, str(exc), type(exc).__name__))
    return MetricPlan(planned)


def _with_match_type(criterion: BaseCriterion | None, match_type: str, registry: MetricRegistry) -> BaseCriterion:
    base = criterion or BaseCriterion(threshold=registry.info(TRAJECTORY_METRIC).default_threshold or 1.0)
    data = base.model_dump()
    data["match_type"] = match_type
    try:
        ToolTrajectoryCriterion.model_validate(data)
    except ValueError as exc:
        raise ConfigurationError(f"--match-type {match_type!r}: expected EXACT, IN_ORDER or ANY_ORDER") from exc
    return BaseCriterion.model_validate(data)  # as written, like a config's: the metric reads it


def plan_own_criteria(
    criteria: Mapping[str, BaseCriterion | None],
    *,
    registry: MetricRegistry | None = None,
    judge: Judge | None = None,
    source: str | None = None,
) -> None:
    """Plans the process's own ``criteria`` (:func:`build_plan`), a problem named with where it is: ``SOURCE:
    criteria.NAME: problem``, or ``criteria.NAME: problem`` when no ``source`` (a flag, variable or file) gave them.

    Raises:
        ConfigurationError: as :func:`build_plan` (of the same class: an unknown metric is a ``MetricNotFoundError``).
    """
    prefix = f"{source}: " if source else ""
    for name, criterion in criteria.items():
        try:
            build_plan({name: criterion}, registry=registry, judge=judge)
        except ConfigurationError as error:
            raise type(error)(f"{prefix}criteria.{name}: {error}") from None
