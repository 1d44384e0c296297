"""The evaluation core: criteria selection, the metric plan, golden-case pairing and scoring a conversation.

``otel-eval run``, the embedded worker and the Kafka worker all evaluate through this module, so a conversation with
the same invocations, criteria and eval set gets the same metrics, the same reference and the same scores offline and
online. What differs is only what the callers do around it: the offline run groups the invocations of a session into
one conversation and reports every planned metric; the workers evaluate each request as one conversation, emit a
record per invocation, and skip (do not report) the metrics that need a reference on conversations no eval case
pairs with, so live traffic outside the eval set does not flood the results with ``not_evaluated``.

**The pairing rule.** User texts are compared after :func:`normalise_text` (case folded, surrounding space dropped,
runs of whitespace collapsed to one space). A conversation's candidate case is the case chosen for it (``--eval-id``
offline, the request's ``eval_case`` online), else the first case of the eval set with a turn whose user text equals
the conversation's first user text, else the first case whose scenario's starting prompt equals it (a scenario case
pairs without expected turns). The expected invocations are, for each invocation, the case's turn with its user
text; else, when the case has exactly as many turns as the conversation has invocations, its turns by position;
else there are none: a chosen case stays paired without a reference, any other case does not pair.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value

from otel_eval.conversations import Conversation, with_case_rubrics
from otel_eval.errors import ConfigurationError
from otel_eval.judge import Judge
from otel_eval.judge.priority import prioritising, priority_invocations
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
    EvalCase,
    EvalConfig,
    EvalSet,
    EvalStatus,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    ToolTrajectoryCriterion,
    TracedInvocation,
    case_status,
    content_text,
)
from otel_eval.worker.deadline import DaemonThreadPool, run_coroutine

logger = logging.getLogger(__name__)

TRAJECTORY_METRIC = "tool_trajectory_avg_score"

_METRIC_THREADS = DaemonThreadPool(4, name="OtelEvalMetric")
"""Where the workers run metrics that call no judge (CPU-bound), off their event loops."""

_CONFIG_KEYS = {"criteria", "custom_metrics", "user_simulator_config", "live_model_config"}

# --- criteria ------------------------------------------------------------------------------------------------------


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


# --- the metric plan -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlannedMetric:
    """A metric to run: its validated evaluator, or (``strict=False`` plans only) why it cannot run."""

    name: str
    evaluator: Evaluator | None
    problem: str | None = None
    problem_type: str | None = None

    @property
    def info(self) -> MetricInfo | None:
        """The metric's info (None when it cannot run)."""
        return self.evaluator.info if self.evaluator is not None else None

    @property
    def threshold(self) -> float | None:
        """The threshold statuses are decided by (None for informational metrics)."""
        return self.evaluator.threshold if self.evaluator is not None else None

    @property
    def requires_reference(self) -> bool:
        """Whether the metric needs expected invocations (or a scenario)."""
        return self.info is not None and self.info.requires_reference


@dataclass(slots=True)
class MetricPlan:
    """The metrics to run, in order."""

    metrics: list[PlannedMetric]

    @property
    def needs_judge(self) -> bool:
        """Whether any planned metric calls an LLM judge."""
        return any(m.info is not None and m.info.requires_judge for m in self.metrics)


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
            planned.append(PlannedMetric(name, registry.create(name, criterion, judge=judge)))
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
        return ToolTrajectoryCriterion.model_validate(data)
    except ValueError as exc:
        raise ConfigurationError(f"--match-type {match_type!r}: expected EXACT, IN_ORDER or ANY_ORDER") from exc


# --- golden-case pairing -------------------------------------------------------------------------------------------


def normalise_text(text: str) -> str:
    """User text as pairing compares it: case folded, runs of whitespace collapsed, surrounding space dropped."""
    return " ".join(text.split()).casefold()


def find_golden_turn(eval_cases: Sequence[EvalCase], user_text: str) -> tuple[EvalCase, int] | None:
    """The first case turn whose user text equals ``user_text`` (after :func:`normalise_text`), or None."""
    wanted = normalise_text(user_text)
    if not wanted:
        return None
    for case in eval_cases:
        for index, turn in enumerate(case.conversation or []):
            if normalise_text(content_text(turn.user_content)) == wanted:
                return case, index
    return None


@dataclass(frozen=True, slots=True)
class Pairing:
    """A conversation's eval case and expected invocations (both None when no case pairs), and how they were found."""

    case: EvalCase | None
    expected: list[Invocation] | None
    note: str


