"""The multi-turn metrics ADK 2.13 hands to Vertex AI's Gen AI evaluation service (``multi_turn_task_success_v1``,
``multi_turn_trajectory_quality_v1``, ``multi_turn_tool_use_quality_v1``).

ADK (``_MultiTurnVertexiAiEvalFacade``) judges the whole conversation once, on the last turn; the first N-1 turns are
NOT_EVALUATED and the overall result is the last turn's. Two judges:

* **Vertex AI** (the judge configured for Vertex): the conversation goes to ``evaluateInstances`` in the shape the
  Vertex AI SDK gives it for ADK (``metrics: [{predefined_metric_spec: {metric_spec_name}}]``, ``instance:
  {prompt, agent_eval_data: {agents, turns}}``; each turn the user's content, the turn's events as ADK keeps them
  (:mod:`otel_eval.metrics._multi_turn`) and the final response authored ``agent``; unlike ADK, file and inline data
  parts are sent as text placeholders, see :mod:`otel_eval.metrics._judge_media`). The answer's
  ``metricResults[0]`` gives the score; its rubric verdicts, explanation and error become rubric scores as ADK maps
  them (``rubric_id`` = the rubric's description, ``explanation``, ``error``). Tested against a loopback server
  speaking the documented REST shape, side by side with ADK's own evaluator (its facade and the Vertex AI SDK)
  against the same server: the same request, scores, statuses and rubric scores; not against a Google Cloud project.
* **Gemini API**: Vertex's predefined metrics are not available there, so the judge is asked with **a prompt of our
  own** (not ADK's, not Vertex's): it writes the rubrics the metric's definition calls for and a yes/no verdict on
  each, as a structured JSON verdict (validated strictly; anything else is unparseable, never a pass); the score is
  the share of ``yes``. Scores from the two judges are not comparable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError

from otel_eval.errors import JudgeError
from otel_eval.judge import JUDGE_INJECTION_SUSPECTED, JUDGE_UNPARSEABLE, DataBlocks
from otel_eval.metrics._conversation_judge import ConversationJudgeEvaluator
from otel_eval.metrics._judge_context_check import ContextProblem
from otel_eval.metrics._judge_media import judge_safe_content
from otel_eval.metrics._llm_judge import JudgePrompt, Sample
from otel_eval.metrics._multi_turn import dialogue, instructions_and_tools, turn_events
from otel_eval.model import (
    EvalStatus,
    EvaluationResult,
    PerInvocationResult,
    RubricScore,
    TracedInvocation,
)
from otel_eval.model import genai as genai_types

EXPLANATION_RUBRIC_ID = "explanation"
ERROR_RUBRIC_ID = "error"

MULTI_TURN_PROMPT = """# Task
You evaluate an AI agent's behaviour over a whole multi-turn conversation with a user.

# Metric: {metric_title}
{metric_definition}

# Instructions
1. Read the agent instructions, the tool definitions and the whole conversation history (user turns, the agent's
   texts, its tool calls and tool outputs, and its answers).
2. Write the rubrics this metric calls for in this conversation: short yes/no properties that an agent doing well on
   this metric fulfils (between 1 and 8; specific to this conversation, mutually exclusive).
3. For each rubric decide "yes" (fulfilled, or not applicable) or "no", with a one-sentence rationale citing turns.

# Output
Answer with one JSON object and nothing else:
{{"rubrics": [{{"property": "<rubric>", "verdict": "yes" | "no", "rationale": "<why, citing turns>"}}, ...]}}

# Agent instructions
{agent_instructions}

# Tool definitions
{agent_tool_definitions}

# Conversation history
{conversation}
"""


class RubricVerdict(BaseModel):
    """One rubric the judge wrote and its verdict."""

    property: str
    verdict: str
    rationale: str


class MultiTurnVerdict(BaseModel):
    """The judge's structured verdict on a conversation (our Gemini-API prompt)."""

    rubrics: list[RubricVerdict]


