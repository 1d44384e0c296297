"""The evaluation core: one :class:`EvaluationRequest` in, scored :class:`EvaluationRecord`\\ s out, emitted as telemetry.

The embedded worker (in the agent's process) and the Kafka worker service run this same code, so nothing about
metric selection, scoring or emission differs between the two modes.

Criteria selection, the metric plan, golden-case pairing and scoring are :mod:`otel_eval.evaluation`'s, the same code
``otel-eval run`` uses. For a request: its own ``criteria``, else the core's configured criteria, else the defaults
(ADK's reference metrics when an eval case pairs, plus ``hallucinations_v1`` and ``safety_v1`` when judge credentials
are configured), with ADK's informational efficiency metrics added; or, for the core's own criteria, only the metrics
it was told to run (``metric_names``). The request's ``eval_case`` is its chosen case; otherwise the core's eval set
pairs by the pairing rule. Metrics that need a reference are skipped (not reported) on requests no case pairs with.

Sessions: with ``scope="invocation"`` a request is scored on its per-invocation metrics only, its conversation-level
ones (:meth:`~otel_eval.evaluation.plan.MetricPlan.by_scope`) left to :meth:`EvaluationCore.evaluate_window`, which
scores a closed :class:`~otel_eval.evaluation.sessions.SessionWindow` (the session's turns as one conversation) on
them. A window's records are one per turn, as the metric returns them (ADK's multi-turn metrics: the verdict on the
last turn, NOT_EVALUATED on the others), with the session and the turns covered, result ids of the window
(:func:`~otel_eval.model.messages.session_result_id`), and one ``evaluate {metric}`` span in the last turn's trace
linked to every turn's root span.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, get_value

from otel_eval.conversations import Conversation, with_case_rubrics
from otel_eval.emit import Emitters
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.errors import ConfigurationError
from otel_eval.evaluation._boundary import Boundary, Request
from otel_eval.evaluation._emission import RecordEmission
from otel_eval.evaluation.criteria import (
    METRICS_SETTING,
    check_budget_metrics,
    check_metric_names,
    criteria_from,
    registry_with_custom_metrics,
    select_criteria,
)
from otel_eval.evaluation.pairing import GoldenIndex, Pairing, pair_invocations
from otel_eval.evaluation.plan import MetricPlan, PlannedMetric, build_plan, plan_own_criteria
from otel_eval.evaluation.records import RecordContext
from otel_eval.evaluation.request_criteria import Refusal, RequestCriteriaPolicy, RequestGate
from otel_eval.evaluation.scoring import (
    runs_inline,
    score_in_order,
    score_metric,
    score_metric_inline,
    score_plain_inline,
)
from otel_eval.evaluation.sessions import SessionWindow
from otel_eval.judge import Judge
from otel_eval.metrics import MetricRegistry
from otel_eval.model import BaseCriterion, EvalConfig, EvalSet, EvaluationResult, TracedInvocation
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.reconstruct import Reads
from otel_eval.reconstruct.plain import PlainInvocation, PlainRequest

Scope = Literal["all", "invocation", "conversation"]
"""Which of a request's metrics to run: all, the per-invocation ones, or the conversation-level ones."""
OnLoop = Callable[[], Awaitable[list[EvaluationRecord]]]
"""A prepared request whose metrics need an event loop: awaiting the call scores and emits it there."""


def judge_is_configured(judge: Judge | None = None) -> bool:
    """Whether ``judge`` (else the process-wide default judge from the environment) has credentials."""
    return _judge_or_default(judge).configured


def _judge_or_default(judge: Judge | None) -> Judge:
    if judge is None:
        from otel_eval.judge import default_judge

        judge = default_judge()
    return judge


