"""How ``otel-eval run`` shows a conversation's results: a JSON element (``--output json`` and the results files'
summaries) and a table with the reasons of what failed or was not evaluated."""

from __future__ import annotations

import json
from typing import Any

from otel_eval.cli._common import stdout, truncate
from otel_eval.evaluation import ConversationReport, MetricOutcome
from otel_eval.model import EvalStatus


def report_json(report: ConversationReport) -> dict[str, Any]:
    """One conversation's results in the ``--output json`` shape."""
    conversation = report.conversation
    return {
        "trace_ids": conversation.trace_ids,
        "session_id": conversation.session_id,
        "eval_id": conversation.eval_case.eval_id if conversation.eval_case else None,
        "status": report.status._name_,
        "metrics": [outcome_json(outcome) for outcome in report.outcomes],
    }


def outcome_json(outcome: MetricOutcome) -> dict[str, Any]:
    """One metric's result in the ``--output json`` shape."""
    result = outcome.result
    entries = result.per_invocation_results
    return {
        "metric_name": outcome.metric.name,
        "score": result.overall_score,
        "eval_status": result.overall_eval_status._name_,  # .name without Enum's Python-level property
        "threshold": outcome.threshold,
        "per_invocation_scores": [entry.score for entry in entries],
        "per_invocation_statuses": [entry.eval_status._name_ for entry in entries],
        "explanation": result.explanation,
        "error_type": result.error_type,
        "per_invocation_explanations": [entry.explanation for entry in entries],
        "evaluator": _provenance_json(outcome),
    }


def _provenance_json(outcome: MetricOutcome) -> dict[str, Any] | None:
    """``otel_eval.evaluator.{id,type,version}`` and the judge model, as on emitted results (None: no evaluator)."""
    evaluator = outcome.metric.evaluator
    if evaluator is None:
        return None
    provenance = evaluator.provenance
    return {
        "id": provenance.id,
        "type": provenance.type,
        "version": provenance.version,
        "judge_model": provenance.judge_model,
    }


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.4g}"


_STATUS_STYLE = {
    EvalStatus.PASSED: "green",
    EvalStatus.FAILED: "bold red",
    EvalStatus.NOT_EVALUATED: "yellow",
    EvalStatus.INFORMATIONAL: "dim",
}


def print_report(report: ConversationReport) -> None:
    """A readable table for one conversation, with the reasons of failures and skipped metrics under it."""
    from rich.table import Table  # deferred: rich is only loaded when a table is printed

    conversation = report.conversation
    who = f"session {conversation.session_id}" if conversation.session_id else f"trace {conversation.trace_ids[0]}"
    case = f", eval case {conversation.eval_case.eval_id}" if conversation.eval_case else ""
    status, label = report.status, report.status.name
    if report.outcomes and all(o.result.overall_eval_status is EvalStatus.INFORMATIONAL for o in report.outcomes):
        # ADK's case rule says NOT_EVALUATED (nothing passed or failed); here every metric did run, with no threshold.
        status, label = EvalStatus.INFORMATIONAL, "INFORMATIONAL (no metric with a threshold)"
    style = _STATUS_STYLE[status]
    table = Table(
        "metric",
        "score",
        "status",
        "threshold",
        "per invocation",
        title=f"{who}{case}: [{style}]{label}[/]",
    )
    for outcome in report.outcomes:
        result = outcome.result
        status = result.overall_eval_status
        table.add_row(
            outcome.metric.name,
            _score(result.overall_score),
            f"[{_STATUS_STYLE[status]}]{status.name}[/]",
            _score(outcome.threshold),
            " ".join(_score(entry.score) for entry in result.per_invocation_results),
        )
    stdout().print(table)
    for outcome in report.outcomes:
        _print_reasons(outcome)


def _print_reasons(outcome: MetricOutcome) -> None:
    result = outcome.result
    if result.overall_eval_status not in (EvalStatus.FAILED, EvalStatus.NOT_EVALUATED):
        return
    name = outcome.metric.name
    if result.overall_eval_status is EvalStatus.NOT_EVALUATED and result.explanation:
        stdout().print(f"  [yellow]{name}[/]: not evaluated: {truncate(result.explanation, 160)}")
        return
    for index, entry in enumerate(result.per_invocation_results, start=1):
        if entry.eval_status is not EvalStatus.FAILED:
            continue
        if entry.explanation:
            stdout().print(f"  [red]{name}[/] invocation {index}: {truncate(entry.explanation, 500)}")
        details = entry.details or {}
        if "expected" in details or "actual" in details:
            stdout().print(f"      expected: {_calls(details.get('expected'))}")
            stdout().print(f"      actual:   {_calls(details.get('actual'))}")


def _calls(calls: Any) -> str:
    """The ``FunctionCall`` list a tool metric puts in ``details["expected"]`` / ``details["actual"]``, on one line."""
    if not calls:
        return "(no tool calls)"
    return ", ".join(f"{call.name}({json.dumps(call.args or {}, ensure_ascii=False, default=str)})" for call in calls)
