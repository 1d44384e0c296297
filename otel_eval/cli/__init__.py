"""The ``otel-eval`` command line: one thin module per command, options mapped onto library calls."""

from __future__ import annotations

import io
import sys

import click

from otel_eval.version import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="otel-eval")
def main() -> None:
    """Evaluate AI agents from their OpenTelemetry traces with Google ADK-compatible metrics."""
    if isinstance(sys.stdout, io.TextIOWrapper):  # a lone surrogate in a recorded string, printed in a table
        sys.stdout.reconfigure(errors="backslashreplace")


def _register() -> None:
    # Each command module adds exactly one line below.
    from otel_eval.cli.convert import convert
    from otel_eval.cli.demo import demo
    from otel_eval.cli.golden import golden
    from otel_eval.cli.judge_server import judge_server
    from otel_eval.cli.list_metrics import list_metrics
    from otel_eval.cli.run import run
    from otel_eval.cli.validate import validate
    from otel_eval.cli.worker import worker

    for command in (convert, golden, validate, run, list_metrics, worker, demo, judge_server):
        main.add_command(command)


_register()

__all__ = ["main"]
