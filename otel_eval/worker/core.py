"""The evaluation core: one :class:`EvaluationRequest` in, scored :class:`EvaluationRecord`\\ s out, emitted as telemetry.

The embedded worker (in the agent's process) and the Kafka worker service run this same code, so nothing about
metric selection, scoring or emission differs between the two modes.

Metric selection for a request, in order:

1. the request's own ``criteria``, else the core's configured criteria (ADK ``EvalConfig`` form), else the
   defaults: ADK's reference metrics (``tool_trajectory_avg_score`` 1.0, ``response_match_score`` 0.8) when the
   invocation matches a golden eval case, plus ``hallucinations_v1`` and ``safety_v1`` when judge credentials are
   configured;
2. ADK's informational efficiency metrics are always added;
3. metrics that need a reference run only on invocations matched to a golden eval case (the request's
   ``eval_case`` or a case of the core's eval set whose turn has the same user text); on other invocations they are
   skipped, not reported, so live traffic outside the eval set does not flood the results with ``not_evaluated``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value

from otel_eval import semconv
from otel_eval.conversations import Conversation, with_case_rubrics
from otel_eval.emit import Emitters
from otel_eval.emit.attributes import score_label, score_verdict
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.emit.spans import EvaluationSpan
from otel_eval.errors import ConfigurationError
from otel_eval.metrics import (
    EFFICIENCY_METRICS,
    REFERENCE_FREE_JUDGE_METRICS,
    Evaluator,
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
    TracedInvocation,
    content_text,
)
from otel_eval.transport.messages import EvaluationRecord, EvaluationRequest, result_id

logger = logging.getLogger(__name__)

_MAX_EXPLANATION_CHARS = 4000


def judge_is_configured(judge: Any = None) -> bool:
    """Whether ``judge`` (else the process-wide default judge from the environment) has credentials."""
    if judge is None:
        from otel_eval.judge import default_judge

        judge = default_judge()
    return bool(getattr(judge, "configured", False))


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
        if set(data) <= {"criteria", "custom_metrics", "user_simulator_config", "live_model_config"} and isinstance(
            data.get("criteria"), Mapping
        ):
            data = dict(data["criteria"])
        try:
            config = EvalConfig.model_validate({"criteria": data})
        except ValueError as exc:
            raise ConfigurationError(f"criteria: {exc}") from exc
    return {name: config.criterion_for(name) for name in config.criteria}


def _normalise(text: str) -> str:
    return " ".join(text.split()).casefold()


def find_golden_turn(eval_cases: Sequence[EvalCase], user_text: str) -> tuple[EvalCase, int] | None:
    """The first case turn whose user text equals ``user_text`` (ignoring case and whitespace runs), or None."""
    wanted = _normalise(user_text)
    if not wanted:
        return None
    for case in eval_cases:
        for index, turn in enumerate(case.conversation or []):
            if _normalise(content_text(turn.user_content)) == wanted:
                return case, index
    return None


def _pair_by_user_text(
    eval_cases: Sequence[EvalCase], invocations: Sequence[TracedInvocation]
) -> tuple[EvalCase, list[Invocation]] | None:
    """The case whose turns have every invocation's user text, with the matching turns; None otherwise."""
    case: EvalCase | None = None
    expected: list[Invocation] = []
    for traced in invocations:
        search = eval_cases if case is None else [case]
        found = find_golden_turn(search, content_text(traced.invocation.user_content))
        if found is None:
            return None
        case = found[0]
        expected.append((case.conversation or [])[found[1]])
    return (case, expected) if case is not None else None


@dataclass(frozen=True, slots=True)
class _Metric:
    """A metric to run: its evaluator, or why it cannot run."""

    name: str
    evaluator: Evaluator | None
    problem: str | None = None
    problem_type: str | None = None


