"""``per_turn_user_simulator_quality_v1``: does a simulated user follow its conversation scenario (ADK 2.13)?

Turn 1 scores 1 when the user text equals ``starting_prompt`` (both stripped), without a judge. Later turns are
judged against the conversation plan and history (``num_samples``, majority vote, tie -> invalid). A final judged
check feeds the stop signal as the next user turn; if it fails it replaces the last turn's result. Overall = sum of
the scores of PASSED turns / number of turns. A judge call that finally fails makes the overall result
NOT_EVALUATED (ADK's evaluator raises there).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

from otel_eval.errors import JudgeError
from otel_eval.judge import JUDGE_INJECTION_SUSPECTED, JUDGE_UNPARSEABLE, DataBlocks
from otel_eval.judge.budget import spending
from otel_eval.judge.retry import CONTEXT_OVERFLOW
from otel_eval.metrics._judge_context import content_text
from otel_eval.metrics._judge_context_check import ContextProblem
from otel_eval.metrics._judge_labels import USER_SIMULATOR_VERDICT_KEYS, Label, label_score, parse_is_valid
from otel_eval.metrics._judge_prompts_user_simulator import (
    USER_SIMULATOR_PERSONA_PROMPT_TEMPLATE,
    USER_SIMULATOR_PROMPT_TEMPLATE,
)
from otel_eval.metrics._llm_judge import (
    INVALID_INPUT,
    JudgePrompt,
    LlmJudgeEvaluator,
    Sample,
    majority_vote,
    prompt_characters,
)
from otel_eval.metrics._reference import NO_REFERENCE
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import (
    ConversationScenario,
    EvalStatus,
    EvaluationResult,
    Invocation,
    LlmBackedUserSimulatorCriterion,
    PerInvocationResult,
    TracedInvocation,
)
from otel_eval.model import genai as genai_types
from otel_eval.model.eval_case import UserPersona

_VARIABLE = re.compile(r"\{\{\s*([\w.]+)\s*\}\}")
_FOR_BEHAVIORS = "{% for b in persona.behaviors %}"
_END_FOR = "{% endfor %}"


def _substitute(template: str, values: dict[str, str]) -> str:
    return _VARIABLE.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def render_prompt(
    *,
    conversation_plan: str,
    conversation_history: str,
    generated_user_response: str,
    stop_signal: str,
    persona: UserPersona | None,
) -> str:
    """ADK's Jinja template rendered without Jinja (variables, and the persona's behaviour loop)."""
    values = {
        "conversation_plan": conversation_plan,
        "conversation_history": conversation_history,
        "generated_user_response": generated_user_response,
        "stop_signal": stop_signal,
    }
    if persona is None:
        return _substitute(USER_SIMULATOR_PROMPT_TEMPLATE, values)
    head, rest = USER_SIMULATOR_PERSONA_PROMPT_TEMPLATE.split(_FOR_BEHAVIORS, 1)
    body, tail = rest.split(_END_FOR, 1)
    rendered = []
    for behavior in persona.behaviors:
        rubrics = "\n".join(f"  * {v}" for v in behavior.violation_rubrics)
        item = body.replace("{{ b.name | render_string_filter}}", _substitute(behavior.name, values))
        item = item.replace("{{ b.description | render_string_filter}}", _substitute(behavior.description, values))
        item = item.replace("{{ b.get_violation_rubrics_str() | render_string_filter}}", _substitute(rubrics, values))
        rendered.append(item)
    values["persona.description"] = persona.description
    return _substitute(head, values) + "".join(rendered) + _substitute(tail, values)


def conversation_history(invocations: Sequence[Invocation]) -> str:
    """``user: ...`` / ``<role>: ...`` lines of the earlier turns, as ADK formats them."""
    lines = []
    for invocation in invocations:
        if invocation.user_content is not None and invocation.user_content.parts:
            lines.append(f"user: {content_text(invocation.user_content)}")
        if invocation.final_response is not None:
            lines.append(f"{invocation.final_response.role}: {content_text(invocation.final_response)}")
    return "\n\n".join(lines)


def _call_failed(result: PerInvocationResult) -> bool:
    """A judge call that finally failed, or was not made because the prompt would overflow the judge's window."""
    error = result.error_type or ""
    return result.details is None and (error.startswith("judge_") or error == CONTEXT_OVERFLOW)


def _resolve_persona(persona: UserPersona | str | None) -> UserPersona | None:
    if persona is None or isinstance(persona, UserPersona):
        return persona
    try:
        from google.adk.evaluation.simulation.pre_built_personas import get_default_persona_registry
    except ImportError:
        raise ValueError(f"prebuilt persona {persona!r} needs google-adk installed to resolve") from None
    resolved: Any = get_default_persona_registry().get_persona(persona)
    return UserPersona.model_validate(resolved.model_dump())


