"""The template every LLM-judged metric follows, mirroring ADK 2.13's ``LlmAsJudge``.

:class:`LlmJudgeEvaluator` resolves the judge, builds requests and turns judge failures into NOT_EVALUATED
results with an ``error_type``. :class:`SampledJudgeEvaluator` adds ADK's per-invocation fan-out: one prompt per
invocation, ``num_samples`` judge calls (all run concurrently, bounded by the judge's shared limit), a parse per
sample, the metric's vote over samples and its aggregation over invocations. A sample whose call finally fails
makes its invocation NOT_EVALUATED (as in ADK); a sample the metric cannot parse counts as no vote.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from otel_eval import environment_variables as env
from otel_eval import semconv
from otel_eval.errors import JudgeError
from otel_eval.judge import JUDGE_NOT_CONFIGURED, JUDGE_UNPARSEABLE, DataBlocks, Judge, ModelAwareJudge
from otel_eval.judge.budget import Admission, CallEstimate, Refusal, spending
from otel_eval.judge.priority import is_priority
from otel_eval.judge.prompt_safety import DATA_INSTRUCTION
from otel_eval.judge.settings import max_reply_characters
from otel_eval.metrics._judge_context_check import ContextProblem, context_overflow, incomplete_context
from otel_eval.metrics._reference import unpaired_reference
from otel_eval.metrics.base import Evaluator
from otel_eval.model import (
    BaseCriterion,
    ConversationScenario,
    EvalStatus,
    EvaluationResult,
    Invocation,
    JudgeModelOptions,
    PerInvocationResult,
    RubricScore,
    TracedInvocation,
)
from otel_eval.model.utf8_json import utf8_text

if TYPE_CHECKING:
    from otel_eval.judge.client import JudgeReply

logger = logging.getLogger(__name__)

INVALID_INPUT = "invalid_input"


@dataclass(frozen=True, slots=True)
class JudgePrompt:
    """A built judge prompt and the data blocks its untrusted parts were rendered with."""

    text: str
    data: DataBlocks
    response_schema: dict[str, Any] | type[BaseModel] | None = None


@dataclass(slots=True)
class Sample:
    """One judge sample's verdict (``score`` None when it could not be read; ``error_type`` then says why)."""

    score: float | None
    rubric_scores: list[RubricScore] | None = None
    explanation: str | None = None
    error_type: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


