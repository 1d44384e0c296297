"""``otel-eval convert``: print the invocations rebuilt from trace files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from otel_eval.cli._common import EXIT_BAD_INPUT, load_traces, print_json, report_problems, stdout, truncate
from otel_eval.model import TracedInvocation, content_text, get_all_tool_calls
from otel_eval.model.utf8_json import json_bytes


def invocation_json(traced: TracedInvocation) -> dict[str, Any]:
    """The ADK Invocation JSON (snake_case, as ADK writes it), without null fields."""
    result: dict[str, Any] = json.loads(json_bytes(traced.invocation, exclude_none=True))
    return result


def metadata_json(traced: TracedInvocation) -> dict[str, Any]:
    """The span metadata of an invocation (everything of TracedInvocation but the Invocation itself)."""
    data: dict[str, Any] = traced.model_dump(mode="json", exclude={"invocation"}, exclude_none=True)
    data["duration_seconds"] = traced.duration_seconds
    return data


@click.command()
@click.argument("trace_files", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--verbose", "-v", is_flag=True, help="Print every warning met while reading and rebuilding.")
def convert(trace_files: tuple[Path, ...], output: str, verbose: bool) -> None:
    """Print the ADK invocations rebuilt from TRACE_FILES (OTLP JSON/protobuf, Jaeger JSON, span-dict lists)."""
    loaded = load_traces(trace_files)
    report_problems(loaded.errors, loaded.warnings, verbose=verbose)
    if output == "json":
        print_json(
            {
                "traces": [
                    {
                        "trace_id": trace.trace_id,
                        "convention": trace.convention,
                        "invocations": [invocation_json(inv) for inv in trace.invocations],
                        "invocation_metadata": [metadata_json(inv) for inv in trace.invocations],
                        "warnings": trace.every_warning(),
                    }
                    for trace in loaded.traces
                ]
            }
        )
    elif loaded.traces:  # none read: the errors above say why, with no empty table under them
        from rich.table import Table  # deferred: rich is only loaded when a table is printed

        table = Table("trace", "convention", "user", "tool calls", "final response", title="Rebuilt invocations")
        for trace in loaded.traces:
            if not trace.invocations:
                table.add_row(trace.trace_id[:12], trace.convention, "[dim](no invocation)[/dim]", "", "")
            for inv in trace.invocations:
                calls = ", ".join(
                    f"{c.name}({json.dumps(c.args or {}, ensure_ascii=False)})"
                    for c in get_all_tool_calls(inv.invocation.intermediate_data)
                )
                table.add_row(
                    inv.trace_id[:12],
                    trace.convention,
                    truncate(content_text(inv.invocation.user_content), 50),
                    truncate(calls, 60),
                    truncate(content_text(inv.invocation.final_response), 60),
                )
        stdout().print(table)
    if loaded.errors:
        raise SystemExit(EXIT_BAD_INPUT)
