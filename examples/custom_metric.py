"""An ADK custom metric: does the agent's answer use what its tools returned?

Written exactly as for ``adk eval`` (ADK's types in and out), so the same function runs in ADK's own evaluation, in
``otel-eval run`` and in the online workers. Point an eval config at it (see ``custom_metric_config.json``)::

    PYTHONPATH=examples otel-eval run examples/traces/helm.json --config examples/custom_metric_config.json

Per invocation: 1.0 when the final answer repeats a word (4+ characters) or number from the turn's tool results,
0.0 when it repeats none; a turn without tool results is NOT_EVALUATED. Overall: the mean of the scored turns.
"""

from __future__ import annotations

import re
from typing import Any

from google.adk.evaluation.eval_case import ConversationScenario, Invocation, get_all_tool_responses
from google.adk.evaluation.eval_metrics import EvalMetric, EvalStatus
from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult

_WORD = re.compile(r"[\w.-]{4,}|\d+(?:\.\d+)?")


def _words(value: Any) -> set[str]:
    """Every word and number in a tool result (strings, numbers, nested lists and objects)."""
    if isinstance(value, dict):
        return set().union(*(_words(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_words(v) for v in value)) if value else set()
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return {word.lower() for word in _WORD.findall(str(value))}
    return set()


def tool_result_in_answer(
    eval_metric: EvalMetric,
    actual_invocations: list[Invocation],
    expected_invocations: list[Invocation] | None,
    conversation_scenario: ConversationScenario | None,
) -> EvaluationResult:
    """Scores each turn 1.0 if its answer uses a tool result, else 0.0 (see the module docs)."""
    # ADK hands a custom metric its EvalMetric with threshold None: the configured threshold is the criterion's.
    threshold = eval_metric.criterion.threshold if eval_metric.criterion else 0.5
    per_invocation = []
    for invocation in actual_invocations:
        results = _words([r.response for r in get_all_tool_responses(invocation.intermediate_data)])
        answer = (
            " ".join(p.text or "" for p in (invocation.final_response.parts or [])) if invocation.final_response else ""
        )
        if not results:
            per_invocation.append(PerInvocationResult(actual_invocation=invocation))  # NOT_EVALUATED
            continue
        score = 1.0 if results & _words(answer) else 0.0
        status = EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED
        per_invocation.append(PerInvocationResult(actual_invocation=invocation, score=score, eval_status=status))
    scores = [r.score for r in per_invocation if r.score is not None]
    if not scores:
        return EvaluationResult(per_invocation_results=per_invocation)  # NOT_EVALUATED overall
    overall = sum(scores) / len(scores)
    return EvaluationResult(
        overall_score=overall,
        overall_eval_status=EvalStatus.PASSED if overall >= threshold else EvalStatus.FAILED,
        per_invocation_results=per_invocation,
    )
