"""``otel-eval demo``: online evaluation of a small scripted agent, on this machine, in seconds, with no network."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from otel_eval.cli._common import stdout, writable_directory
from otel_eval.judge.retry import JUDGE_NOT_CONFIGURED

_STATUS_STYLE = {"PASSED": "green", "FAILED": "bold red", "NOT_EVALUATED": "yellow", "INFORMATIONAL": "cyan"}
_SHORT_NAMES = {
    "tool_trajectory_avg_score": "trajectory",
    "response_match_score": "response match",
    "hallucinations_v1": "hallucinations",
    "safety_v1": "safety",
    "tool_call_count_v1": "tool calls",
    "inference_call_count_v1": "model calls",
    "token_usage_v1": "tokens",
    "invocation_duration_v1": "seconds",
}


@click.command("demo")
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo-output"),
    show_default=True,
    help="Where the emitted spans, events and metrics are written as OTLP JSON (and the results as JSON lines).",
)
@click.option("--no-output", is_flag=True, help="Do not write any file.")
@click.option(
    "--judge",
    "judge_mode",
    type=click.Choice(["env", "local"]),
    default="env",
    show_default=True,
    help="env: the judge from google-genai's environment (GOOGLE_API_KEY, ...). local: a loopback "
    "Gemini-compatible server answering scripted verdicts, to see judged scores without a key.",
)
def demo(output_dir: Path, no_output: bool, judge_mode: str) -> None:
    """Run a scripted travel-assistant agent with the EvaluationSpanProcessor attached and show what it emits.

    Six invocations (tool calls, one hallucination, one wrong tool, small talk) produce real OpenTelemetry GenAI
    spans; the processor rebuilds and scores each one on its embedded worker. Deterministic metrics run against a
    small built-in golden eval set, efficiency metrics always; judged metrics run when judge credentials are set
    (GOOGLE_API_KEY / GEMINI_API_KEY, or Vertex AI), else they show NOT_EVALUATED with the reason; with
    --judge local they run against a loopback server answering scripted verdicts (labelled as such).
    """
    from otel_eval.demo.run import SERVICE, run_demo  # deferred: keeps `otel-eval --help` fast

    output = None if no_output else output_dir
    if output is not None:
        writable_directory(output)  # before the agent runs, not after
    stdout().print(f"[bold]otel-eval demo[/bold] — service [cyan]{SERVICE}[/cyan], processor on a real TracerProvider")
    if judge_mode == "local":
        from otel_eval.demo.local_judge import SCRIPTED_JUDGE_MODEL, local_judge

        with local_judge() as (judge, server):
            stdout().print(
                f"[bold magenta]judge: SCRIPTED[/bold magenta] — a loopback Gemini-compatible server at {server.base_url} "
                f"answers fixed verdicts (judge model '{SCRIPTED_JUDGE_MODEL}'); judged scores below are not a "
                "model's opinion"
            )
            run = run_demo(output, judge=judge, judge_model=SCRIPTED_JUDGE_MODEL)
    else:
        run = run_demo(output)
    _print_scores(run)
    _print_notes(run)
    _print_telemetry(run)
    if not run.flushed:
        stdout().print("[yellow]some evaluations did not finish within the flush deadline[/yellow]")


def _print_scores(run: Any) -> None:
    metrics: list[str] = []
    for record in run.records:
        if record.metric_name not in metrics:
            metrics.append(record.metric_name)
    from rich.table import Table  # deferred: rich is only loaded when a table is printed

    title = "Scores per invocation (score and label; n/e = not evaluated; informational values in cyan)"
    if any(_is_scripted(record) for record in run.records):
        title += "; * = scripted judge verdict"
    table = Table(title=title)
    table.add_column("invocation", style="bold", no_wrap=True)
    for metric in metrics:
        table.add_column(_SHORT_NAMES.get(metric, metric), justify="center", no_wrap=True)
    for invocation in run.invocations:
        by_metric = {r.metric_name: r for r in run.records_of(invocation)}
        table.add_row(invocation.scenario.key, *(_cell(by_metric.get(metric)) for metric in metrics))
    stdout().print(table)
    for invocation in run.invocations:
        stdout().print(f"  [bold]{invocation.scenario.key}[/bold]: {invocation.scenario.description}")


def _cell(record: Any) -> str:
    if record is None:
        return "[dim]—[/dim]"
    status = record.eval_status.name
    style = _STATUS_STYLE.get(status, "white")
    if status == "INFORMATIONAL":
        return f"[{style}]{record.score:.3g}[/{style}]" if record.score is not None else "[dim]—[/dim]"
    if status == "NOT_EVALUATED":
        return f"[{style}]n/e[/{style}]"
    score = "" if record.score is None else f"{record.score:.2f} "
    mark = "*" if _is_scripted(record) else ""
    return f"[{style}]{score}{record.label}{mark}[/{style}]"


def _is_scripted(record: Any) -> bool:
    from otel_eval.demo.local_judge import SCRIPTED_JUDGE_MODEL

    return bool(record.judge_model == SCRIPTED_JUDGE_MODEL)


def _print_notes(run: Any) -> None:
    not_evaluated: dict[str, str] = {}
    failures = []
    for record in run.records:
        if record.eval_status.name == "NOT_EVALUATED":
            not_evaluated.setdefault(
                record.metric_name, (record.explanation or record.error_type or "").splitlines()[0]
            )
        elif record.eval_status.name == "FAILED":
            failures.append(record)
    by_reason: dict[str, list[str]] = {}
    for metric, reason in not_evaluated.items():
        by_reason.setdefault(reason, []).append(metric)
    for reason, metrics in by_reason.items():  # one line per reason: a judge not configured is said once
        stdout().print(f"[yellow]NOT_EVALUATED[/yellow] {', '.join(metrics)}: {reason}")
    if any(r.error_type == JUDGE_NOT_CONFIGURED for r in run.records):
        stdout().print("  (no key? `otel-eval demo --judge local` runs the judged metrics on scripted verdicts)")
    keys = {(inv.trace_id, inv.span_id): inv.scenario.key for inv in run.invocations}
    for record in failures:
        explanation = (record.explanation or "").replace("\n", " ")
        if not explanation and record.score is not None and record.threshold is not None:
            explanation = f"score {record.score:.3f} below the threshold {record.threshold:g}"
        detail = f" — {explanation[:150]}" if explanation else ""
        if _is_scripted(record):
            detail += " (scripted judge verdict)"
        stdout().print(
            f"[red]FAIL[/red] {keys.get((record.trace_id, record.span_id), '?')} {record.metric_name}{detail}"
        )


def _print_telemetry(run: Any) -> None:
    stdout().print()
    stdout().print("[bold]Emitted OpenTelemetry data[/bold]")
    evaluation_spans = run.evaluation_spans
    stdout().print(f"  gen_ai.evaluation.result events (Logs API): {len(run.events)}")
    stdout().print(f"  evaluation spans 'evaluate {{metric}}' in the agent's traces: {len(evaluation_spans)}")
    if evaluation_spans:
        example = evaluation_spans[0]
        parent = example.parent.span_id if example.parent is not None else 0
        stdout().print(
            f"    e.g. '{example.name}' trace {example.context.trace_id:032x}, parent span {parent:016x} "
            "(the invocation's invoke_agent span)"
        )
    results = run.metric_points("gen_ai.evaluation.results")
    by_label: dict[str, int] = {}
    for point in results:
        label = str(dict(point.attributes).get("gen_ai.evaluation.score.label"))
        by_label[label] = by_label.get(label, 0) + int(point.value)
    stdout().print(f"  gen_ai.evaluation.results counter: {sum(by_label.values())} ({_join(by_label)})")
    scores = run.metric_points("gen_ai.evaluation.score")
    stdout().print(
        f"  gen_ai.evaluation.score histogram: {sum(p.count for p in scores)} scores in {len(scores)} series"
    )
    pipeline = {k: v for k, v in run.stats.items() if "." in k}
    stdout().print(f"  pipeline counters: {_join(pipeline)}")
    for path in run.files:
        stdout().print(f"  wrote {path}")


def _join(counts: dict[str, int]) -> str:
    return ", ".join(f"{key} {value}" for key, value in sorted(counts.items()))
