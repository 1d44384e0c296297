"""``otel-eval list-metrics``: print the metric registry."""

from __future__ import annotations

import click

from otel_eval.cli._common import print_json, stdout
from otel_eval.metrics import default_registry


@click.command("list-metrics")
@click.option("--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def list_metrics(output: str) -> None:
    """Print every metric: name, value range, threshold when a criterion gives none (-m), whether it needs a reference
    or a judge, and what it measures."""
    infos = default_registry().infos()
    if output == "json":
        print_json(
            {
                "metrics": [
                    {
                        "name": info.name,
                        "description": info.description,
                        "min_value": info.min_value,
                        "max_value": info.max_value,
                        "requires_reference": info.requires_reference,
                        "requires_judge": info.requires_judge,
                        "informational": info.informational,
                        "conversation_level": info.conversation_level,
                        "criterion_type": info.criterion_type.__name__,
                        "default_threshold": info.default_threshold,
                        "version": info.version,
                    }
                    for info in infos
                ]
            }
        )
        return
    from rich.table import Table  # deferred: rich is only loaded when a table is printed

    table = Table("metric", "range", "threshold", "reference", "judge", "description")
    for info in infos:
        table.add_row(
            info.name,
            info.value_range,
            "—" if info.informational else f"{info.default_threshold:g}" if info.default_threshold else "needed",
            "yes" if info.requires_reference else "no",
            "yes" if info.requires_judge else "no",
            info.description,
        )
    stdout().print(table)