def pair_invocations(
    invocations: Sequence[TracedInvocation],
    eval_set: EvalSet | None,
    *,
    chosen: EvalCase | None = None,
) -> Pairing:
    """The eval case and expected invocations of ``invocations``, by the pairing rule (see the module docs)."""
    if chosen is not None:
        expected = _expected_turns(chosen, invocations)
        note = f"eval case {chosen.eval_id!r} was chosen"
        if expected is None and chosen.conversation:
            note += (
                f", but its {len(chosen.conversation)} turn(s) cannot be paired with {len(invocations)} invocation(s)"
            )
        return Pairing(chosen, expected, note)
    if eval_set is None or not invocations:
        return Pairing(None, None, "no eval set")
    first = content_text(invocations[0].invocation.user_content)
    found = find_golden_turn(eval_set.eval_cases, first)
    if found is not None:
        expected = _expected_turns(found[0], invocations)
        if expected is not None:
            return Pairing(found[0], expected, "matched on the user message")
        note = f"eval case {found[0].eval_id!r} starts like the conversation but its turns do not pair with it"
        return Pairing(None, None, note)
    wanted = normalise_text(first)
    for case in eval_set.eval_cases:
        scenario = case.conversation_scenario
        if wanted and scenario is not None and normalise_text(scenario.starting_prompt) == wanted:
            return Pairing(case, None, "matched on the scenario's starting prompt")
    note = f"no case of eval set {eval_set.eval_set_id!r} has a turn with the user message {first[:60]!r}"
    return Pairing(None, None, note)


def _expected_turns(case: EvalCase, invocations: Sequence[TracedInvocation]) -> list[Invocation] | None:
    """Each invocation's turn by user text, else all turns by position when the counts agree, else None."""
    turns = case.conversation or []
    expected = []
    for traced in invocations:
        found = find_golden_turn([case], content_text(traced.invocation.user_content))
        if found is None:
            return list(turns) if turns and len(turns) == len(invocations) else None
        expected.append(turns[found[1]])
    return expected


def pair_conversations(
    conversations: Sequence[Conversation], eval_set: EvalSet | None, eval_id: str | None = None
) -> None:
    """Pairs each conversation (sets ``eval_case``, ``expected`` and, when none pairs, ``pairing_note``)."""
    if eval_set is None:
        return
    chosen = None
    if eval_id is not None:
        chosen = next((case for case in eval_set.eval_cases if case.eval_id == eval_id), None)
        if chosen is None:
            for conversation in conversations:
                conversation.pairing_note = f"eval set {eval_set.eval_set_id!r} has no case {eval_id!r}"
            return
    for conversation in conversations:
        pairing = pair_invocations(conversation.invocations, eval_set, chosen=chosen)
        conversation.eval_case, conversation.expected = pairing.case, pairing.expected
        conversation.pairing_note = None if pairing.case else pairing.note


# --- scoring and aggregation ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class MetricOutcome:
    """One metric's result on one conversation."""

    metric: PlannedMetric
    result: EvaluationResult

    @property
    def threshold(self) -> float | None:
        """The threshold the status was decided by."""
        return self.metric.threshold


@dataclass(slots=True)
class ConversationReport:
    """Every metric's result on one conversation."""

    conversation: Conversation
    outcomes: list[MetricOutcome] = field(default_factory=list)

    @property
    def status(self) -> EvalStatus:
        """ADK's case rule over the metrics' statuses (INFORMATIONAL ones do not count)."""
        return case_status([o.result.overall_eval_status for o in self.outcomes])


def lacks_reference(metric: PlannedMetric, conversation: Conversation) -> bool:
    """Whether ``metric`` needs a reference that ``conversation`` does not have (no expected turns, no scenario)."""
    return metric.requires_reference and conversation.expected is None and conversation.scenario is None