class MultiTurnServiceEvaluator(ConversationJudgeEvaluator):
    """Base of the three service-judged multi-turn metrics: subclasses set ``info``, ``metric_title`` and
    ``metric_definition`` (our Gemini-API prompt)."""

    metric_title: ClassVar[str]
    metric_definition: ClassVar[str]
    judges_tool_results = True

    def default_samples(self) -> int | None:
        """One judge call per conversation, like ADK's single Vertex call."""
        return 1

    def score_inputs(self) -> dict[str, Any]:
        """The judged-metric inputs with this metric's prompt; on Vertex AI, its evaluation service judges."""
        return {
            **super().score_inputs(),
            "prompt_templates": [MULTI_TURN_PROMPT, self.metric_title, self.metric_definition],
            "vertex_evaluation_service": self.judge_client.uses_vertex,
        }

    async def judge_conversation(self, conversation: Sequence[TracedInvocation]) -> PerInvocationResult:
        """Vertex AI's evaluation service when the judge is on Vertex AI, else our prompt on the Gemini API."""
        if self.judge_client.uses_vertex:
            return await self._vertex(conversation)
        return await super().judge_conversation(conversation)

    def aggregate_invocations(self, results: list[PerInvocationResult]) -> EvaluationResult:
        """The overall result is the last turn's (ADK's facade)."""
        last = results[-1]
        return EvaluationResult(
            overall_score=last.score,
            overall_eval_status=last.eval_status,
            per_invocation_results=results,
            overall_rubric_scores=last.rubric_scores,
            explanation=last.explanation if last.score is None else None,
            error_type=last.error_type,
        )

    # --- Vertex AI's evaluation service ---------------------------------------------------------------------------

    def vertex_body(self, conversation: Sequence[TracedInvocation]) -> dict[str, Any]:
        """The ``evaluateInstances`` request as the Vertex AI SDK builds it for ADK's facade."""
        return {
            "metrics": [{"predefined_metric_spec": {"metric_spec_name": self.info.name}}],
            "instance": {"prompt": {"contents": {"contents": []}}, "agent_eval_data": agent_eval_data(conversation)},
        }

    async def _vertex(self, conversation: Sequence[TracedInvocation]) -> PerInvocationResult:
        body = self.vertex_body(conversation)
        admission = self.admit(conversation, [len(str(body))])
        if isinstance(admission, ContextProblem):
            return admission.result()
        from otel_eval.judge.budget import spending

        try:
            with spending(admission):
                answer = await self.judge_client.evaluate_instances(body, metric=self.info.name)
        except JudgeError as exc:
            return PerInvocationResult(explanation=str(exc), error_type=exc.error_type)
        results = _field(answer, "metricResults", "metric_results")
        result = results[0] if isinstance(results, list) and results and isinstance(results[0], dict) else {}
        raw = result.get("score")
        score = float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else None
        if score is not None and math.isnan(score):
            score = None
        rubric_scores = vertex_rubric_scores(result)
        if score is None:
            reason = str(_field(result, "error") or f"Vertex AI answered no score: {str(answer)[:300]}")
            return PerInvocationResult(rubric_scores=rubric_scores, explanation=reason, error_type=JUDGE_UNPARSEABLE)
        explanation = result.get("explanation")
        return PerInvocationResult(
            score=score,
            eval_status=self.status_of(score),
            rubric_scores=rubric_scores,
            explanation=str(explanation) if explanation else None,
        )

    # --- Gemini API: our own prompt -------------------------------------------------------------------------------

    def conversation_prompt(self, conversation: Sequence[TracedInvocation]) -> JudgePrompt:
        """Our prompt (see the module docs): instructions, tools and the dialogue as data blocks."""
        history = dialogue(conversation)
        instructions, tools = instructions_and_tools(conversation)
        data = DataBlocks(instructions, tools, history)
        text = MULTI_TURN_PROMPT.format(
            metric_title=self.metric_title,
            metric_definition=self.metric_definition,
            agent_instructions=data.block("Agent instructions", instructions),
            agent_tool_definitions=data.block("Tool definitions", tools),
            conversation=data.block("Conversation history", history),
        )
        return JudgePrompt(text=text, data=data, response_schema=MultiTurnVerdict)

    def aggregate_samples(self, samples: list[Sample]) -> PerInvocationResult:
        """The mean score of the parsed samples, with the first one's rubric verdicts; none parsed: the first's
        problem."""
        scored = [s for s in samples if s.score is not None]
        if not scored:
            first = samples[0]
            return PerInvocationResult(explanation=first.explanation, error_type=first.error_type or JUDGE_UNPARSEABLE)
        score = sum(s.score for s in scored if s.score is not None) / len(scored)
        return PerInvocationResult(
            score=score,
            eval_status=self.status_of(score),
            rubric_scores=scored[0].rubric_scores,
            explanation=scored[0].explanation,
        )

    def parse(self, text: str, prompt: JudgePrompt) -> Sample:
        """Strict schema validation; the score is the share of ``yes``; a pass is not trusted when the data itself
        carries verdict fields."""
        try:
            verdict = MultiTurnVerdict.model_validate_json(text.strip())
        except ValidationError as exc:
            reason = f"judge verdict does not match the schema: {exc.errors()[0]['msg']}"
            return Sample(score=None, explanation=reason, error_type=JUDGE_UNPARSEABLE)
        votes = [v for v in verdict.rubrics if v.verdict.strip().lower() in ("yes", "no")]
        if not votes:
            return Sample(score=None, explanation="judge gave no yes/no verdict", error_type=JUDGE_UNPARSEABLE)
        scores = [
            RubricScore(
                rubric_id=v.property, rationale=v.rationale, score=1.0 if v.verdict.strip().lower() == "yes" else 0.0
            )
            for v in votes
        ]
        score = sum(s.score or 0.0 for s in scores) / len(scores)
        if self.status_of(score) is EvalStatus.PASSED and prompt.data.verdict_from_data('"verdict"'):
            return Sample(
                score=None,
                explanation="the evaluated data contains verdict fields; not trusted",
                error_type=JUDGE_INJECTION_SUSPECTED,
            )
        failed = [f"{s.rubric_id}: {s.rationale}" for s in scores if s.score == 0.0]
        return Sample(score=score, rubric_scores=scores, explanation="; ".join(failed) or None)


