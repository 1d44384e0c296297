"""The judge of ``otel-eval run``: made from the environment with the CLI's overrides, its unservable models named at
start-up, its connections closed on the loop that opened them, its spend summed up at the end, and which judge errors
mean it could not be used at all."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any

import click

from otel_eval.cli._run_stream import RunTally
from otel_eval.evaluation import ConversationReport, judge_problems
from otel_eval.judge.retry import (
    JUDGE_AUTH,
    JUDGE_BAD_REQUEST,
    JUDGE_BAD_RESPONSE,
    JUDGE_CONNECTION,
    JUDGE_NOT_CONFIGURED,
    JUDGE_QUOTA_EXHAUSTED,
    JUDGE_RATE_LIMITED,
    JUDGE_SERVER_ERROR,
    JUDGE_TIMEOUT,
)
from otel_eval.metrics import NO_REFERENCE, SCENARIO_WITHOUT_CONVERSATION, MetricRegistry

if TYPE_CHECKING:
    from otel_eval.judge.client import JudgeClient


async def closing_judge(judge: JudgeClient | None, evaluation: Coroutine[Any, Any, RunTally]) -> RunTally:
    """``evaluation``'s result, the judge's connections closed on the event loop that opened them."""
    try:
        return await evaluation
    finally:
        if judge is not None:
            await judge.aclose()


def make_judge(settings: dict[str, Any]) -> JudgeClient:
    """The judge client from google-genai's environment with the CLI's overrides (None values are ignored)."""
    from otel_eval.judge.client import JudgeClient  # deferred: the judge's HTTP stack is only loaded when used

    return JudgeClient.from_env(**settings)


def warn_unservable_judges(judge: JudgeClient | None, criteria: Mapping[str, Any], registry: MetricRegistry) -> None:
    """Says at start-up which judged metric's judge model cannot be served (its provider has no credentials, its
    extra is missing, ADK resolves it to a class not served here): such a metric is evaluated on no invocation and
    the run exits 3 (``judge_not_configured``) unless ``--allow-not-evaluated``."""
    if judge is None:
        return
    for name, problem in judge_problems(criteria, registry, judge).items():
        click.echo(f"warning: {name}: {problem}", err=True)


def print_judge_summary(judge: JudgeClient | None) -> None:
    """The judge's calls, cache hits, failures and spend on stderr, when it did anything."""
    if judge is None:
        return
    usage = judge.accounting.total()
    if usage.calls or usage.cache_hits or usage.failures or judge.accounting.budget_refusals:
        click.echo(judge.summary_line(), err=True)


JUDGE_UNUSABLE = frozenset(
    {
        JUDGE_NOT_CONFIGURED,
        JUDGE_AUTH,
        JUDGE_QUOTA_EXHAUSTED,
        JUDGE_RATE_LIMITED,
        JUDGE_CONNECTION,
        JUDGE_TIMEOUT,
        JUDGE_SERVER_ERROR,
        JUDGE_BAD_REQUEST,
        JUDGE_BAD_RESPONSE,
    }
)
"""Every judge-side failure: the judge (its configuration, credentials, quota, endpoint, gateway) gave no verdict, as
opposed to content-side outcomes (a reply that does not parse or is too long, suspected prompt injection, an
incomplete context) and budget refusals. A metric these left evaluated on no invocation exits 3: a 400 or a malformed
body on every call (a gateway that does not know the model name) judged nothing, as a 404 or a 401 did not."""


def judge_unusable_metrics(reports: list[ConversationReport]) -> dict[str, str]:
    """Metrics evaluated on no invocation of any conversation, each with the judge error that stopped them."""
    tally = RunTally(JUDGE_UNUSABLE)
    for report in reports:
        tally.add(report)
    return tally.judge_unusable()


def not_evaluated_lines(tally: RunTally) -> list[str]:
    """One ``error:`` line per metric with a threshold that the run evaluated on no invocation because the judge is
    not usable, no conversation had a reference (no ``--eval-set``, or none of its cases paired), or for another of
    :data:`~otel_eval.cli._run_stream.UNCHECKED`'s reasons: exit 3, since a CI gate on such a metric checked nothing."""
    unusable = tally.judge_unusable()
    lines = [
        f"{name} was evaluated on no invocation: the judge is not usable ({why})" for name, why in unusable.items()
    ]
    for name, (error_type, explanation) in tally.unchecked().items():
        if name in unusable:
            continue
        if error_type == NO_REFERENCE and SCENARIO_WITHOUT_CONVERSATION in explanation:
            why = (
                "the conversations paired with conversation_scenario cases, which have no expected conversation to "
                "compare with (ADK does not evaluate them either)"
            )
        elif error_type == NO_REFERENCE:
            why = "no conversation had a reference (no --eval-set, or none of its cases paired: see the pairing rule)"
        else:
            why = explanation.removeprefix(f"{name}: ").rstrip(".") or "it could not run"
        lines.append(f"{name} was evaluated on no invocation: {why}, so its threshold checked nothing ({error_type})")
    return [f"error: {line}; pass --allow-not-evaluated to accept this" for line in lines]