class EvaluationCore:
    """Selects, runs and emits the metrics of evaluation requests. :meth:`evaluate` never raises.

    Args:
        criteria: ADK criteria every request without its own uses; None for the defaults (see module docs).
        eval_set: Golden cases for online reference metrics.
        registry: Metric registry (``default_registry()`` when None).
        judge: Judge client handed to judged metrics (None: each metric's default judge from the environment).
        judge_configured: Whether judge credentials exist (decides the default judged metrics); read from the
            environment when None.
        emitters: Where records go (events, evaluation spans, metrics, extra sinks); the global providers when None.
        pipeline: Pipeline counters (evaluated, errored).
        metric_timeout_seconds: Bound on one metric's run on one request; a metric past it is NOT_EVALUATED.

    Raises:
        ConfigurationError: ``criteria`` names an unknown metric or holds an invalid criterion.
    """

    def __init__(
        self,
        *,
        criteria: Mapping[str, Any] | EvalConfig | None = None,
        eval_set: EvalSet | None = None,
        registry: MetricRegistry | None = None,
        judge: Any = None,
        judge_configured: bool | None = None,
        emitters: Emitters | None = None,
        pipeline: PipelineMetrics | None = None,
        metric_timeout_seconds: float = 600.0,
    ) -> None:
        self._registry = registry or default_registry()
        self._judge = judge
        self._judge_configured = judge_is_configured(judge) if judge_configured is None else judge_configured
        self._criteria = criteria_from(criteria)
        self._eval_set = eval_set
        self.emitters = emitters if emitters is not None else Emitters.create()
        self._pipeline = pipeline
        self._metric_timeout = metric_timeout_seconds
        self._plans: dict[str, list[_Metric]] = {}
        if self._criteria is not None:
            for metric in self._plan(self._criteria, with_reference=True):
                if metric.evaluator is None:
                    raise ConfigurationError(metric.problem or f"metric {metric.name!r} cannot run")

    @property
    def eval_set(self) -> EvalSet | None:
        """The golden cases used for online reference metrics."""
        return self._eval_set

    def match_eval_case(self, invocation: TracedInvocation) -> EvalCase | None:
        """The eval-set case with a turn whose user text equals ``invocation``'s, or None."""
        if self._eval_set is None:
            return None
        found = find_golden_turn(self._eval_set.eval_cases, content_text(invocation.invocation.user_content))
        return found[0] if found else None

    async def evaluate(self, request: EvaluationRequest) -> list[EvaluationRecord]:
        """Scores ``request``, emits every record, and returns them. Never raises."""
        try:
            return await self._evaluate(request)
        except Exception:  # the worker boundary: one bad request must not stop the others
            logger.exception("evaluation of trace %s failed", request.trace_id)
            if self._pipeline is not None:
                self._pipeline.invocations_dropped(semconv.DROP_EVALUATION_ERROR, len(request.invocations))
            return []

    async def _evaluate(self, request: EvaluationRequest) -> list[EvaluationRecord]:
        invocations = list(request.invocations)
        if not invocations:
            return []
        eval_case, expected = self._expected_for(request, invocations)
        criteria = criteria_from(request.criteria) if request.criteria is not None else self._criteria
        metrics = self._metrics_for(criteria, with_reference=expected is not None)
        actual = with_case_rubrics(Conversation(invocations=invocations, eval_case=eval_case))
        scenario = eval_case.conversation_scenario if eval_case is not None else None
        eval_set_id = request.eval_set_id or (self._eval_set.eval_set_id if self._eval_set and eval_case else None)
        context = _RecordContext(
            invocations=invocations,
            eval_id=eval_case.eval_id if eval_case else None,
            eval_set_id=eval_set_id,
        )
        results = await asyncio.gather(
            *(self._run_metric(metric, actual, expected, scenario, context) for metric in metrics)
        )
        records = [record for metric_records in results for record in metric_records]
        self.emitters.deliver(records)
        if self._pipeline is not None:
            self._pipeline.evaluated(len(invocations))
        return records

    def _expected_for(
        self, request: EvaluationRequest, invocations: list[TracedInvocation]
    ) -> tuple[EvalCase | None, list[Invocation] | None]:
        """The golden case and each invocation's expected turn; (case, None) when they cannot all be paired."""
        if request.eval_case is not None:
            case = request.eval_case
            paired = _pair_by_user_text([case], invocations)
            if paired is not None:
                return paired
            turns = case.conversation or []
            # The sender chose this case; with as many turns as invocations they pair by position.
            return case, (list(turns) if turns and len(turns) == len(invocations) else None)
        if self._eval_set is None:
            return None, None
        return _pair_by_user_text(self._eval_set.eval_cases, invocations) or (None, None)

    def _metrics_for(self, criteria: dict[str, BaseCriterion] | None, *, with_reference: bool) -> list[_Metric]:
        key = json.dumps(
            None if criteria is None else {name: c.model_dump(mode="json") for name, c in criteria.items()},
            sort_keys=True,
        )
        key = f"{with_reference}:{key}"
        plan = self._plans.get(key)
        if plan is None:
            selected: dict[str, BaseCriterion | None] = dict(criteria) if criteria is not None else {}
            if criteria is None:
                if with_reference:
                    selected = {name: DEFAULT_EVAL_CONFIG.criterion_for(name) for name in DEFAULT_EVAL_CONFIG.criteria}
                if self._judge_configured:
                    selected.update({name: None for name in REFERENCE_FREE_JUDGE_METRICS if name in self._registry})
            plan = self._plan(selected, with_reference=with_reference)
            if len(self._plans) < 256:
                self._plans[key] = plan
        return plan

    def _plan(self, criteria: Mapping[str, BaseCriterion | None], *, with_reference: bool) -> list[_Metric]:
        selected: dict[str, BaseCriterion | None] = dict(criteria)
        for name in EFFICIENCY_METRICS:
            if name in self._registry:
                selected.setdefault(name, None)
        plan = []
        for name, criterion in selected.items():
            try:
                if self._registry.info(name).requires_reference and not with_reference:
                    continue
                plan.append(_Metric(name, self._registry.create(name, criterion, judge=self._judge)))
            except ConfigurationError as exc:
                plan.append(_Metric(name, None, str(exc), type(exc).__name__))
        return plan

    async def _run_metric(
        self,
        metric: _Metric,
        actual: list[TracedInvocation],
        expected: list[Invocation] | None,
        scenario: Any,
        context: _RecordContext,
    ) -> list[EvaluationRecord]:
        first = context.invocations[0]
        spans = self.emitters.spans
        if spans is None:
            result = await self._score(metric, actual, expected, scenario)
            records = context.records(metric, result)
        else:
            with spans.evaluation_span(metric.name, first.trace_id, first.span_id) as span:
                result = await self._score(metric, actual, expected, scenario)
                records = context.records(metric, result)
                _finish(span, records[0])
            for record in records[1:]:
                spans.emit(record)
        for record in records:
            self.emitters.emit(record)
            if record.error_type and self._pipeline is not None:
                self._pipeline.errored(record.metric_name, record.error_type)
        return records

    async def _score(
        self, metric: _Metric, actual: list[TracedInvocation], expected: list[Invocation] | None, scenario: Any
    ) -> EvaluationResult:
        evaluator = metric.evaluator
        if evaluator is None:
            return _not_evaluated(metric.problem or "metric cannot run", metric.problem_type or "configuration", actual)
        # The judge's HTTP calls must not be traced by instrumentations, and any span made under this context is
        # skipped by the EvaluationSpanProcessor: the evaluator never evaluates itself.
        token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            return await asyncio.wait_for(
                evaluator.evaluate(actual, expected, conversation_scenario=scenario), timeout=self._metric_timeout
            )
        except asyncio.TimeoutError:
            reason = f"metric {metric.name} took longer than {self._metric_timeout:g} s"
            return evaluator.not_evaluated(reason, count=len(actual), error_type="timeout")
        except Exception as exc:  # one failing metric yields NOT_EVALUATED, the others still run
            logger.exception("metric %s failed on trace %s", metric.name, actual[0].trace_id)
            return evaluator.not_evaluated(
                f"metric failed: {type(exc).__name__}: {exc}", count=len(actual), error_type=type(exc).__name__
            )
        finally:
            detach(token)