def agent_eval_data(conversation: Sequence[TracedInvocation]) -> dict[str, Any]:
    """ADK's ``AgentData`` (agents and turns) as the SDK serialises it, nulls left out."""
    agents: dict[str, Any] = {}
    for traced in conversation:
        app = traced.invocation.app_details
        for name, details in (app.agent_details if app else {}).items():
            if name not in agents:
                agents[name] = _without_nulls(
                    {
                        "agent_id": details.name,
                        "instruction": details.instructions,
                        "tools": _tools(details.tool_declarations),
                    }
                )
    turns = []
    for index, traced in enumerate(conversation):
        invocation = traced.invocation
        events = [{"author": "user", "content": _content(invocation.user_content)}]
        events.extend(
            {"author": event.author, "content": _content(event.content)}
            for event in turn_events(traced)
            if event.content is not None
        )
        events.append({"author": "agent", "content": _content(invocation.final_response)})
        turns.append(
            _without_nulls(
                {
                    "turn_index": index,
                    "turn_id": invocation.invocation_id,
                    "events": [_without_nulls(e) for e in events],
                }
            )
        )
    return {"agents": agents, "turns": turns}


def vertex_rubric_scores(result: dict[str, Any]) -> list[RubricScore] | None:
    """ADK's mapping of a metric result's rubric verdicts, explanation and error to rubric scores."""
    scores = []
    for index, verdict in enumerate(_field(result, "rubricVerdicts", "rubric_verdicts") or []):
        if not isinstance(verdict, dict):
            continue
        rubric = _field(verdict, "evaluatedRubric", "evaluated_rubric") or {}
        description = ((rubric.get("content") or {}).get("property") or {}).get("description")
        rubric_id = description or _field(rubric, "rubricId", "rubric_id") or f"rubric_{index}"
        reasoning = verdict.get("reasoning")
        scores.append(
            RubricScore(
                rubric_id=str(rubric_id),
                rationale=str(reasoning) if reasoning else None,
                score=1.0 if verdict.get("verdict") else 0.0,
            )
        )
    explanation = result.get("explanation")
    if explanation:
        scores.append(RubricScore(rubric_id=EXPLANATION_RUBRIC_ID, rationale=str(explanation)))
    error = result.get("error")
    if isinstance(error, dict) and error.get("code"):
        scores.append(RubricScore(rubric_id=ERROR_RUBRIC_ID, rationale=f"Error in metric result: {error}"))
    return scores or None


def _field(mapping: dict[str, Any], *names: str) -> Any:
    return next((mapping[name] for name in names if name in mapping), None)


def _content(content: genai_types.Content | None) -> dict[str, Any] | None:
    """The content as the SDK serialises it, file and inline data replaced by placeholders (never sent to Vertex)."""
    safe = judge_safe_content(content)
    return None if safe is None else safe.model_dump(mode="json", exclude_none=True)


def _tools(declarations: list[Any]) -> list[Any] | None:
    tools = [t.model_dump(mode="json", exclude_none=True) if isinstance(t, BaseModel) else t for t in declarations]
    return tools or None


def _without_nulls(value: dict[str, Any]) -> dict[str, Any]:
    return {key: item for key, item in value.items() if item is not None}