class PerTurnUserSimulatorQualityV1(LlmJudgeEvaluator):
    """Per-turn fidelity of a simulated user to its scenario."""

    info = MetricInfo(
        name="per_turn_user_simulator_quality_v1",
        description=(
            "LLM judge: share of simulated-user turns that follow the scenario's plan and stop signal (its reference is"
            " the eval case's conversation scenario)."
        ),
        criterion_type=LlmBackedUserSimulatorCriterion,
        requires_reference=True,
        requires_judge=True,
        conversation_level=True,
        version="1",
        default_threshold=0.8,
    )
    prompt_templates = (USER_SIMULATOR_PROMPT_TEMPLATE, USER_SIMULATOR_PERSONA_PROMPT_TEMPLATE)

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """Scores every turn of the simulated conversation; see the module docs."""
        count = len(actual)
        if conversation_scenario is None:
            return self.not_evaluated(
                "per_turn_user_simulator_quality_v1 needs an eval case with a conversation_scenario",
                count=count,
                error_type=NO_REFERENCE,
            )
        if not actual:
            return self.not_evaluated("no invocations to evaluate", error_type=INVALID_INPUT)
        unavailable = self.judge_unavailable(count)
        if unavailable is not None:
            return unavailable
        try:
            persona = _resolve_persona(conversation_scenario.user_persona)
        except (ValueError, KeyError) as exc:
            return self.not_evaluated(str(exc), count=count, error_type=INVALID_INPUT)
        invocations = [t.invocation for t in actual]
        stop_signal = self._stop_signal
        stop_turn = Invocation(
            invocation_id="stop_signal_proxy_invocation",
            user_content=genai_types.Content(parts=[genai_types.Part(text=stop_signal)]),
        )
        judged = [(invocations[i], invocations[:i]) for i in range(1, len(invocations))]
        judged.append((stop_turn, invocations))
        prompts = [self._turn_prompt(turn, history, conversation_scenario, persona) for turn, history in judged]
        # The budget admits the whole conversation (every turn's samples) or none of it: the score needs all turns.
        samples = self.num_samples()
        admission = self.admit(actual, [prompt_characters(p) for p in prompts for _ in range(samples)])
        if isinstance(admission, ContextProblem):
            return self.not_evaluated(admission.reason, count=count, error_type=admission.error_type)
        with spending(admission):
            outcomes = await asyncio.gather(*(self._judge_turn(prompt) for prompt in prompts))
        results = [self._first_turn(invocations[0], conversation_scenario), *outcomes[:-1]]
        stop_result = outcomes[-1]
        if stop_result.eval_status is EvalStatus.FAILED:
            results[-1] = stop_result
        failed_call = next((r for r in outcomes if _call_failed(r)), None)
        if failed_call is not None:
            return EvaluationResult(
                overall_eval_status=EvalStatus.NOT_EVALUATED,
                per_invocation_results=results,
                explanation=failed_call.explanation,
                error_type=failed_call.error_type,
            )
        valid = sum(r.score or 0.0 for r in results if r.eval_status is EvalStatus.PASSED and r.score is not None)
        overall = valid / len(results)
        return EvaluationResult(
            overall_score=overall, overall_eval_status=self.status_of(overall), per_invocation_results=results
        )

    @property
    def _stop_signal(self) -> str:
        criterion = self.criterion
        return criterion.stop_signal if isinstance(criterion, LlmBackedUserSimulatorCriterion) else "</finished>"

    def _first_turn(self, invocation: Invocation, scenario: ConversationScenario) -> PerInvocationResult:
        user_text = content_text(invocation.user_content)
        if user_text is None:
            return PerInvocationResult(explanation="the first turn has no user text")
        score = float(user_text.strip() == scenario.starting_prompt.strip())
        explanation = None if score else "the first user turn is not the scenario's starting_prompt"
        return PerInvocationResult(score=score, eval_status=self.status_of(score), explanation=explanation)

    def _turn_prompt(
        self,
        turn: Invocation,
        history: Sequence[Invocation],
        scenario: ConversationScenario,
        persona: UserPersona | None,
    ) -> JudgePrompt:
        history_text = conversation_history(history)
        generated = content_text(turn.user_content) or ""
        data = DataBlocks(history_text, generated)
        text = render_prompt(
            conversation_plan=scenario.conversation_plan,
            conversation_history=data.block("Conversation history", history_text),
            generated_user_response=data.block("Generated user response", generated),
            stop_signal=self._stop_signal,
            persona=persona,
        )
        return JudgePrompt(text=text, data=data)

    async def _judge_turn(self, prompt: JudgePrompt) -> PerInvocationResult:
        try:
            samples = await asyncio.gather(*(self._sample(prompt, i) for i in range(self.num_samples())))
        except JudgeError as exc:
            return PerInvocationResult(explanation=str(exc), error_type=exc.error_type)
        chosen = majority_vote(list(samples))
        return PerInvocationResult(
            score=chosen.score,
            eval_status=self.status_of(chosen.score),
            explanation=chosen.explanation,
            error_type=chosen.error_type if chosen.score is None else None,
            details={"votes": [s.score for s in samples]},
        )

    async def _sample(self, prompt: JudgePrompt, index: int) -> Sample:
        reply = await self.ask(prompt, sample=index)
        problem = self.reply_problem(reply, prompt)
        if problem is not None or reply.text is None:
            return problem or Sample(score=None, error_type=JUDGE_UNPARSEABLE)
        label = parse_is_valid(reply.text)
        if label is Label.NOT_FOUND:
            return Sample(score=None, explanation="judge verdict not found", error_type=JUDGE_UNPARSEABLE)
        if label is Label.VALID and any(prompt.data.verdict_from_data(k) for k in USER_SIMULATOR_VERDICT_KEYS):
            return Sample(
                score=None,
                explanation="the evaluated data contains the verdict field; a valid verdict is not trusted",
                error_type=JUDGE_INJECTION_SUSPECTED,
            )
        return Sample(score=label_score(label), explanation=None)
