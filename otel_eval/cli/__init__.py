"""The ``otel-eval`` command line: one thin module per command, options mapped onto library calls."""

from __future__ import annotations

import click

from otel_eval.version import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="otel-eval")
def main() -> None:
    """Evaluate AI agents from their OpenTelemetry traces with Google ADK-compatible metrics."""


def _register() -> None:
    # Each command module adds exactly one line below.
    pass


_register()

__all__ = ["main"]
