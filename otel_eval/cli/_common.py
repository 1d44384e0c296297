"""Helpers shared by the commands: loading traces, reporting problems, the stdout/stderr consoles."""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
import pydantic_core

from otel_eval.errors import InputError
from otel_eval.model.loading import document_kind
from otel_eval.reconstruct import Reads, TraceInvocations, rebuild_traces

if TYPE_CHECKING:
    from rich.console import Console

    from otel_eval.traces import TraceReadResult

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_EVALUATED = 3
"""``run``: a requested metric was evaluated on no invocation because the judge is not usable (no credentials,
rejected key, exhausted quota, unreachable); ``--allow-not-evaluated`` turns this into success."""

# Piped output (CI logs, files) is not cut to 80 columns: tables get room for tool calls and explanations.
_PIPE_WIDTH = 200


# The consoles are made on first use: importing rich costs ~30 ms that `--output json` runs never need.
@functools.cache
def stdout() -> Console:
    """The rich console on stdout (tables, reasons)."""
    from rich.console import Console

    return Console(soft_wrap=True, width=None if sys.stdout.isatty() else _PIPE_WIDTH)


@functools.cache
def stderr() -> Console:
    """The rich console on stderr (progress)."""
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True)


@dataclass(slots=True)
class LoadedTraces:
    """Traces rebuilt from files, plus the files that could not be read and the warnings met."""

    traces: list[TraceInvocations] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Files given as traces that are eval sets or eval configs (a glob over a folder holding both), with why."""


def read_input_file(path: Path, loaded: LoadedTraces) -> TraceReadResult | None:
    """``path`` read, or None when it cannot be: its error, or (an eval set or config swept in among the trace
    files) its skip notice, is recorded in ``loaded``."""
    from otel_eval.traces import read_trace_file  # deferred: keeps `otel-eval --help` fast

    try:
        return read_trace_file(path)
    except InputError as exc:
        kind = eval_file_kind(path)
        if kind is None:
            loaded.errors.append(str(exc))
        else:
            loaded.skipped.append(f"skipped {path}: an ADK {kind}, not a trace file")
        return None


def load_traces(paths: Sequence[Path], *, reads: Reads = Reads.ALL) -> LoadedTraces:
    """Reads every file (a bad one is reported and skipped) and rebuilds the invocations of all their spans (the
    parts ``reads`` asks for: everything by default).

    OTLP log files among them (``EVENT_ONLY`` content) are joined onto the spans of the trace files first.

    An eval set or eval config among the files (``examples/traces/*.json`` sweeps them in) is skipped with a
    warning naming it, not an error.
    """
    from otel_eval.traces.log_records import SpanLogRecord, attach_log_records

    log_records: list[SpanLogRecord] = []

    loaded = LoadedTraces()
    spans = []
    for path in paths:
        skipped = len(loaded.skipped)
        result = read_input_file(path, loaded)
        if result is None:
            for line in loaded.skipped[skipped:]:
                click.echo(f"warning: {line}", err=True)
            continue
        spans.extend(result.spans)
        log_records.extend(result.log_records)
        loaded.warnings.extend(result.warnings)
    if log_records:  # GenAI content captured as log records (EVENT_ONLY): onto their spans, as span events
        unmatched = attach_log_records(spans, log_records)
        if unmatched:
            loaded.warnings.append(f"{len(unmatched)} GenAI content log record(s) match no span of the trace files")
    loaded.traces = rebuild_traces(spans, reads=reads)
    for trace in loaded.traces:
        loaded.warnings.extend(trace.every_warning())
    return loaded


def eval_file_kind(path: Path) -> str | None:
    """``"eval set"`` or ``"eval config"`` when ``path`` holds one (ADK ``EvalSet``, ``*.test.json`` or
    ``EvalConfig`` JSON), else None."""
    try:
        payload = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    kind = document_kind(payload)
    return kind if kind in ("eval set", "eval config") else None


def report_problems(errors: Sequence[str], warnings: Sequence[str] = (), *, verbose: bool = False) -> None:
    """Prints errors (always) and warnings (all with ``verbose``, else a count) to stderr, one line each."""
    for line in errors:
        click.echo(f"error: {line}", err=True)
    if verbose:
        for line in warnings:
            click.echo(f"warning: {line}", err=True)
    elif warnings:
        click.echo(f"note: {len(warnings)} warning(s) while rebuilding invocations; --verbose shows them", err=True)


def print_json(payload: Any) -> None:
    """Writes ``payload`` as indented JSON to stdout (NaN and infinities as ``json.dumps`` writes them).

    pydantic-core's encoder, not ``json.dumps``: with ``indent`` the standard library falls back to its pure-Python
    encoder, which cost ``otel-eval run --output json`` a fifth of its time on many small traces.
    """
    try:
        text = pydantic_core.to_json(payload, indent=2, inf_nan_mode="constants").decode()
    except pydantic_core.PydanticSerializationError:  # e.g. a lone surrogate in a recorded string: as before
        text = json.dumps(payload, indent=2)  # ASCII: any stdout writes a surrogate's escape
    sys.stdout.write(text + "\n")


def once(advice: str) -> Any:
    """A click callback for a ``multiple=True`` option that may be given at most once: its one value (None when
    absent), else exit 2 naming the option and every value. Click's own single-value options keep the last value
    given, silently dropping the others (a first ``--eval-set`` then checks nothing)."""

    def single(ctx: click.Context, param: click.Parameter, values: tuple[Any, ...]) -> Any:
        if len(values) > 1:
            given = ", ".join(str(value) for value in values)
            fail(f"{param.opts[0]} given {len(values)} times ({given}); {advice}")
        return values[0] if values else None

    return single


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Prints ``error: message`` to stderr and exits with ``code``."""
    click.echo(f"error: {message}", err=True)
    raise SystemExit(code)


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """The block's failure to write ``path`` (an ``OSError``) as ``error: <path>: cannot write: <reason>``, exit 2.

    Exit 2 (bad input), not a traceback with exit 1, which a CI gate would read as a FAILED metric.
    """
    try:
        yield
    except OSError as exc:
        fail(f"{path}: cannot write: {exc.strerror or exc}")


def writable_directory(directory: Path) -> None:
    """Creates ``directory`` (and its parents) and checks that a file can be made in it, so that a command fails
    before its work (scoring, judge calls) rather than after; exits 2 as :func:`writing` when it cannot."""
    with writing(directory):
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass


def truncate(text: str, width: int = 80) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
