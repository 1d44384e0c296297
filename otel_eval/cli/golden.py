"""``otel-eval golden``: write an ADK eval set from recorded traces (the "mark as golden" flow)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from otel_eval.cli._common import EXIT_BAD_INPUT, fail, load_traces, report_problems, writing
from otel_eval.conversations import group_conversations
from otel_eval.evaluation import shadowed_case_warnings
from otel_eval.model import EvalCase, EvalSet, Invocation


def golden_invocation(invocation: Invocation) -> Invocation:
    """An actual invocation as an expected one: what the agent said and did, without run-specific timings."""
    return invocation.model_copy(update={"duration": None, "model_duration": None, "tool_duration": None})


@click.command()
@click.argument("trace_files", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("-o", "--output", "output", required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--eval-set-id", help="Id of the eval set (default: the output file's name without extensions).")
@click.option("--verbose", "-v", is_flag=True, help="Print every warning met while reading and rebuilding.")
def golden(trace_files: tuple[Path, ...], output: Path, eval_set_id: str | None, verbose: bool) -> None:
    """Write an ADK eval set with one case per conversation found in TRACE_FILES."""
    loaded = load_traces(trace_files)
    report_problems(loaded.errors, loaded.warnings, verbose=verbose)
    invocations = [inv for trace in loaded.traces for inv in trace.invocations]
    uncaptured = [inv for inv in invocations if not inv.content_captured]
    if uncaptured:
        click.echo(f"warning: {len(uncaptured)} invocation(s) carry no message content; left out", err=True)
    conversations = group_conversations(inv for inv in invocations if inv.content_captured)
    if not conversations:
        fail("no invocation with content found in the trace files; nothing to write")
    cases = [
        EvalCase(
            eval_id=f"{conversation.invocations[0].trace_id[:8]}_case_{index}",
            conversation=[golden_invocation(inv.invocation) for inv in conversation.invocations],
            creation_timestamp=time.time(),
        )
        for index, conversation in enumerate(conversations, start=1)
    ]
    eval_set = EvalSet(
        eval_set_id=eval_set_id or output.name.split(".")[0],
        eval_cases=cases,
        creation_timestamp=time.time(),
    )
    with writing(output):
        output.write_text(eval_set.model_dump_json(indent=2, exclude_none=True) + "\n", encoding="utf-8")
    click.echo(f"wrote {output} with {len(cases)} eval case(s)", err=True)
    for line in shadowed_case_warnings(eval_set):
        click.echo(f"warning: {output}: {line}", err=True)
    if loaded.errors:
        raise SystemExit(EXIT_BAD_INPUT)