async def score_metric(
    metric: PlannedMetric,
    conversation: Conversation,
    actual: Sequence[TracedInvocation],
    *,
    timeout: float | None = None,
    off_loop: bool = False,
) -> EvaluationResult:
    """``metric`` on ``actual`` (the conversation's invocations with the case's rubrics). Never raises: a metric
    that cannot run, lacks its reference, raises or outlasts ``timeout`` seconds is NOT_EVALUATED with the reason.

    With ``off_loop`` a metric that calls no judge (CPU-bound) runs on a worker thread, not on the event loop, unless
    it :attr:`~otel_eval.metrics.Evaluator.runs_inline` (a linear pass that never waits, cheaper than the hand-off).
    """
    evaluator = metric.evaluator
    if evaluator is None:
        return _not_evaluated(metric.problem or "metric cannot run", metric.problem_type or "configuration", actual)
    if lacks_reference(metric, conversation):
        reason = conversation.pairing_note or "no reference: no eval case pairs with this conversation"
        return evaluator.not_evaluated(reason, count=len(actual), error_type=NO_REFERENCE)
    # The judge's HTTP calls must not be traced by instrumentations, and any span made under this context is
    # skipped by the EvaluationSpanProcessor: the evaluator never evaluates itself.
    token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
    try:
        run = evaluator.evaluate(actual, conversation.expected, conversation_scenario=conversation.scenario)
        if evaluator.runs_inline:
            return await run  # never waits, so a timeout could not interrupt it (and it ends long before one)
        if off_loop and not evaluator.info.requires_judge:
            # CPU-bound: on a metric thread. Past the timeout it is abandoned (NOT_EVALUATED) and ends on its own.
            done = _METRIC_THREADS.submit(partial(run_coroutine, run))
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(done)), timeout=timeout)
        return await asyncio.wait_for(run, timeout=timeout)
    except asyncio.TimeoutError:
        reason = f"metric {metric.name} took longer than {timeout:g} s"
        return evaluator.not_evaluated(reason, count=len(actual), error_type="timeout")
    except Exception as exc:  # one failing metric yields NOT_EVALUATED, the others still run
        logger.exception("metric %s failed on trace %s", metric.name, actual[0].trace_id if actual else "?")
        return evaluator.not_evaluated(
            f"metric failed: {type(exc).__name__}: {exc}", count=len(actual), error_type=type(exc).__name__
        )
    finally:
        detach(token)


def calls_judge(metric: PlannedMetric) -> bool:
    """Whether ``metric`` calls the judge (runs after the deterministic ones, under the judge budget)."""
    return metric.info is not None and metric.info.requires_judge


async def score_in_order(
    metrics: Sequence[PlannedMetric],
    actual: Sequence[TracedInvocation],
    score: Callable[[PlannedMetric], Awaitable[EvaluationResult]],
) -> dict[str, EvaluationResult]:
    """Every metric's result through ``score``, by metric name, in the order the judge budget needs (one rule for
    ``run`` and the workers): the deterministic metrics first — those that :attr:`~otel_eval.metrics.Evaluator.runs_inline`
    one after the other (a task each would cost more than they do), the others at once — then the judged ones at
    once, with the invocations a deterministic metric failed marked as priority (:mod:`otel_eval.judge.priority`)."""
    deterministic = [m for m in metrics if not calls_judge(m)]
    inline = [m for m in deterministic if m.evaluator is not None and m.evaluator.runs_inline]
    results = {m.name: await score(m) for m in inline}
    others = [m for m in deterministic if m not in inline]
    results.update(zip((m.name for m in others), await asyncio.gather(*map(score, others)), strict=True))
    judged = [m for m in metrics if calls_judge(m)]
    if judged:  # priority only orders judge calls: without any, not worth working out
        with prioritising(priority_invocations(actual, results.values())):
            results.update(zip((m.name for m in judged), await asyncio.gather(*map(score, judged)), strict=True))
    return results


async def evaluate_conversation(conversation: Conversation, plan: MetricPlan) -> ConversationReport:
    """Every planned metric on ``conversation`` (see :func:`score_metric`, :func:`score_in_order`); nothing escapes.
    Outcomes are in plan order."""
    actual = with_case_rubrics(conversation)
    results = await score_in_order(plan.metrics, actual, lambda m: score_metric(m, conversation, actual))
    outcomes = [MetricOutcome(metric, results[metric.name]) for metric in plan.metrics]
    return ConversationReport(conversation=conversation, outcomes=outcomes)


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


def _not_evaluated(reason: str, error_type: str, actual: Sequence[TracedInvocation]) -> EvaluationResult:
    return EvaluationResult(
        overall_eval_status=EvalStatus.NOT_EVALUATED,
        per_invocation_results=[PerInvocationResult(explanation=reason, error_type=error_type) for _ in actual],
        explanation=reason,
        error_type=error_type,
    )