class LlmJudgeEvaluator(Evaluator):
    """Base of the judged metrics: the judge, its options, one request, and failure mapping.

    Subclasses list their prompt templates in ``prompt_templates`` (part of the provenance version), set ``sampled``
    False when they ignore ``num_samples`` (one call per judged item, as ADK's hallucination metric), and set
    ``judges_tool_results`` when their prompt shows the judge tool calls with their results (then every call must
    have its result in the trace, see :mod:`otel_eval.metrics._judge_context_check`).
    """

    prompt_templates: ClassVar[tuple[str, ...]] = ()
    sampled: ClassVar[bool] = True
    requires_expected: ClassVar[bool] = False
    judges_tool_results: ClassVar[bool] = False

    def __init__(self, criterion: BaseCriterion | None = None, *, judge: Judge | None = None) -> None:
        super().__init__(criterion, judge=judge)

    @property
    def judge_client(self) -> Judge:
        """The judge given at construction, else the process-wide default built from the environment."""
        if self.judge is not None:
            return self.judge
        from otel_eval.judge.client import default_judge  # deferred: only judged metrics need it

        return default_judge()

    @property
    def judge_options(self) -> JudgeModelOptions | None:
        """The criterion's ``judge_model_options`` (None when the criterion type has none)."""
        options = getattr(self.criterion, "judge_model_options", None)
        return options if isinstance(options, JudgeModelOptions) else None

    @property
    def judge_model(self) -> str:
        """The judge model this metric uses."""
        return self.judge_client.model_for(self.judge_options)

    def num_samples(self, *, default: int | None = None) -> int:
        """Samples per item (settings override, criterion, else ``default``)."""
        return self.judge_client.num_samples_for(self.judge_options, default=default)

    def default_samples(self) -> int | None:
        """Samples when the criterion sets none (None: the criterion's default, ADK's 5)."""
        return None

    def score_inputs(self) -> dict[str, Any]:
        """The criterion and metric version, plus the judge model, the prompt templates, the data-block
        instruction and (sampled metrics) the sample count: a change of any of them is a new evaluator version.

        The judge model counts once, as resolved: named in the criterion or the settings' default, it is the same.
        """
        inputs = super().score_inputs()
        options = (inputs.get("criterion") or {}).get("judge_model_options")
        if isinstance(options, dict):
            options.pop("judge_model", None)
            if not options:
                del inputs["criterion"]["judge_model_options"]
        return {
            **inputs,
            "judge_model": self.judge_model,
            "prompt_templates": list(self.prompt_templates),
            "data_instruction": DATA_INSTRUCTION,
            "num_samples": self.num_samples(default=self.default_samples()) if self.sampled else None,
        }

    def judge_unavailable(self, count: int) -> EvaluationResult | None:
        """NOT_EVALUATED (``judge_not_configured``) for all ``count`` invocations when no judge is configured."""
        client = self.judge_client
        if isinstance(client, ModelAwareJudge):
            reason = client.problem_for(self.judge_model)
        else:
            reason = None if client.configured else client.not_configured_reason or "judge not configured"
        if reason is None:
            return None
        return self.not_evaluated(reason, count=count, error_type=JUDGE_NOT_CONFIGURED)

    def unjudgeable(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult | None:
        """NOT_EVALUATED for every invocation when the reference is needed (or given) but does not pair one to one with
        ``actual``, or when no judge is configured; None when the invocations may be judged."""
        if self.requires_expected or expected is not None:
            unpaired = unpaired_reference(self, actual, expected, conversation_scenario)
            if unpaired is not None:
                return unpaired
        return self.judge_unavailable(len(actual))

    def context_problem(self, traced: TracedInvocation) -> ContextProblem | None:
        """Why ``traced`` must not be judged (no content, no final response, unanswered tool calls), if anything."""
        return incomplete_context(traced, tool_results=self.judges_tool_results)

    def prompt_overflow(self, prompt: JudgePrompt) -> ContextProblem | None:
        """A problem when ``prompt`` (with its system instruction) would not fit the judge model's input window."""
        model = self.judge_model
        return context_overflow(prompt_characters(prompt), model, self.judge_client.input_token_limit(model))

    def admit(self, judged: Sequence[TracedInvocation], calls: Sequence[int]) -> Admission | ContextProblem | None:
        """Asks the judge budget for one whole evaluation of ``judged`` (priority when any of them is): ``calls``
        are the prompt sizes, in characters, of every call it will make. None: no budget applies; a problem
        (``budget_exhausted``): refused, make no call; else run the calls under ``spending(admission)``."""
        estimates = [CallEstimate(self.judge_model, characters) for characters in calls]
        outcome = self.judge_client.admit(
            self.info.name, estimates, priority=any(is_priority(traced) for traced in judged)
        )
        if isinstance(outcome, Refusal):
            return ContextProblem(outcome.reason, semconv.ERROR_TYPE_BUDGET_EXHAUSTED)
        return outcome

    async def ask(self, prompt: JudgePrompt, *, sample: int = 0) -> JudgeReply:
        """Sends ``prompt`` as sample ``sample``. Raises :class:`JudgeError` when the call finally fails, or without
        a call (``context_overflow``) when the prompt would not fit the judge model's input window."""
        from otel_eval.judge.client import JudgeRequest  # deferred: only judged metrics need it

        overflow = self.prompt_overflow(prompt)
        if overflow is not None:
            raise JudgeError(overflow.reason, error_type=overflow.error_type)
        options = self.judge_options
        request = JudgeRequest(
            model=self.judge_model,
            prompt=utf8_text(prompt.text),  # a recorded lone surrogate would fail the request's encoding
            system_instruction=prompt.data.system_instruction(),
            response_schema=prompt.response_schema,
            config=options.judge_model_config if options else None,
        )
        return await self.judge_client.generate(request, metric=self.info.name, sample=sample)

    @staticmethod
    def reply_problem(reply: JudgeReply, prompt: JudgePrompt) -> Sample | None:
        """A sample without a score when the reply has no text, was blocked, is longer than
        ``OTEL_EVAL_JUDGE_MAX_REPLY_CHARS`` (``judge_reply_too_long``: never parsed), or echoes the prompt; else None.

        Replies are parsed on the event loop. That is bounded: a reply passing this check is at most the cap, and
        every parser of a judged metric is linear in the reply (:mod:`otel_eval.metrics._star_chain`,
        :mod:`otel_eval.metrics._reply_scan`, JSON), a few milliseconds at the default cap.
        """
        if reply.text is None or not reply.text.strip():
            why = f"judge blocked the prompt ({reply.block_reason})" if reply.block_reason else "judge sent no text"
            return Sample(score=None, explanation=why, error_type=JUDGE_UNPARSEABLE)
        limit = max_reply_characters()
        if len(reply.text) > limit:
            _say_reply_too_long(len(reply.text), limit)
            return Sample(
                score=None,
                explanation=f"judge reply of {len(reply.text)} characters is over the {limit} read "
                f"({env.OTEL_EVAL_JUDGE_MAX_REPLY_CHARS}); not parsed",
                error_type=semconv.ERROR_TYPE_JUDGE_REPLY_TOO_LONG,
            )
        if prompt.data.echoes_prompt(reply.text):
            return Sample(
                score=None, explanation="judge repeated the prompt instead of judging", error_type=JUDGE_UNPARSEABLE
            )
        return None


class SampledJudgeEvaluator(LlmJudgeEvaluator):
    """ADK's ``LlmAsJudge`` template: prompt per invocation, samples, parse, vote, aggregate."""

    @abc.abstractmethod
    def build_prompt(self, actual: Invocation, expected: Invocation | None) -> JudgePrompt:
        """The judge prompt for one invocation. Raises ValueError for input the metric cannot judge."""

    @abc.abstractmethod
    def parse(self, text: str, prompt: JudgePrompt) -> Sample:
        """One sample's verdict from the judge's text."""

    @abc.abstractmethod
    def aggregate_samples(self, samples: list[Sample]) -> PerInvocationResult:
        """One invocation's result from its samples (the metric's vote)."""

    @abc.abstractmethod
    def aggregate_invocations(self, results: list[PerInvocationResult]) -> EvaluationResult:
        """The overall result from the per-invocation results."""

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """Scores each invocation with ``num_samples`` judge samples; see the class docs."""
        count = len(actual)
        unjudgeable = self.unjudgeable(actual, expected, conversation_scenario)
        if unjudgeable is not None:
            return unjudgeable
        try:
            prompts = [
                self._checked_prompt(traced, expected[i] if expected is not None else None)
                for i, traced in enumerate(actual)
            ]
        except ValueError as exc:
            return self.not_evaluated(f"{self.info.name}: {exc}", count=count, error_type=INVALID_INPUT)
        num_samples = self.num_samples(default=self.default_samples())
        per_invocation = await asyncio.gather(
            *(
                _refused(prompt)
                if isinstance(prompt, ContextProblem)
                else self.admitted_judgement([traced], prompt, num_samples)
                for traced, prompt in zip(actual, prompts, strict=True)
            )
        )
        if not per_invocation:
            return EvaluationResult()
        return self.aggregate_invocations(list(per_invocation))

    def _checked_prompt(self, traced: TracedInvocation, expected: Invocation | None) -> JudgePrompt | ContextProblem:
        """The invocation's prompt, or why it must not be judged (incomplete context, prompt over the window)."""
        problem = self.context_problem(traced)
        if problem is not None:
            return problem
        prompt = self.build_prompt(traced.invocation, expected)
        return self.prompt_overflow(prompt) or prompt

    async def admitted_judgement(
        self, judged: Sequence[TracedInvocation], prompt: JudgePrompt, num_samples: int
    ) -> PerInvocationResult:
        """``prompt`` (about ``judged``: an invocation, or a conversation's turns) judged ``num_samples`` times when
        the budget admits all the samples; else NOT_EVALUATED, no call made."""
        admission = self.admit(judged, [prompt_characters(prompt)] * num_samples)
        if isinstance(admission, ContextProblem):
            return admission.result()
        with spending(admission):
            return await self._judge_invocation(prompt, num_samples)

    async def _judge_invocation(self, prompt: JudgePrompt, num_samples: int) -> PerInvocationResult:
        outcomes = await asyncio.gather(
            *(self._one_sample(prompt, index) for index in range(num_samples)), return_exceptions=True
        )
        samples: list[Sample] = []
        for outcome in outcomes:
            if isinstance(outcome, JudgeError):
                return PerInvocationResult(
                    score=None,
                    eval_status=EvalStatus.NOT_EVALUATED,
                    explanation=str(outcome),
                    error_type=outcome.error_type,
                )
            if isinstance(outcome, BaseException):
                raise outcome
            samples.append(outcome)
        result = self.aggregate_samples(samples)
        if result.score is None and result.error_type is None:
            first_error = next((s for s in samples if s.error_type), None)
            result.error_type = first_error.error_type if first_error else JUDGE_UNPARSEABLE
            result.explanation = result.explanation or (first_error.explanation if first_error else None)
        result.details = {**(result.details or {}), "judge_model": self.judge_model, "samples": len(samples)}
        return result

    async def _one_sample(self, prompt: JudgePrompt, index: int) -> Sample:
        reply = await self.ask(prompt, sample=index)
        problem = self.reply_problem(reply, prompt)
        if problem is not None:
            return problem
        assert reply.text is not None
        return self.parse(reply.text, prompt)


_said_too_long = False


def _say_reply_too_long(length: int, limit: int) -> None:
    """Warns once per process; each such sample is counted by its ``error.type`` with the evaluation errors."""
    global _said_too_long
    if _said_too_long:
        logger.debug("judge reply of %d characters over the %d read; not parsed", length, limit)
        return
    _said_too_long = True
    logger.warning(
        "a judge reply of %d characters is over the %d read (%s); such replies are not parsed, their samples are "
        "%s (said once)",
        length,
        limit,
        env.OTEL_EVAL_JUDGE_MAX_REPLY_CHARS,
        semconv.ERROR_TYPE_JUDGE_REPLY_TOO_LONG,
    )


def prompt_characters(prompt: JudgePrompt) -> int:
    """Characters the judge reads for ``prompt``: its text and its system instruction."""
    return len(prompt.text) + len(prompt.data.system_instruction())


async def _refused(problem: ContextProblem) -> PerInvocationResult:
    return problem.result()


def majority_vote(samples: list[Sample]) -> Sample:
    """ADK's binary vote: more 1.0 than 0.0 samples -> first 1.0, else (ties included) first 0.0; none -> first."""
    positives = [s for s in samples if s.score == 1.0]
    negatives = [s for s in samples if s.score == 0.0]
    if not positives and not negatives:
        return samples[0]
    if len(positives) > len(negatives):
        return positives[0]
    return negatives[0]
