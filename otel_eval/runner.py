"""Running metrics over conversations: the offline ``otel-eval run`` path.

A :class:`MetricPlan` is resolved and validated once (unknown metric, bad criterion or threshold -> a
:class:`~otel_eval.errors.ConfigurationError` before any work), then :func:`evaluate_conversation` scores one
conversation with every planned metric. Aggregation inside each metric is ADK's; the case status is ADK's rule.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_eval.conversations import Conversation, with_case_rubrics
from otel_eval.errors import ConfigurationError
from otel_eval.metrics import (
    EFFICIENCY_METRICS,
    NO_REFERENCE,
    REFERENCE_FREE_JUDGE_METRICS,
    Evaluator,
    MetricInfo,
    MetricRegistry,
    default_registry,
)
from otel_eval.model import (
    DEFAULT_EVAL_CONFIG,
    BaseCriterion,
    EvalConfig,
    EvalStatus,
    EvaluationResult,
    ToolTrajectoryCriterion,
    case_status,
)

logger = logging.getLogger(__name__)

TRAJECTORY_METRIC = "tool_trajectory_avg_score"


@dataclass(frozen=True, slots=True)
class PlannedMetric:
    """A metric to run, with its validated evaluator."""

    name: str
    evaluator: Evaluator

    @property
    def info(self) -> MetricInfo:
        """The metric's info."""
        return self.evaluator.info


@dataclass(slots=True)
class MetricOutcome:
    """One metric's result on one conversation."""

    metric: PlannedMetric
    result: EvaluationResult

    @property
    def threshold(self) -> float | None:
        """The threshold the status was decided by."""
        return self.metric.evaluator.threshold


@dataclass(slots=True)
class ConversationReport:
    """Every metric's result on one conversation."""

    conversation: Conversation
    outcomes: list[MetricOutcome] = field(default_factory=list)

    @property
    def status(self) -> EvalStatus:
        """ADK's case rule over the metrics' statuses (INFORMATIONAL ones do not count)."""
        return case_status([o.result.overall_eval_status for o in self.outcomes])


@dataclass(slots=True)
class MetricPlan:
    """The metrics to run, in order."""

    metrics: list[PlannedMetric]

    @property
    def needs_judge(self) -> bool:
        """Whether any planned metric calls an LLM judge."""
        return any(m.info.requires_judge for m in self.metrics)


def select_criteria(
    *,
    config: EvalConfig | None,
    metric_names: Sequence[str],
    have_eval_set: bool,
    judge_configured: bool,
    registry: MetricRegistry,
) -> dict[str, BaseCriterion | None]:
    """Which metrics run with which criterion: ``-m`` names (criterion from the config when it has one), else the
    config's criteria, else ADK's defaults with an eval set (reference-free judged metrics without one when a judge is
    configured); ADK's informational efficiency metrics are added unless metrics were named explicitly."""
    selected: dict[str, BaseCriterion | None] = {}
    if metric_names:
        for name in metric_names:
            registry.get(name)  # unknown names fail here, before any work
            in_config = config is not None and name in config.criteria
            selected[name] = config.criterion_for(name) if config is not None and in_config else None
        return selected
    if config is not None and config.criteria:
        selected = {name: config.criterion_for(name) for name in config.criteria}
    elif have_eval_set:
        selected = {name: DEFAULT_EVAL_CONFIG.criterion_for(name) for name in DEFAULT_EVAL_CONFIG.criteria}
    elif judge_configured:
        selected = dict.fromkeys(REFERENCE_FREE_JUDGE_METRICS)
    for name in EFFICIENCY_METRICS:
        if name in registry:
            selected.setdefault(name, None)
    return selected


def build_plan(
    criteria: dict[str, BaseCriterion | None],
    *,
    registry: MetricRegistry | None = None,
    match_type: str | None = None,
    judge: Any = None,
) -> MetricPlan:
    """Validated evaluators for ``criteria``; ``match_type`` overrides the trajectory metric's match type.

    Raises:
        ConfigurationError: unknown metric, invalid criterion or a threshold outside the metric's range.
    """
    registry = registry or default_registry()
    planned = []
    for name, criterion in criteria.items():
        if name == TRAJECTORY_METRIC and match_type is not None:
            criterion = _with_match_type(criterion, match_type, registry)
        planned.append(PlannedMetric(name=name, evaluator=registry.create(name, criterion, judge=judge)))
    return MetricPlan(planned)


def _with_match_type(criterion: BaseCriterion | None, match_type: str, registry: MetricRegistry) -> BaseCriterion:
    base = criterion or BaseCriterion(threshold=registry.info(TRAJECTORY_METRIC).default_threshold or 1.0)
    data = base.model_dump()
    data["match_type"] = match_type
    try:
        return ToolTrajectoryCriterion.model_validate(data)
    except ValueError as exc:
        raise ConfigurationError(f"--match-type {match_type!r}: expected EXACT, IN_ORDER or ANY_ORDER") from exc


async def evaluate_conversation(conversation: Conversation, plan: MetricPlan) -> ConversationReport:
    """Every planned metric on ``conversation``. A metric that raises yields NOT_EVALUATED; nothing escapes."""
    actual = with_case_rubrics(conversation)
    expected = conversation.expected
    scenario = conversation.eval_case.conversation_scenario if conversation.eval_case else None
    report = ConversationReport(conversation=conversation)
    for metric in plan.metrics:
        evaluator = metric.evaluator
        if metric.info.requires_reference and expected is None and scenario is None:
            reason = conversation.pairing_note or "no reference: pass --eval-set with a matching eval case"
            result = evaluator.not_evaluated(reason, count=len(actual), error_type=NO_REFERENCE)
        else:
            try:
                result = await evaluator.evaluate(actual, expected, conversation_scenario=scenario)
            except Exception as exc:
                logger.exception("metric %s failed on session %s", metric.name, conversation.session_id)
                result = evaluator.not_evaluated(
                    f"metric failed: {exc!r}", count=len(actual), error_type=type(exc).__name__
                )
        report.outcomes.append(MetricOutcome(metric=metric, result=result))
    return report


async def evaluate_conversations(
    conversations: Sequence[Conversation], plan: MetricPlan, *, max_concurrency: int = 32, progress: Any = None
) -> list[ConversationReport]:
    """:func:`evaluate_conversation` over all, at most ``max_concurrency`` at once, results in input order.

    ``progress`` is called with no arguments after each conversation (for a progress bar).
    """
    semaphore = asyncio.Semaphore(max(1, max_concurrency))

    async def one(conversation: Conversation) -> ConversationReport:
        async with semaphore:
            report = await evaluate_conversation(conversation, plan)
        if progress is not None:
            progress()
        return report

    return list(await asyncio.gather(*(one(c) for c in conversations)))
