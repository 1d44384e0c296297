"""Judges of whole conversations, laid out as ADK 2.13's multi-turn evaluators lay out their results.

ADK's multi-turn evaluators (``RubricBasedMultiTurnTrajectoryEvaluator``, ``_MultiTurnVertexiAiEvalFacade``) judge a
conversation once: the result sits on its last turn and the first N-1 turns are NOT_EVALUATED. An incomplete turn
anywhere makes the dialogue untrustworthy, so none is judged then; the judge budget admits the judge calls as one
evaluation of every turn (priority when any turn is).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from otel_eval.metrics._llm_judge import INVALID_INPUT, JudgePrompt, SampledJudgeEvaluator
from otel_eval.model import (
    ConversationScenario,
    EvalStatus,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    TracedInvocation,
)


class ConversationJudgeEvaluator(SampledJudgeEvaluator):
    """A sampled judge of whole conversations: subclasses give :meth:`conversation_prompt` (or their own
    :meth:`judge_conversation`), the sample vote and :meth:`aggregate_invocations` over ADK's layout."""

    def build_prompt(self, actual: Invocation, expected: Invocation | None) -> JudgePrompt:
        """Not used: the prompt covers the whole conversation (:meth:`conversation_prompt`)."""
        raise NotImplementedError(f"{self.info.name} judges whole conversations")

    @abc.abstractmethod
    def conversation_prompt(self, conversation: Sequence[TracedInvocation]) -> JudgePrompt:
        """The judge prompt for the whole conversation. Raises ValueError for input the metric cannot judge."""

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """One judged result on the last turn, the first N-1 turns NOT_EVALUATED (ADK's layout)."""
        del conversation_scenario
        if not actual:
            return EvaluationResult()
        unjudgeable = self.unjudgeable(actual, expected)
        if unjudgeable is not None:
            return unjudgeable
        last = await self._judge_last_turn(actual)
        earlier = [PerInvocationResult(score=None, eval_status=EvalStatus.NOT_EVALUATED) for _ in actual[:-1]]
        return self.aggregate_invocations([*earlier, last])

    async def judge_conversation(self, conversation: Sequence[TracedInvocation]) -> PerInvocationResult:
        """The last turn's result: :meth:`conversation_prompt` judged ``num_samples`` times (concurrently, under one
        admission of the judge budget) and voted with :meth:`aggregate_samples`."""
        try:
            prompt = self.conversation_prompt(conversation)
        except ValueError as exc:
            return PerInvocationResult(explanation=f"{self.info.name}: {exc}", error_type=INVALID_INPUT)
        overflow = self.prompt_overflow(prompt)
        if overflow is not None:
            return overflow.result()
        return await self.admitted_judgement(conversation, prompt, self.num_samples(default=self.default_samples()))

    async def _judge_last_turn(self, conversation: Sequence[TracedInvocation]) -> PerInvocationResult:
        for traced in conversation:  # an incomplete turn anywhere makes the dialogue untrustworthy
            problem = self.context_problem(traced)
            if problem is not None:
                return problem.result()
        return await self.judge_conversation(conversation)
