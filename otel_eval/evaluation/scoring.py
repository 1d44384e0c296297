"""Scoring a conversation: every planned metric, in the order the judge budget needs; nothing escapes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextvars import Token
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, Context, attach, detach, get_value, set_value

from otel_eval._runtime.exception_text import exception_outline
from otel_eval._runtime.threads import DaemonThreadPool, run_coroutine
from otel_eval.conversations import Conversation, with_case_rubrics
from otel_eval.evaluation.plan import MetricPlan, PlannedMetric
from otel_eval.judge.priority import prioritising, priority_invocations
from otel_eval.metrics import (
    NO_REFERENCE,
)
from otel_eval.model import (
    EvalStatus,
    EvaluationResult,
    PerInvocationResult,
    TracedInvocation,
    case_status,
)
from otel_eval.reconstruct.plain import PlainInvocation

_Scored = TracedInvocation | PlainInvocation
"""What a metric scores: rebuilt invocations, or their plain views."""

logger = logging.getLogger(__name__)


_METRIC_THREADS = DaemonThreadPool(4, name="OtelEvalMetric")
"""Where the workers run metrics that call no judge (CPU-bound), off their event loops."""


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
    it :attr:`~otel_eval.metrics.Evaluator.runs_inline` (a linear pass that never waits, cheaper than the hand-off) or
    :attr:`~otel_eval.metrics.Evaluator.runs_on_own_threads`.
    """
    evaluator = metric.evaluator
    if evaluator is None or lacks_reference(metric, conversation):
        return _cannot_run(metric, actual, conversation.pairing_note)
    token = _suppress_instrumentation()
    try:
        run = evaluator.evaluate(actual, conversation.expected, conversation_scenario=conversation.scenario)
        if evaluator.runs_inline:
            return await run  # never waits, so a timeout could not interrupt it (and it ends long before one)
        if off_loop and not (evaluator.info.requires_judge or evaluator.runs_on_own_threads):
            # CPU-bound: on a metric thread. Past the timeout it is abandoned (NOT_EVALUATED) and ends on its own.
            done = _METRIC_THREADS.submit(partial(run_coroutine, run))
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(done)), timeout=timeout)
        return await asyncio.wait_for(run, timeout=timeout)
    except TimeoutError:
        reason = f"metric {metric.name} took longer than {timeout:g} s"
        return evaluator.not_evaluated(reason, count=len(actual), error_type="timeout")
    except Exception as exc:  # noqa: BLE001 - logged by _failed; one failing metric is NOT_EVALUATED, the others run
        return _failed(metric, actual, exc)
    finally:
        if token is not None:
            detach(token)


def _suppress_instrumentation() -> Token[Context] | None:
    """Makes the metric's run suppress instrumentation, unless the caller's context already does (the processor
    hands its requests on so): the judge's HTTP calls must not be traced by instrumentations, and any span made under
    this context is skipped by the EvaluationSpanProcessor (the evaluator never evaluates itself). Returns the token
    to detach, if it attached one."""
    if get_value(_SUPPRESS_INSTRUMENTATION_KEY):
        return None
    return attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))


def runs_inline(metric: PlannedMetric) -> bool:
    """Whether ``metric`` is scored by :func:`score_metric_inline`: it calls no judge and its evaluator
    :attr:`~otel_eval.metrics.Evaluator.runs_inline` (or it cannot run, which needs no work either)."""
    return metric.runs_inline


def score_metric_inline(
    metric: PlannedMetric,
    conversation: Conversation,
    actual: Sequence[TracedInvocation],
    *,
    checked: bool = False,
    for_records: bool = False,
) -> EvaluationResult:
    """:func:`score_metric` for a metric that :func:`runs_inline`, on the caller's thread without an event loop
    (:meth:`~otel_eval.metrics.Evaluator.evaluate_now`). Never raises; a metric whose ``evaluate`` waits breaks the
    ``runs_inline`` promise: it is NOT_EVALUATED.

    ``checked``: the caller knows that the metric applies to ``conversation`` (it is among the plan's
    :meth:`~otel_eval.evaluation.plan.MetricPlan.applicable` ones) and that instrumentation is suppressed already;
    neither is asked again.

    ``for_records``: only what the records read is needed (:meth:`~otel_eval.metrics.Evaluator.score_now`: the
    same scores, statuses, explanations and error types, without the details only an offline report reads)."""
    evaluator = metric.evaluator
    if evaluator is None or (not checked and lacks_reference(metric, conversation)):
        return _cannot_run(metric, actual, conversation.pairing_note)
    run = evaluator.score_now if for_records else evaluator.evaluate_now
    scored = partial(run, actual, conversation.expected, conversation_scenario=conversation.scenario)
    return _scored_inline(metric, actual, scored, checked=checked)


