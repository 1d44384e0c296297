"""``otel-eval run``: evaluate recorded traces, optionally against an ADK eval set."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from otel_eval import environment_variables as env
from otel_eval._runtime.collector import fewer_collections
from otel_eval._runtime.unknown_variables import unknown_variable_lines
from otel_eval.cli import _backfill
from otel_eval.cli._backfill import EXIT_BACKEND, BackfillOptions, backfill_options
from otel_eval.cli._common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_NOT_EVALUATED,
    fail,
    once,
    print_json,
    report_problems,
    stderr,
    writable_directory,
    writing,
)
from otel_eval.cli._run_inputs import (
    ADK_CONFIG_FILE_NAME,
    apply_judge_model,
    check_eval_id,
    load_inputs,
    metric_error_source,
    warn_shadowed_cases,
    warn_thresholds,
    warn_unpaired_cases,
)
from otel_eval.cli._run_judge import (
    JUDGE_UNUSABLE,
    closing_judge,
    make_judge,
    not_evaluated_lines,
    print_judge_summary,
    warn_unservable_judges,
)
from otel_eval.cli._run_judge import judge_unusable_metrics as judge_unusable_metrics  # re-exported
from otel_eval.cli._run_report import print_report, report_json
from otel_eval.cli._run_stream import JsonResults, ResultsFile, RunTally, spool_file, stream_reports
from otel_eval.cli._spill import StreamedTraces, spill_file, stream_traces
from otel_eval.conversations import Conversation
from otel_eval.errors import ConfigurationError
from otel_eval.evaluation import (
    ConversationReport,
    MetricPlan,
    build_plan,
    criteria_from,
    pair_conversations,
    registry_with_custom_metrics,
    select_criteria,
)
from otel_eval.judge.budget import BudgetSpec
from otel_eval.judge.settings import DEFAULT_MAX_CONCURRENCY
from otel_eval.metrics import default_registry
from otel_eval.model import EvalSet
from otel_eval.reconstruct import Reads

PROGRESS_MIN_CONVERSATIONS = 20


@click.command()
@click.argument("trace_files", nargs=-1, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--eval-set",
    "eval_set_path",
    type=click.Path(path_type=Path, dir_okay=False),
    multiple=True,
    callback=once("it takes one eval set: run otel-eval once per eval set"),
    help="ADK eval set.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    multiple=True,
    callback=once("it takes one eval config"),
    help=f"ADK eval config (default: {ADK_CONFIG_FILE_NAME} beside the eval set, if there is one, as in ADK).",
)
@click.option(
    "-m",
    "--metric",
    "metrics",
    multiple=True,
    help="Metric to run (repeatable); see list-metrics. Default: the config's criteria; else with --eval-set ADK's "
    "defaults, without one the reference-free metrics (judged ones only with judge credentials).",
)
@click.option(
    "--match-type",
    type=click.Choice(["EXACT", "IN_ORDER", "ANY_ORDER"], case_sensitive=False),
    help="Match type of tool_trajectory_avg_score, over the criterion's (default: the criterion's, else EXACT).",
)
@click.option(
    "--eval-id",
    multiple=True,
    callback=once("it takes one eval case"),
    help="Pair every conversation with this case of --eval-set.",
)
@click.option(
    "--output",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="A table per conversation, or one JSON document with every result and its evaluator.",
)
@click.option("--results-dir", type=click.Path(path_type=Path, file_okay=False), help="Write ADK .evalset_result.json.")
@click.option("--judge-model", help="Judge model for every judged metric (default gemini-2.5-flash).")
@click.option(
    "--num-samples",
    type=click.IntRange(min=1),
    help="Judge samples per invocation, for every judged metric (default: each criterion's, else the metric's).",
)
@click.option(
    "--max-concurrency",
    type=click.IntRange(min=1),
    help=f"Judge calls at once (overrides {env.OTEL_EVAL_JUDGE_MAX_CONCURRENCY}; default: that variable, else "
    f"{DEFAULT_MAX_CONCURRENCY}).",
)
@click.option(
    "--budget",
    help="Judge spend limit, USD per hour: '2.5' for all judged metrics, or per metric "
    "'hallucinations_v1=1.0,safety_v1=0.5,*=2' (overrides OTEL_EVAL_JUDGE_BUDGET).",
)
@click.option(
    "--allow-not-evaluated",
    is_flag=True,
    help=f"Exit 0 instead of {EXIT_NOT_EVALUATED} when a metric with a threshold was evaluated on no invocation: the "
    "judge not usable (no credentials, rejected key, exhausted quota, unreachable, every request rejected), no "
    "reference (no --eval-set, or no case paired), a metric that could not run as configured (no rubrics, a custom "
    "metric that raised).",
)
@click.option("--verbose", "-v", is_flag=True, help="Print every warning met while reading and rebuilding.")
@backfill_options
def run(
    trace_files: tuple[Path, ...],
    eval_set_path: Path | None,
    config_path: Path | None,
    metrics: tuple[str, ...],
    match_type: str | None,
    eval_id: str | None,
    output: str,
    results_dir: Path | None,
    judge_model: str | None,
    num_samples: int | None,
    max_concurrency: int | None,
    budget: str | None,
    allow_not_evaluated: bool,
    verbose: bool,
    backfill: BackfillOptions,
) -> None:
    """Evaluate the agent invocations recorded in TRACE_FILES, or stored in a backend (--from).

    Exit code 0 when nothing failed, 1 when a metric FAILED, 2 on bad input, 3 when a metric with a threshold was
    evaluated on no invocation, so its threshold checked nothing: the judge not usable, no reference, a metric that
    could not run as configured (unless --allow-not-evaluated), 4 when a backend failed the run (traces it could not
    give, scores a sink did not deliver). Eval sets and configs among TRACE_FILES are skipped
    with a warning.
    """
    if bool(trace_files) == (backfill.source is not None):
        fail("give TRACE_FILES or --from BACKEND (one of them)")
    for line in unknown_variable_lines(os.environ).values():  # a misspelt setting is said, not ignored
        click.echo(f"warning: {line}", err=True)
    eval_set, config, config_path = load_inputs(eval_set_path, config_path, metrics)
    check_eval_id(eval_id, eval_set, eval_set_path)
    warn_shadowed_cases(eval_set, eval_set_path, eval_id)
    config = apply_judge_model(config, judge_model)
    judge_settings: dict[str, Any] = {
        "default_model": judge_model,
        "num_samples": num_samples,
        "max_concurrency": max_concurrency,
    }
    # Only the default metric choice depends on whether a judge is configured; otherwise build one only if needed.
    probe = not metrics and config is None and eval_set is None
    try:
        # The config's own custom metrics (and installed ones): their code is imported here, at start-up.
        registry = registry_with_custom_metrics(config, default_registry())
        judge_settings["budget"] = BudgetSpec.parse(budget, source="--budget") if budget is not None else None
        judge = make_judge(judge_settings) if probe else None
        # A config file's criteria, even empty ones, as ADK runs them; with no config file at all, an eval set means
        # ADK's defaults (as ADK's AgentEvaluator), and judged defaults only without one.
        criteria = select_criteria(
            criteria_from(config),
            metric_names=metrics,
            with_reference=eval_set is not None,
            with_judge=eval_set is None and judge is not None and judge.configured,
            registry=registry,
        )
        warn_thresholds(criteria, config, config_path, registry)
        if judge is None and any(registry.info(name).requires_judge for name in criteria):
            judge = make_judge(judge_settings)
        plan = build_plan(
            criteria, registry=registry, match_type=match_type.upper() if match_type else None, judge=judge
        )
        # --budget, else OTEL_EVAL_JUDGE_BUDGET (read by the judge), against the metrics this run knows
        spec = judge.settings.budget if judge is not None else judge_settings["budget"]
        if spec is not None:
            spec.check_metrics(registry)
        written = _backfill.outputs(backfill, eval_set)
    except ConfigurationError as exc:
        fail(metric_error_source(str(exc), metrics, config, config_path))
    if results_dir is not None and not backfill.dry_run:
        writable_directory(results_dir)  # before the scoring (and judge spend) whose results go there
    warn_unservable_judges(judge, criteria, registry)
    with spill_file() as spill, fewer_collections():
        reads = _reads(plan, eval_set, results_dir)
        streamed = (
            _backfill.read_backend(backfill, spill, reads)
            if backfill.source
            else stream_traces(trace_files, spill, reads=reads)
        )
        report_problems(streamed.loaded.errors, streamed.loaded.warnings, verbose=verbose)
        if streamed.loaded.errors and not backfill.source and not backfill.dry_run:
            fail(f"{len(streamed.loaded.errors)} trace file(s) could not be read; nothing was scored")
        if backfill.dry_run:
            _backfill.dry_run(streamed, plan)
            return
        tally = asyncio.run(
            closing_judge(
                judge,
                _evaluate_streamed(
                    streamed,
                    eval_set,
                    eval_id,
                    plan,
                    json_output=output == "json",
                    results_dir=results_dir,
                    on_report=written.add if written else None,
                ),
            )
        )
    print_judge_summary(judge)
    warn_unpaired_cases(eval_set, eval_set_path, eval_id, tally.cases)
    if written and _backfill.finish_outputs(written):
        raise SystemExit(EXIT_BACKEND)
    if streamed.loaded.errors or not tally.count:
        raise SystemExit(EXIT_BAD_INPUT)
    if tally.failed:
        raise SystemExit(EXIT_FAILED)
    unchecked = not_evaluated_lines(tally)
    if unchecked and not allow_not_evaluated:
        for line in unchecked:
            click.echo(line, err=True)
        raise SystemExit(EXIT_NOT_EVALUATED)


async def _evaluate_streamed(
    streamed: StreamedTraces,
    eval_set: EvalSet | None,
    eval_id: str | None,
    plan: MetricPlan,
    *,
    json_output: bool,
    results_dir: Path | None,
    on_report: Callable[[ConversationReport], None] | None = None,
) -> RunTally:
    """Pairs and scores the conversations a window at a time, writing each result out as it comes."""
    tally = RunTally(JUDGE_UNUSABLE)
    for trace_id, convention in streamed.empty:  # an error when nothing else is scored (exit 2)
        level, scored = ("warning", "; not scored") if streamed.count else ("error", "")
        click.echo(f"{level}: trace {trace_id}: no agent invocation found ({convention} convention){scored}", err=True)
    if not streamed.count:
        if not streamed.loaded.errors and not streamed.empty:
            click.echo(
                "error: the files hold no spans (an OTLP log file is read beside the trace files whose spans it "
                "completes, not alone)",
                err=True,
            )
        if json_output:
            print_json({"results": []})
        return tally
    json_results = JsonResults() if json_output else None
    with contextlib.ExitStack() as stack:
        results_file = None
        if results_dir is not None:
            eval_set_id = eval_set.eval_set_id if eval_set else "traces"
            results_file = ResultsFile(results_dir, eval_set_id, stack.enter_context(spool_file()))
        tick = None
        if streamed.count >= PROGRESS_MIN_CONVERSATIONS and stderr().is_terminal:
            from rich.progress import Progress  # deferred: rich is only loaded when a progress bar is shown

            progress = stack.enter_context(Progress(console=stderr(), transient=True))
            task = progress.add_task("evaluating", total=streamed.count)
            tick = functools.partial(progress.advance, task)
        async for report in stream_reports(_paired(streamed.conversations, eval_set, eval_id), plan, progress=tick):
            tally.add(report)
            if on_report is not None:
                on_report(report)
            if json_results is not None:
                json_results.add(report_json(report))
            else:
                print_report(report)
            if results_file is not None:
                results_file.add(report)
        if json_results is not None:
            json_results.close()
        if results_file is not None and results_dir is not None:
            with writing(results_dir):
                path = results_file.close()
            if path is not None:
                click.echo(f"wrote {path}", err=True)
    return tally


def _reads(plan: MetricPlan, eval_set: EvalSet | None, results_dir: Path | None) -> Reads:
    """What the run rebuilds (:mod:`otel_eval.reconstruct.reads`): what its metrics read, the user message that pairing
    with an eval set reads, everything for result files (they hold ADK's whole invocations)."""
    if results_dir is not None:
        return Reads.ALL
    return plan.reads | (Reads.USER_CONTENT if eval_set is not None else Reads.NONE)


def _paired(
    conversations: Iterator[Conversation], eval_set: EvalSet | None, eval_id: str | None
) -> Iterator[Conversation]:
    for conversation in conversations:
        pair_conversations([conversation], eval_set, eval_id)
        if eval_set is None:
            conversation.pairing_note = "no reference: pass --eval-set with a matching eval case"
        yield conversation