class EvaluationCore:
    """Selects, runs and emits the metrics of evaluation requests. :meth:`evaluate` never raises.

    Args:
        criteria: ADK criteria every request without its own uses; None for the defaults (see module docs).
        metric_names: Run only these metrics where the core's own criteria apply (a request's own are not
            narrowed), as ``otel-eval run --metric`` does (:func:`~otel_eval.evaluation.criteria.select_criteria`).
        eval_set: Golden cases for online reference metrics.
        registry: Metric registry (``default_registry()`` when None), plus the custom metrics ``criteria`` declares
            (an ``EvalConfig`` or its JSON with ``custom_metrics``): their code is imported here.
        judge: Judge client handed to judged metrics (None: each metric's default judge from the environment).
        judge_configured: Whether judge credentials exist (decides the default judged metrics); when None, asked of
            ``judge`` (else the default judge) when the first plan is made, not here: on the thread that plans (the
            span processor's and the worker's evaluation threads), since a LiteLLM judge's check imports LiteLLM.
        emitters: Where records go (events, evaluation spans, metrics, extra sinks); the global providers when None.
        pipeline: Pipeline counters (evaluated, errored).
        metric_timeout_seconds: Bound on one metric's run on one request; a metric past it is NOT_EVALUATED.
        request_policy: Which criteria carried by requests are honoured (the Kafka worker's, from its settings);
            None: requests come from this process (the embedded processor's), their criteria trusted. Refused
            criteria are not applied (the core's own are) and go to ``on_refused`` (see ``RequestGate``).
        on_refused: Called with each :class:`~otel_eval.evaluation.request_criteria.Refusal` (the worker counts it).
        metrics_setting: What an unknown name in ``metric_names`` is said to come from (the worker: the flag or the
            variable it was given by).
        criteria_setting: What a problem of ``criteria`` is said to come from (the worker: the flag or variable, and
            the file it named); the error names it and the criterion's path (``criteria.NAME``).
        explanations: False: the records carry no explanation (``OTEL_EVAL_EXPLANATIONS``), so neither do their
            events, spans, sinks and results topic.

    Raises:
        ConfigurationError: ``criteria`` or ``metric_names`` names an unknown metric, or an invalid criterion.
    """

    def __init__(
        self,
        *,
        criteria: Mapping[str, Any] | EvalConfig | None = None,
        metric_names: Sequence[str] = (),
        eval_set: EvalSet | None = None,
        registry: MetricRegistry | None = None,
        judge: Judge | None = None,
        judge_configured: bool | None = None,
        emitters: Emitters | None = None,
        pipeline: PipelineMetrics | None = None,
        metric_timeout_seconds: float = 600.0,
        request_policy: RequestCriteriaPolicy | None = None,
        on_refused: Callable[[Refusal], None] | None = None,
        metrics_setting: str = METRICS_SETTING,
        criteria_setting: str | None = None,
        explanations: bool = True,
    ) -> None:
        # The process's own configuration may name ADK custom metrics: imported here, never from a request's criteria.
        self._registry = registry_with_custom_metrics(criteria, registry)
        self._judge = judge
        self._asked = _judge_or_default(judge) if judge_configured is None else None
        self._judge_configured = judge_configured
        self._reads: Reads | None = None
        try:
            self._criteria = criteria_from(criteria)
        except ConfigurationError as error:
            if not criteria_setting:
                raise
            raise ConfigurationError(f"{criteria_setting}: {error}") from None
        self._metric_names = tuple(metric_names)
        check_metric_names(self._metric_names, self._registry, setting=metrics_setting)
        check_budget_metrics(judge, self._registry)
        self._eval_set = eval_set
        self._golden = GoldenIndex(eval_set) if eval_set is not None else None
        self._emission = RecordEmission(emitters if emitters is not None else Emitters.create(), pipeline)
        self._metric_timeout = metric_timeout_seconds
        self._plans: dict[str, MetricPlan] = {}
        self._own_keys = {flag: f"{flag}:own" for flag in (False, True)}  # never a request's key (those are JSON)
        if self._criteria is not None:  # bad criteria fail here
            plan_own_criteria(self._criteria, registry=self._registry, judge=self._judge, source=criteria_setting)
        self._gate = RequestGate(request_policy, on_refused)
        self._explanations = explanations

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Waits for the sinks that deliver later (the backend sinks) to deliver what they hold."""
        return self.emitters.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """Lets the sinks that deliver later deliver what they hold within ``timeout_millis``, then stops them."""
        self.emitters.shutdown(timeout_millis)

    @property
    def emitters(self) -> Emitters:
        """Where its records go (events, evaluation spans, metrics, extra sinks)."""
        return self._emission.emitters

    @emitters.setter
    def emitters(self, emitters: Emitters) -> None:
        self._emission.emitters = emitters

    @property
    def registry(self) -> MetricRegistry:
        """The metrics it runs come from: the registry it was given plus the custom metrics its criteria declare."""
        return self._registry

    @property
    def pipeline(self) -> PipelineMetrics | None:
        """The pipeline counters it reports to (None: none)."""
        return self._emission.pipeline

    def reads(self) -> Reads:
        """What the requests this core scores with its own criteria need rebuilt (:mod:`otel_eval.reconstruct.reads`):
        the union of its plans' reads, with and (when it holds an eval set) without a paired case, and the user
        message that pairing reads."""
        if self._reads is None:
            found = Reads.USER_CONTENT if self._eval_set is not None else Reads.NONE
            for plan in self._own_plans():
                found |= plan.reads
            self._reads = found
        return self._reads

    def conversation_metrics(self) -> list[str]:
        """The conversation-level metrics this core runs with its own criteria (planned as :meth:`reads` plans)."""
        planned = {metric.name: metric.info for plan in self._own_plans() for metric in plan.metrics}
        return sorted(name for name, info in planned.items() if info is not None and info.conversation_level)

    def reference_metrics(self) -> list[str]:
        """The metrics of its own criteria that need a paired eval case: without an eval set (or a request carrying
        its case) they are never scored online. None by default: ADK's default criteria add them only with one."""
        if self._criteria is None and not self._metric_names:
            return []
        plan = self._plan_for(self._criteria, with_reference=True, own=True)
        return sorted({metric.name for metric in plan.metrics if metric.requires_reference})

    def _own_plans(self) -> list[MetricPlan]:
        """Its own criteria's plans: without a paired case and (when it holds an eval set) with one."""
        plans = [self._plan_for(self._criteria, with_reference=False, own=True)]
        if self._eval_set is not None:
            plans.append(self._plan_for(self._criteria, with_reference=True, own=True))
        return plans

    def holds_sessions(self, request: EvaluationRequest) -> bool:
        """Whether ``request``'s conversation-level metrics should wait for its session: every invocation carries a
        session id and its metrics include conversation-level ones (planned as :meth:`evaluate` plans them). For a
        request it scores, a caller asks :meth:`start` with ``sessions`` instead, which pairs and plans the request once
        for both answers (the embedded worker, the Kafka worker); this is for one it only holds (the Kafka worker's
        re-read or re-keyed turns, whose results are known)."""
        invocations = list(request.invocations)
        if not invocations or not all(i.session_id for i in invocations):
            return False
        return _waits_for_session(self._plan_of(request, invocations)[1])

    async def evaluate_window(self, window: SessionWindow) -> list[EvaluationRecord]:
        """Scores a closed session window on the conversation-level metrics, emits every record, returns them.
        Never raises."""
        request = EvaluationRequest(invocations=window.turns)
        with self._boundary(request, f"session {window.session_id}"):
            job = self._prepare(request, "conversation", window)
            return await self._evaluate(job) if job is not None else []
        return []

    async def evaluate(self, request: EvaluationRequest, *, scope: Scope = "all") -> list[EvaluationRecord]:
        """Scores ``request`` (its metrics of ``scope``), emits every record, and returns them. Never raises."""
        with self._boundary(request):
            job = self._prepare(request, scope)
            return await self._evaluate(job) if job is not None else []
        return []

    def evaluate_inline(self, request: EvaluationRequest, *, scope: Scope = "all") -> list[EvaluationRecord] | None:
        """:meth:`start`, for a request that runs inline: its records; None (nothing done) for one that needs an
        event loop: :meth:`evaluate` it there. Never raises."""
        started = self.start(request, scope=scope)
        return None if started.on_loop is not None else started.records

    def start(self, request: Request, *, scope: Scope = "all", sessions: bool = False) -> Started:
        """Pairs and plans ``request`` once and scores it as far as the caller's thread may: when every metric of
        ``scope`` :func:`~otel_eval.evaluation.scoring.runs_inline` (no judge, no metric that needs a deadline), it is
        scored and emitted here (:attr:`Started.records`); otherwise it is returned prepared for an event loop
        (:attr:`Started.on_loop`: awaiting the call scores and emits it there, without pairing or planning again).

        With ``sessions`` (and ``scope="all"``), a request whose conversation-level metrics wait for its session
        (as :meth:`holds_sessions` says) is started on its per-invocation metrics only, and says so
        (:attr:`Started.holds_session`): the caller holds its turns for the session's window
        (:meth:`evaluate_window`). This is the embedded worker's and the Kafka worker's one call per request. Never
        raises, nor does the call.

        A :class:`~otel_eval.reconstruct.plain.PlainRequest` is scored on its views, with the same records, when
        there is no eval set and it runs inline, its session not held (:meth:`_start_plain`); else on its models."""
        with self._boundary(request):
            views = request.plain if isinstance(request, PlainRequest) and self._eval_set is None else None
            invocations = [] if views is not None else list(request.invocations)
            if not (views or invocations):
                return Started([])
            # A plain request's eval case is None: with no eval set it pairs with nothing, its invocations unread.
            pairing, plan = self._plan_of(request, invocations, report=True)
            turns: list[PlainInvocation] | list[TracedInvocation] = views if views is not None else invocations
            holds = sessions and scope == "all" and all(i.session_id for i in turns) and _waits_for_session(plan)
            if views is not None:
                started = self._start_plain(views, scope, plan, holds)
                if started is not None:
                    return started
                invocations = request.invocations  # the models, made now
            job = self._job(request, "invocation" if holds else scope, pairing, plan, invocations)
            if not (plan.inline or all(runs_inline(metric) for metric in job.metrics)):
                return Started([], partial(self._evaluate_guarded, job, request), holds_session=holds)
            # Asked once per request, not per metric: the metrics apply (the plan's applicable ones) and, when the
            # caller suppresses instrumentation already (the Kafka worker, for its batch), that is not asked again.
            checked = bool(get_value(_SUPPRESS_INSTRUMENTATION_KEY))
            conversation, actual = job.conversation, job.actual
            records = self._emission.scored_inline(
                job.context,
                job.metrics,
                lambda metric: score_metric_inline(metric, conversation, actual, checked=checked, for_records=True),
            )
            return Started(self._emission.delivered(job.context, records), holds_session=holds)
        return Started([])

    def _start_plain(self, views: list[PlainInvocation], scope: Scope, plan: MetricPlan, holds: bool) -> Started | None:
        """:meth:`start` of a plain request's views (paired with nothing, planned): its records, as :meth:`start`
        makes them of its models; None when it needs them (its session held, or a metric that needs the loop)."""
        if holds:
            return None
        if scope != "all":
            plan = plan.by_scope()[scope == "conversation"]
        metrics = plan.applicable(has_reference=False)
        if not (plan.inline or all(runs_inline(metric) for metric in metrics)):
            return None
        checked = bool(get_value(_SUPPRESS_INSTRUMENTATION_KEY))
        context = RecordContext(invocations=views, eval_id=None, eval_set_id=None, explanations=self._explanations)
        records = self._emission.scored_inline(
            context, metrics, lambda metric: score_plain_inline(metric, views, checked=checked)
        )
        return Started(self._emission.delivered(context, records))

    def _boundary(self, request: Request, what: str | None = None) -> Boundary:
        """The boundary around ``request``; ``what`` it is for the log (None: its trace, worked out if it fails)."""
        return Boundary(self._emission.pipeline, request, what)

    def _plan_of(
        self, request: Request, invocations: list[TracedInvocation], *, report: bool = False
    ) -> tuple[Pairing, MetricPlan]:
        """The case ``request`` pairs with, and the metrics planned for it (its own criteria, else the core's)."""
        pairing = pair_invocations(invocations, self._eval_set, chosen=request.eval_case, index=self._golden)
        own = request.criteria is None or not self._gate.admits(request.criteria, report=report)
        criteria = self._criteria if own else criteria_from(request.criteria)
        plan = self._plan_for(criteria, with_reference=pairing.case is not None, own=own)
        return pairing, plan

    def _prepare(self, request: EvaluationRequest, scope: Scope, window: SessionWindow | None = None) -> _Job | None:
        """What scoring ``request`` needs: its conversation, the metrics that apply, what its records share."""
        invocations = list(request.invocations)
        if not invocations:
            return None
        pairing, plan = self._plan_of(request, invocations, report=True)
        return self._job(request, scope, pairing, plan, invocations, window)

    def _job(
        self,
        request: Request,
        scope: Scope,
        pairing: Pairing,
        plan: MetricPlan,
        invocations: list[TracedInvocation],
        window: SessionWindow | None = None,
    ) -> _Job:
        """The request paired (``pairing``) and planned (``plan``), ready to score on the metrics of ``scope``."""
        conversation = Conversation(invocations=invocations, eval_case=pairing.case, expected=pairing.expected)
        if scope != "all":
            plan = plan.by_scope()[scope == "conversation"]
        case = pairing.case
        eval_set_id = request.eval_set_id or (self._eval_set.eval_set_id if self._eval_set and case else None)
        context = RecordContext(
            invocations=invocations,
            eval_id=case.eval_id if case else None,
            eval_set_id=eval_set_id,
            window=window,
            explanations=self._explanations,
        )
        # lacks_reference, worked out once per plan (issue 36: one plan, its answers kept with it)
        metrics = plan.applicable(has_reference=conversation.expected is not None or conversation.scenario is not None)
        return _Job(conversation, with_case_rubrics(conversation), context, metrics)

    async def _evaluate_guarded(self, job: _Job, request: Request) -> list[EvaluationRecord]:
        with self._boundary(request):
            return await self._evaluate(job)
        return []

    async def _evaluate(self, job: _Job) -> list[EvaluationRecord]:
        by_metric: dict[str, list[EvaluationRecord]] = {}
        emission = self._emission

        async def score(metric: PlannedMetric) -> EvaluationResult:
            with emission.metric_span(metric, job.context) as span:
                result = await score_metric(
                    metric, job.conversation, job.actual, timeout=self._metric_timeout, off_loop=True
                )
                by_metric[metric.name] = emission.recorded(metric, job.context, span, result)
            emission.emit(job.context, by_metric[metric.name])
            return result

        try:
            await score_in_order(job.metrics, job.actual, score)
        except asyncio.CancelledError:
            # Stopped (a shutdown's bound passed) with a metric still running: the finished metrics' records, emitted
            # as each finished, still reach the sinks; the request is counted by whoever stopped it.
            finished = [record for metric in job.metrics for record in by_metric.get(metric.name, ())]
            if finished:
                self._emission.emitters.deliver(finished)
            raise
        return self._emission.delivered(
            job.context, [record for metric in job.metrics for record in by_metric[metric.name]]
        )

    def _plan_for(self, criteria: dict[str, BaseCriterion] | None, *, with_reference: bool, own: bool) -> MetricPlan:
        """The plan for ``criteria`` (``own``: the core's configured ones, with its ``metric_names``, keyed apart)."""
        key = self._own_keys[with_reference] if own else f"{with_reference}:{_criteria_key(criteria)}"
        plan = self._plans.get(key)
        if plan is None:
            selected = select_criteria(
                criteria,
                with_reference=with_reference,
                with_judge=self._with_judge(),
                metric_names=self._metric_names if own else (),
                registry=self._registry,
            )
            plan = build_plan(selected, registry=self._registry, judge=self._judge, strict=False)
            if len(self._plans) < 256:
                self._plans[key] = plan
        return plan

    def _with_judge(self) -> bool:
        """Whether the judge is configured (the default judged metrics run), asked once, on first use."""
        if self._judge_configured is None:
            self._judge_configured = self._asked is not None and self._asked.configured
        return self._judge_configured


@dataclass(frozen=True, slots=True)
class Started:
    """A request as :meth:`EvaluationCore.start` left it, paired and planned once.

    Attributes:
        records: Its records, scored and emitted on the caller's thread (empty when it needs the loop, or failed).
        on_loop: None when it ran inline; else the prepared request: awaiting the call scores and emits it on an
            event loop (never raises).
        holds_session: Its conversation-level metrics wait for its session: only its per-invocation ones were
            scored or prepared, and the caller holds its turns for the session's window.
    """

    records: list[EvaluationRecord]
    on_loop: OnLoop | None = None
    holds_session: bool = False


def _waits_for_session(plan: MetricPlan) -> bool:
    """Whether a request whose invocations all carry a session id waits for it: ``plan`` has conversation-level
    metrics."""
    return bool(plan.by_scope()[1].metrics)


@dataclass(slots=True)
class _Job:
    """One request, ready to score."""

    conversation: Conversation
    actual: list[TracedInvocation]
    context: RecordContext
    metrics: list[PlannedMetric]


def _criteria_key(criteria: dict[str, BaseCriterion] | None) -> str:
    return json.dumps(
        None if criteria is None else {name: c.model_dump(mode="json") for name, c in criteria.items()}, sort_keys=True
    )