def score_plain_inline(
    metric: PlannedMetric, views: Sequence[PlainInvocation], *, checked: bool = False
) -> EvaluationResult:
    """:func:`score_metric_inline` (``for_records``) of the plain views of a conversation no case pairs with
    (:meth:`~otel_eval.metrics.Evaluator.score_plain`: equal to it on their models, none made by the efficiency
    metrics). Never raises."""
    evaluator = metric.evaluator
    if evaluator is None or (not checked and metric.requires_reference):  # no case pairs with plain views
        return _cannot_run(metric, views)
    return _scored_inline(metric, views, partial(evaluator.score_plain, views), checked=checked)


def _scored_inline(
    metric: PlannedMetric, scored: Sequence[_Scored], score: Callable[[], EvaluationResult], *, checked: bool
) -> EvaluationResult:
    """``score()`` of ``metric`` on ``scored``, instrumentation suppressed unless ``checked`` (the caller did); never
    raises: a failure is NOT_EVALUATED."""
    token = None if checked else _suppress_instrumentation()
    try:
        return score()
    except Exception as exc:  # noqa: BLE001 - logged by _failed; one failing metric is NOT_EVALUATED, the others run
        return _failed(metric, scored, exc)
    finally:
        if token is not None:
            detach(token)


def _cannot_run(metric: PlannedMetric, scored: Sequence[_Scored], pairing_note: str | None = None) -> EvaluationResult:
    """NOT_EVALUATED without running: the metric could not be built, or lacks its reference (``pairing_note``: why
    no case paired, when pairing said)."""
    evaluator = metric.evaluator
    if evaluator is None:
        return _not_evaluated(metric.problem or "metric cannot run", metric.problem_type or "configuration", scored)
    reason = pairing_note or "no reference: no eval case pairs with this conversation"
    return evaluator.not_evaluated(reason, count=len(scored), error_type=NO_REFERENCE)


def _failed(metric: PlannedMetric, scored: Sequence[_Scored], exc: Exception) -> EvaluationResult:
    """NOT_EVALUATED for a metric that raised (logged with its trace)."""
    trace_id = scored[0].trace_id if scored else "?"
    # The exception's message may quote the invocation's content: the type and place only, the whole at DEBUG.
    logger.error("metric %s failed on trace %s: %s", metric.name, trace_id, exception_outline(exc))
    logger.debug("metric %s failed on trace %s", metric.name, trace_id, exc_info=True)
    reason = f"metric failed: {type(exc).__name__}: {exc}"
    if metric.evaluator is None:
        return _not_evaluated(reason, type(exc).__name__, scored)
    return metric.evaluator.not_evaluated(reason, count=len(scored), error_type=type(exc).__name__)


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


def all_inline(plan: MetricPlan) -> bool:
    """Whether every metric of ``plan`` :func:`runs_inline`: then :func:`evaluate_conversation_inline` scores a
    conversation as :func:`evaluate_conversation` does, without an event loop."""
    return all(runs_inline(metric) for metric in plan.metrics)


def evaluate_conversation_inline(conversation: Conversation, plan: MetricPlan) -> ConversationReport:
    """:func:`evaluate_conversation` for a plan whose metrics all :func:`runs_inline` (:func:`all_inline`), on the
    caller's thread: the same outcomes in plan order (the order :func:`score_in_order` scores inline metrics in),
    one metric after the other under one suppress-instrumentation context; nothing escapes."""
    actual = with_case_rubrics(conversation)
    token = _suppress_instrumentation()
    try:
        outcomes = [MetricOutcome(m, score_metric_inline(m, conversation, actual)) for m in plan.metrics]
    finally:
        if token is not None:
            detach(token)
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


def _not_evaluated(reason: str, error_type: str, actual: Sequence[object]) -> EvaluationResult:
    return EvaluationResult(
        overall_eval_status=EvalStatus.NOT_EVALUATED,
        per_invocation_results=[PerInvocationResult(explanation=reason, error_type=error_type) for _ in actual],
        explanation=reason,
        error_type=error_type,
    )
