"""Writing ADK-format ``.evalset_result.json`` files for ``otel-eval run --results-dir``."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path

from otel_eval.evaluation import ConversationReport, MetricOutcome
from otel_eval.model import (
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalMetricResultPerInvocation,
    EvalSetResult,
    EvaluationResult,
    PerInvocationResult,
)
from otel_eval.model.utf8_json import json_bytes

ADK_USER_ID = "test_user_id"
"""The user id ADK's ``LocalEvalService`` runs and records an eval case under when its ``session_input`` names none."""


def _metric_result(outcome: MetricOutcome, score: float | None, status: object, source: object) -> EvalMetricResult:
    evaluator = outcome.metric.evaluator
    criterion = evaluator.criterion if evaluator is not None else None
    if criterion is not None and outcome.metric.given is not None:
        criterion = outcome.metric.given  # as ADK writes it: the config's criterion as written
    details = EvalMetricResultDetails(
        rubric_scores=getattr(source, "rubric_scores", None) or getattr(source, "overall_rubric_scores", None),
        token_usage_details=getattr(source, "token_usage_details", None),
        duration_details=getattr(source, "duration_details", None),
    )
    return EvalMetricResult.model_validate(
        {
            "metric_name": outcome.metric.name,
            "threshold": outcome.threshold,
            "criterion": criterion,
            "score": score,
            "eval_status": status,
            "details": details,
        }
    )


def case_result(report: ConversationReport, eval_set_id: str) -> EvalCaseResult:
    """ADK's ``EvalCaseResult`` for one conversation."""
    conversation = report.conversation
    expected = conversation.expected or []
    per_invocation = []
    for index, traced in enumerate(conversation.invocations):
        results = []
        for outcome in report.outcomes:
            entries: list[PerInvocationResult] = outcome.result.per_invocation_results
            entry = entries[index] if index < len(entries) else PerInvocationResult()
            results.append(_metric_result(outcome, entry.score, entry.eval_status, entry))
        per_invocation.append(
            EvalMetricResultPerInvocation(
                actual_invocation=traced.invocation,
                expected_invocation=expected[index] if index < len(expected) else None,
                eval_metric_results=results,
            )
        )
    overall = [_overall(outcome, outcome.result) for outcome in report.outcomes]
    case = conversation.eval_case
    session = case.session_input if case is not None else None
    return EvalCaseResult(
        eval_set_file=eval_set_id,
        eval_set_id=eval_set_id,
        eval_id=conversation.eval_case.eval_id if conversation.eval_case else "",
        final_eval_status=report.status,
        overall_eval_metric_results=overall,
        eval_metric_result_per_invocation=per_invocation,
        session_id=conversation.session_id or conversation.trace_ids[0],
        user_id=session.user_id if session is not None and session.user_id else ADK_USER_ID,
    )


def _overall(outcome: MetricOutcome, result: EvaluationResult) -> EvalMetricResult:
    return _metric_result(outcome, result.overall_score, result.overall_eval_status, result)


def write_results(directory: Path, reports: Sequence[ConversationReport], *, app_name: str, eval_set_id: str) -> Path:
    """Writes ``<app>_<eval_set_id>_<unix time>.evalset_result.json`` (ADK's naming) and returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    result_id = f"{app_name}_{eval_set_id}_{time.time()}"
    result = EvalSetResult(
        eval_set_result_id=result_id,
        eval_set_result_name=result_id,
        eval_set_id=eval_set_id,
        eval_case_results=[case_result(report, eval_set_id) for report in reports],
        creation_timestamp=time.time(),
    )
    path = directory / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', result_id)}.evalset_result.json"
    path.write_bytes(json_bytes(result, indent=2))
    return path
