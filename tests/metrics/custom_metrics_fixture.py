"""ADK custom metric functions for the tests, written as ADK's documentation shows (ADK's types in and out)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from google.adk.evaluation.eval_metrics import EvalStatus
from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult

from otel_eval.metrics import conversation_level

SEEN: dict[str, Any] = {}
"""What the last call saw: its thread, the threshold and criterion it was handed."""


def _status(score: float, threshold: float) -> EvalStatus:
    return EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED


def answer_has_digit(eval_metric: Any, actual_invocations: list[Any], expected_invocations: Any, scenario: Any) -> Any:
    """Synchronous: 1.0 when the final answer contains a digit, else 0.0; overall the mean (CPU-bound work)."""
    SEEN.update(
        thread=threading.current_thread().name, threshold=eval_metric.threshold, criterion=eval_metric.criterion
    )
    threshold = eval_metric.criterion.threshold
    per = []
    for invocation in actual_invocations:
        text = (
            "".join(p.text or "" for p in (invocation.final_response.parts or [])) if invocation.final_response else ""
        )
        score = 1.0 if any(c.isdigit() for c in text) else 0.0
        per.append(
            PerInvocationResult(actual_invocation=invocation, score=score, eval_status=_status(score, threshold))
        )
    overall = sum(p.score for p in per) / len(per) if per else None
    return EvaluationResult(
        overall_score=overall,
        overall_eval_status=_status(overall, threshold) if overall is not None else EvalStatus.NOT_EVALUATED,
        per_invocation_results=per,
    )


async def tool_calls_per_turn(eval_metric: Any, actual_invocations: list[Any], expected: Any, scenario: Any) -> Any:
    """Asynchronous: tool calls of each turn (read from ADK's events or tool_uses); informational."""
    from google.adk.evaluation.eval_case import get_all_tool_calls

    await asyncio.sleep(0)
    per = [
        PerInvocationResult(
            actual_invocation=inv,
            score=float(len(get_all_tool_calls(inv.intermediate_data))),
            eval_status=EvalStatus.INFORMATIONAL,
        )
        for inv in actual_invocations
    ]
    total = sum(p.score for p in per)
    return EvaluationResult(
        overall_score=total, overall_eval_status=EvalStatus.INFORMATIONAL, per_invocation_results=per
    )


def raises(eval_metric: Any, actual: Any, expected: Any, scenario: Any) -> Any:
    raise RuntimeError("the metric broke")


def sleeps(eval_metric: Any, actual: Any, expected: Any, scenario: Any) -> Any:
    time.sleep(2)
    return EvaluationResult()


NAP_SECONDS = 0.0
"""How long :func:`slow_answer_has_digit` sleeps before it scores."""


def slow_answer_has_digit(eval_metric: Any, actual: list[Any], expected: Any, scenario: Any) -> Any:
    """:func:`answer_has_digit` after :data:`NAP_SECONDS` of work (a slow but healthy metric)."""
    time.sleep(NAP_SECONDS)
    return answer_has_digit(eval_metric, actual, expected, scenario)


RELEASE = threading.Event()
"""Set to let every call of :func:`never_returns` return."""


def never_returns(eval_metric: Any, actual: Any, expected: Any, scenario: Any) -> Any:
    """Hangs (as a function stuck on a lock or a socket without a timeout does) until :data:`RELEASE` is set."""
    RELEASE.wait()
    return EvaluationResult()


def returns_a_dict(eval_metric: Any, actual: Any, expected: Any, scenario: Any) -> Any:
    return {"overall_score": 1.0}


def too_few_results(eval_metric: Any, actual: Any, expected: Any, scenario: Any) -> Any:
    return EvaluationResult(overall_score=1.0, overall_eval_status=EvalStatus.PASSED, per_invocation_results=[])


def two_arguments(eval_metric: Any, actual: Any) -> Any:
    return EvaluationResult()


NOT_A_FUNCTION = 3


def declared_tools(eval_metric: Any, actual_invocations: list[Any], expected: Any, scenario: Any) -> Any:
    """Reads the tool declarations as ADK's evaluators do (``tool.function_declarations``): genai objects, not dicts."""
    per = []
    for inv in actual_invocations:
        details = inv.app_details.agent_details.values() if inv.app_details else []
        count = sum(len(tool.function_declarations or []) for d in details for tool in d.tool_declarations)
        per.append(PerInvocationResult(actual_invocation=inv, score=float(count), eval_status=EvalStatus.INFORMATIONAL))
    return EvaluationResult(overall_eval_status=EvalStatus.INFORMATIONAL, per_invocation_results=per)


CONVERSATION_CALLS: list[int] = []
"""The number of turns each call of :func:`turns_in_conversation` was handed."""

TURNS_IN_CONVERSATION_CONFIG = {
    "code_config": {"name": "tests.metrics.custom_metrics_fixture.turns_in_conversation"},
    "metric_info": {
        "metric_name": "turns_in_conversation",
        "metric_value_info": {"interval": {"min_value": 0, "max_value": 100}},
    },
}
"""The ``custom_metrics`` entry of :func:`turns_in_conversation` in an eval config."""


@conversation_level
def turns_in_conversation(eval_metric: Any, actual_invocations: list[Any], expected: Any, scenario: Any) -> Any:
    """Conversation-level: the conversation's number of turns, on its last turn; the earlier turns NOT_EVALUATED
    (the layout of ADK's multi-turn evaluators)."""
    CONVERSATION_CALLS.append(len(actual_invocations))
    count = float(len(actual_invocations))
    per = [
        PerInvocationResult(actual_invocation=inv, eval_status=EvalStatus.NOT_EVALUATED) for inv in actual_invocations
    ]
    per[-1] = PerInvocationResult(actual_invocation=actual_invocations[-1], score=count, eval_status=EvalStatus.PASSED)
    return EvaluationResult(overall_score=count, overall_eval_status=EvalStatus.PASSED, per_invocation_results=per)
