"""The evaluator interface every metric implements, and the metric's self-description.

One module per metric, named as ADK names it; each defines one :class:`Evaluator` subclass with a ``info``
class attribute. The registry (:mod:`otel_eval.metrics.registry`) lists them explicitly.
"""

from __future__ import annotations

import abc
import enum
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import pydantic

from otel_eval.errors import ConfigurationError
from otel_eval.judge.protocol import Judge, is_judge
from otel_eval.metrics.provenance import EvaluatorProvenance, provenance_of
from otel_eval.model import (
    BaseCriterion,
    ConversationScenario,
    EvalStatus,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    TracedInvocation,
)
from otel_eval.model.loading import json_path
from otel_eval.reconstruct.plain import PlainInvocation
from otel_eval.reconstruct.reads import Reads

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MetricInfo:
    """What a metric is: shown by ``otel-eval list-metrics`` and used to validate criteria."""

    name: str
    description: str
    criterion_type: type[BaseCriterion]
    min_value: float | None = 0.0
    max_value: float | None = 1.0
    requires_reference: bool = False
    requires_judge: bool = False
    informational: bool = False
    """Reports a value with status INFORMATIONAL and takes no threshold (ADK's efficiency metrics)."""
    version: str = "1"
    default_threshold: float | None = None
    """Threshold used when the metric is requested by name only (``-m NAME``)."""
    conversation_level: bool = False
    """Needs the whole conversation to score (ADK's multi-turn metrics judge it once, on its last turn; the
    user-simulator metric judges each turn against the turns before it): online, such a metric is meant to run on a
    session's turns together, not on each turn alone."""
    verdicts: tuple[str, str] | None = None
    """The metric's own words for PASSED and FAILED (e.g. ``grounded``/``hallucinated``), emitted as
    ``otel_eval.score.verdict`` on events and spans; the score label itself is always ``pass``/``fail``."""

    @property
    def value_range(self) -> str:
        """The range as text, e.g. ``[0, 1]``, or ``>= 0`` for unbounded values."""
        if self.min_value is None:
            return "any"
        if self.max_value is None:
            return f">= {self.min_value:g}"
        return f"[{self.min_value:g}, {self.max_value:g}]"