@dataclass(slots=True)
class _RecordContext:
    """What every record of one request shares."""

    invocations: list[TracedInvocation]
    eval_id: str | None
    eval_set_id: str | None

    def records(self, metric: _Metric, result: EvaluationResult) -> list[EvaluationRecord]:
        """One record per invocation, from its per-invocation result (the overall result when there is none)."""
        evaluator = metric.evaluator
        info = evaluator.info if evaluator is not None else None
        version = info.version if info is not None else "1"
        judge_model = _judge_model(evaluator) if info is not None and info.requires_judge else None
        threshold = evaluator.threshold if evaluator is not None else None
        per = result.per_invocation_results
        records = []
        for index, traced in enumerate(self.invocations):
            entry = per[index] if index < len(per) else None
            if entry is None:
                single = len(self.invocations) == 1
                entry = PerInvocationResult(
                    score=result.overall_score if single else None,
                    eval_status=result.overall_eval_status if single else EvalStatus.NOT_EVALUATED,
                )
            status = entry.eval_status
            explanation = entry.explanation or result.explanation
            error_type = entry.error_type or (result.error_type if status is EvalStatus.NOT_EVALUATED else None)
            if status is EvalStatus.NOT_EVALUATED and error_type is None:
                error_type = "not_evaluated"
            records.append(
                EvaluationRecord(
                    result_id=result_id(traced.trace_id, traced.span_id, metric.name, version, judge_model),
                    trace_id=traced.trace_id,
                    span_id=traced.span_id,
                    invocation_id=traced.invocation.invocation_id or "",
                    metric_name=metric.name,
                    metric_version=version,
                    judge_model=judge_model,
                    score=entry.score,
                    eval_status=status,
                    label=score_label(status),
                    verdict=score_verdict(status, info.verdicts if info is not None else None),
                    threshold=threshold,
                    explanation=_truncate(explanation),
                    error_type=error_type,
                    agent_name=traced.agent_name,
                    session_id=traced.session_id,
                    eval_id=self.eval_id,
                    eval_set_id=self.eval_set_id,
                    invocation_end_time_ns=traced.end_time_ns,
                )
            )
        return records


def _finish(span: EvaluationSpan, record: EvaluationRecord) -> None:
    try:
        span.finish(record)
    except Exception:  # a span attribute problem must not lose the result
        logger.exception("cannot set the evaluation span's attributes")


def _judge_model(evaluator: Evaluator | None) -> str | None:
    options = getattr(getattr(evaluator, "criterion", None), "judge_model_options", None)
    model = getattr(options, "judge_model", None)
    return model if isinstance(model, str) else None


def _truncate(text: str | None) -> str | None:
    if text is None or len(text) <= _MAX_EXPLANATION_CHARS:
        return text
    return text[: _MAX_EXPLANATION_CHARS - 1] + "…"


def _not_evaluated(reason: str, error_type: str, actual: Sequence[TracedInvocation]) -> EvaluationResult:
    return EvaluationResult(
        overall_eval_status=EvalStatus.NOT_EVALUATED,
        per_invocation_results=[PerInvocationResult(explanation=reason, error_type=error_type) for _ in actual],
        explanation=reason,
        error_type=error_type,
    )