class Evaluator(abc.ABC):
    """Scores a conversation's actual invocations, optionally against expected ones.

    Subclasses set ``info`` and implement :meth:`evaluate`. The criterion arrives already validated as
    ``info.criterion_type`` in ``self.criterion`` (None for informational metrics without one).
    """

    info: ClassVar[MetricInfo]
    runs_inline: ClassVar[bool] = False
    """Whether the workers may run :meth:`evaluate` on their event loop rather than on a metric thread: only for a
    metric that never waits and whose work is a single linear pass over the (already rebuilt, size-limited)
    invocations, so it ends well within any deadline; handing it to a thread would cost more than the metric. Such a
    metric is scored through :meth:`evaluate_now` where no event loop runs (the in-thread processor)."""
    runs_on_own_threads: ClassVar[bool] = False
    """Whether :meth:`evaluate` hands its work to threads of its own and only awaits them, keeping its own deadline
    (an ADK custom metric): the workers then await it on their event loop instead of giving it one of the metric
    threads every deterministic metric shares, which a call that never returns would hold."""
    reads: ClassVar[Reads] = Reads.ALL
    """What :meth:`evaluate` reads of the actual invocations beyond the facts always rebuilt (ids, agent, start and
    end, ``content_captured``; see :mod:`otel_eval.reconstruct.reads`): the rebuild produces only the union of the
    planned metrics' reads. Everything by default (a judge prompt, an ADK custom metric); a metric that reads less
    says so in one line, and ``tests/reconstruct/test_rebuild_on_demand.py`` proves it on every recorded trace."""

    def __init__(self, criterion: BaseCriterion | None = None, *, judge: Judge | None = None) -> None:
        info = self.info
        if info.informational:
            if criterion is not None and "threshold" in criterion.model_fields_set:
                raise ConfigurationError(f"metric {info.name!r} is informational and takes no threshold")
            self.criterion: BaseCriterion | None = None
        else:
            if criterion is None:
                if info.default_threshold is None:
                    raise ConfigurationError(f"metric {info.name!r} needs a criterion with a threshold")
                criterion = BaseCriterion(threshold=info.default_threshold)
            try:
                self.criterion = criterion.as_type(info.criterion_type)
            except pydantic.ValidationError as exc:
                raise ConfigurationError(
                    f"invalid criterion for metric {info.name!r}: {_first_error(exc, info.criterion_type)}"
                ) from exc
            misspelled = next(iter(self.criterion.misspelled_options().items()), None)
            if misspelled is not None:
                raise ConfigurationError(
                    f"invalid criterion for metric {info.name!r}: {misspelled_option(*misspelled)}"
                )
            warn_threshold(info, self.criterion.threshold)
        if judge is not None:
            if not is_judge(judge):
                raise TypeError(f"judge must implement otel_eval.judge.Judge, got {type(judge).__name__}")
            if info.requires_judge:  # a judged metric reads the judge's configuration when made, not at its first call
                _ = judge.uses_vertex
        self.judge = judge

    @property
    def threshold(self) -> float | None:
        """The pass threshold, or None for informational metrics."""
        return None if self.criterion is None else self.criterion.threshold

    def score_inputs(self) -> dict[str, Any]:
        """Everything that changes this evaluator's scores, as JSON values: what its provenance version digests.

        Here the metric, its ``info.version`` and its validated criterion (fields left at their defaults omitted, so
        a criterion that spells out a default is the same evaluator); judged metrics add theirs.
        """
        criterion = self.criterion
        return {
            "metric": self.info.name,
            "metric_version": self.info.version,
            "criterion": None if criterion is None else criterion.model_dump(mode="json", exclude_defaults=True),
        }

    @cached_property
    def provenance(self) -> EvaluatorProvenance:
        """Who scores this metric's results: evaluator id, type, version and judge model (see
        :mod:`otel_eval.metrics.provenance`). Computed once: an evaluator's configuration does not change."""
        return provenance_of(self)

    @abc.abstractmethod
    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """Scores ``actual`` (one conversation, in order). ``expected`` pairs 1:1 with ``actual`` when given.

        Never raises for bad or missing data: returns NOT_EVALUATED with the reason in ``explanation``.
        """

    def evaluate_now(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """:meth:`evaluate`'s result, computed on the caller's thread without an event loop: what the workers call
        for a metric that :attr:`runs_inline`. By default one step of the :meth:`evaluate` coroutine, which must end
        in it (it never waits); a metric whose work is synchronous overrides this with that work (no coroutine per
        call) and has :meth:`evaluate` return it.

        Raises:
            RuntimeError: :meth:`evaluate` waited (the metric breaks its ``runs_inline`` promise; it is closed).
        """
        run = self.evaluate(actual, expected, conversation_scenario=conversation_scenario)
        try:
            run.send(None)
        except StopIteration as done:
            result: EvaluationResult = done.value
            return result
        run.close()
        raise RuntimeError(f"{type(self).__name__}.evaluate waited although it declares runs_inline")

    def score_now(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """:meth:`evaluate_now` as online evaluation's records read it: each invocation's and the overall score,
        status, explanation and error type, equal to :meth:`evaluate_now`'s. A metric may leave out what only an
        offline report reads (the efficiency metrics' token and duration breakdowns); by default
        :meth:`evaluate_now` itself.

        Raises:
            RuntimeError: as :meth:`evaluate_now`.
        """
        return self.evaluate_now(actual, expected, conversation_scenario=conversation_scenario)

    def score_plain(
        self,
        actual: Sequence[PlainInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """:meth:`score_now` of the invocations' plain views (:mod:`otel_eval.reconstruct.plain`), equal to it on their
        models: by default it is :meth:`score_now` of the models (made here, once per view); a metric that reads no
        more than a plain view holds overrides it and makes none (the efficiency metrics).

        Raises:
            RuntimeError: as :meth:`evaluate_now`.
        """
        traced = [plain.traced() for plain in actual]
        return self.score_now(traced, expected, conversation_scenario=conversation_scenario)

    def status_of(self, score: float | None) -> EvalStatus:
        """PASSED when ``score >= threshold``, FAILED below, NOT_EVALUATED for None, INFORMATIONAL if no threshold."""
        if score is None:
            return EvalStatus.NOT_EVALUATED
        if self.criterion is None:
            return EvalStatus.INFORMATIONAL
        return EvalStatus.PASSED if score >= self.criterion.threshold else EvalStatus.FAILED

    def not_evaluated(self, reason: str, *, count: int = 0, error_type: str | None = None) -> EvaluationResult:
        """A NOT_EVALUATED result with ``count`` NOT_EVALUATED per-invocation entries, all carrying ``reason``."""
        return EvaluationResult(
            overall_score=None,
            overall_eval_status=EvalStatus.NOT_EVALUATED,
            per_invocation_results=[
                PerInvocationResult(explanation=reason, error_type=error_type) for _ in range(count)
            ],
            explanation=reason,
            error_type=error_type,
        )

    def mean_result(self, per_invocation: list[PerInvocationResult]) -> EvaluationResult:
        """Overall = mean of the non-None per-invocation scores (None when there are none), status by threshold.

        The mean is ``sum / count`` summed left to right, exactly as ADK's evaluators compute it, so overall scores
        equal ADK's to the last bit (``statistics.fmean`` can differ in the last place and flip a status at the
        threshold).
        """
        scores = [r.score for r in per_invocation if r.score is not None]
        overall = sum(scores) / len(scores) if scores else None
        return EvaluationResult(
            overall_score=overall,
            overall_eval_status=self.status_of(overall),
            per_invocation_results=per_invocation,
            explanation=None if scores else _first_explanation(per_invocation),
        )


def misspelled_option(key: str, option: str) -> str:
    """Why a criterion's ``key`` close to its ``option`` is refused (:meth:`BaseCriterion.misspelled_options`)."""
    return f"{key}: not an option of this metric (did you mean {option!r}?); ADK would ignore it"


def threshold_warning(info: MetricInfo, threshold: float) -> str | None:
    """Why ``threshold`` cannot give both verdicts (above the metric's range: it never passes; below: it never
    fails), or None. ADK's threshold is an unbounded float, so such a threshold is accepted, with this warning."""
    low, high = info.min_value, info.max_value
    if high is not None and threshold > high:
        return (
            f"threshold {threshold:g} of metric {info.name!r} is above its range {info.value_range}: it can never pass"
        )
    if low is not None and threshold < low:
        return (
            f"threshold {threshold:g} of metric {info.name!r} is below its range {info.value_range}: it can never fail"
        )
    return None


_warned_thresholds: set[tuple[str, float]] = set()


def warn_threshold(info: MetricInfo, threshold: float) -> None:
    """Logs :func:`threshold_warning` once per metric and threshold (the first 256 such pairs of the process)."""
    key = (info.name, threshold)
    if key in _warned_thresholds or len(_warned_thresholds) >= 256 or not logger.isEnabledFor(logging.WARNING):
        return
    warning = threshold_warning(info, threshold)
    if warning is not None:
        _warned_thresholds.add(key)
        logger.warning("%s", warning)


def claim_threshold_warning(info: MetricInfo, threshold: float) -> str | None:
    """:func:`threshold_warning`, for a caller that says it itself with where the threshold was set (``otel-eval
    run``: the file and JSON path): :func:`warn_threshold` does not log it again."""
    warning = threshold_warning(info, threshold)
    if warning is not None:
        _warned_thresholds.add((info.name, threshold))
    return warning


def check_threshold(info: MetricInfo, threshold: float) -> None:
    """Rejects a threshold outside the metric's value range (stricter than ADK, which accepts any threshold: see
    :func:`threshold_warning`, what the evaluators apply)."""
    low, high = info.min_value, info.max_value
    if (low is not None and threshold < low) or (high is not None and threshold > high):
        raise ConfigurationError(
            f"threshold {threshold:g} of metric {info.name!r} is outside its range {info.value_range}"
        )


def _first_error(exc: pydantic.ValidationError, criterion_type: type[BaseCriterion] | None = None) -> str:
    err = exc.errors()[0]
    location = json_path(err["loc"]) if err["loc"] else "criterion"
    enum_type = _enum_field(criterion_type, err["loc"])
    if enum_type is not None:
        names = ", ".join(member.name for member in enum_type)
        return f"{location}: {err.get('input')!r} is not one of {names}"
    return f"{location}: {err['msg']}"


def _enum_field(criterion_type: type[BaseCriterion] | None, loc: tuple[int | str, ...]) -> type[enum.Enum] | None:
    """The Enum type of the top-level criterion field at ``loc`` (by name or alias), if it is one."""
    if criterion_type is None or len(loc) != 1:
        return None
    for name, field in criterion_type.model_fields.items():
        if loc[0] in (name, field.alias):
            annotation = field.annotation
            return annotation if isinstance(annotation, type) and issubclass(annotation, enum.Enum) else None
    return None


def _first_explanation(results: list[PerInvocationResult]) -> str | None:
    return next((r.explanation for r in results if r.explanation), None)
