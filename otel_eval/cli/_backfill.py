"""``otel-eval run --from phoenix|mlflow``: the traces a backend already stores, read page by page into the offline
run's spill (the same memory bound as trace files), with a progress bar on a terminal; ``--dry-run`` counts what a
backfill would score and write, without scoring.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any, Final

import click

from otel_eval import environment_variables as env
from otel_eval.cli._common import EXIT_BAD_INPUT, fail, stderr
from otel_eval.cli._spill import StreamedTraces, stream_pages
from otel_eval.errors import ConfigurationError
from otel_eval.reconstruct import Reads
from otel_eval.traces.backends import (
    BACKEND_NAMES,
    MLFLOW,
    PHOENIX,
    BackendUnavailable,
    TracePage,
    Window,
    reader_from_env,
)

if TYPE_CHECKING:
    from otel_eval.cli._run_sinks import OtlpExport, ScoreWriter
    from otel_eval.evaluation import ConversationReport, MetricPlan
    from otel_eval.model import EvalSet

EXIT_BACKEND: Final = 4
"""``run``'s exit code when a backend failed it: traces that could not be read, or scores a sink did not deliver."""
_NAMED_BY: Final = {
    PHOENIX: f"{env.PHOENIX_PROJECT_NAME} names it (else openinference.project.name in OTEL_RESOURCE_ATTRIBUTES)",
    MLFLOW: f"{env.MLFLOW_EXPERIMENT_ID} or {env.MLFLOW_EXPERIMENT_NAME} names it",
}
"""What names the project or experiment ``--from`` reads, for a backend that answers it does not exist."""

_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")


def parse_duration(text: str) -> float:
    """``30m``, ``24h``, ``7d`` (also ``s`` and ``w``) in seconds.

    Raises:
        click.BadParameter: anything else.
    """
    match = _DURATION.match(text)
    if not match:
        raise click.BadParameter(f"{text!r}: expected a duration such as 30m, 24h or 7d")
    return float(match.group(1)) * _UNITS[match.group(2)]


def parse_instant(text: str, now_s: float, flag: str | None = None) -> int:
    """A point in time in Unix nanoseconds: a duration ago (``2h``) or an ISO 8601 time (UTC when it names no zone).

    Raises:
        click.BadParameter: neither (naming ``flag``, the option it was given to).
    """
    if _DURATION.match(text):
        return int((now_s - parse_duration(text)) * 1e9)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise click.BadParameter(
            f"{text!r}: expected a duration ago (2h) or an ISO 8601 time", param_hint=f"'{flag}'" if flag else None
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1e9)


@dataclass(frozen=True, slots=True)
class BackfillOptions:
    """``run``'s options for reading from a backend and writing the scores back."""

    source: str | None = None
    since: str | None = None
    until: str | None = None
    limit: int | None = None
    filters: tuple[str, ...] = ()
    sinks: str | None = None
    export_otlp: bool = False
    dry_run: bool = False

    def window(self, now_s: float | None = None) -> Window:
        """The traces to read.

        Raises:
            click.BadParameter: a ``--since``/``--until`` that is no time, or out of the years 1 to 9999 (naming the
                flag); an ``--until`` before ``--since``.
        """
        now_s = time.time() if now_s is None else now_s
        since_ns = _window_instant("--since", self.since, now_s)
        until_ns = _window_instant("--until", self.until, now_s)
        if since_ns is not None and until_ns is not None and until_ns < since_ns:
            raise click.BadParameter(
                f"--until {self.until!r} is before --since {self.since!r}: the window holds no trace",
                param_hint="'--until'",
            )
        return Window(since_ns=since_ns, until_ns=until_ns, limit=self.limit, filters=self.filters)


def _window_instant(flag: str, text: str | None, now_s: float) -> int | None:
    """``text`` (a ``--since``/``--until`` value) in Unix nanoseconds, checked to be a time a backend can be asked
    about (a datetime: years 1 to 9999)."""
    if not text:
        return None
    try:
        instant = parse_instant(text, now_s, flag)
        datetime.fromtimestamp(instant / 1e9, tz=UTC)
    except (ValueError, OverflowError, OSError):
        raise click.BadParameter(
            f"{text!r}: out of range (a time between the years 1 and 9999)", param_hint=f"'{flag}'"
        ) from None
    return instant


_OPTIONS: Final[list[Callable[[Any], Any]]] = [
    click.option(
        "--from",
        "source",
        type=click.Choice(BACKEND_NAMES),
        help="Read the traces from this backend instead of files: a Phoenix project (PHOENIX_COLLECTOR_ENDPOINT, "
        "PHOENIX_API_KEY, PHOENIX_PROJECT_NAME), an MLflow experiment (MLFLOW_TRACKING_URI, MLFLOW_EXPERIMENT_NAME "
        "or MLFLOW_EXPERIMENT_ID).",
    ),
    click.option(
        "--since", help="With --from: traces started this long ago or later (30m, 24h, 7d) or since an ISO time."
    ),
    click.option("--until", help="With --from: traces started before this (a duration ago, or an ISO time)."),
    click.option(
        "--limit",
        type=click.IntRange(min=1),
        help="With --from: at most this many traces, newest first (Phoenix: the last it stored).",
    ),
    click.option(
        "--filter",
        "filters",
        multiple=True,
        help="With --from: the backend's own filter (repeatable, all must hold): Phoenix 'key:value' on the root "
        "span's attributes; MLflow a search condition, e.g. \"tag.env = 'prod'\".",
    ),
    click.option(
        "--sinks",
        help="Write the scores to these sinks (console, phoenix, mlflow, langfuse; comma-separated), as the "
        "processor does; default OTEL_EVAL_SINKS. 'none' for none.",
    ),
    click.option(
        "--export-otlp",
        is_flag=True,
        help="Also export every result as a gen_ai.evaluation.result event and in the score metrics over OTLP, as "
        "the OTEL_EXPORTER_OTLP_* variables say (for Grafana, Tempo, Loki).",
    ),
    click.option(
        "--dry-run",
        is_flag=True,
        help="Read and rebuild the traces, count the invocations and the scores a run would write, score nothing.",
    ),
]
_NAMES: Final = ("source", "since", "until", "limit", "filters", "sinks", "export_otlp", "dry_run")


def backfill_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Adds the options of :class:`BackfillOptions` to ``command``, which receives them as ``backfill``."""

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        options = BackfillOptions(**{name: kwargs.pop(name) for name in _NAMES})
        if options.source is None and (options.since or options.until or options.limit or options.filters):
            raise click.UsageError("--since, --until, --limit and --filter select traces in a backend: use --from")
        options.window()  # a bad --since/--until is said before anything starts
        return command(backfill=options, **kwargs)

    for option in reversed(_OPTIONS):
        wrapper = option(wrapper)
    return wrapper


def read_backend(options: BackfillOptions, spill: IO[bytes], reads: Reads = Reads.ALL) -> StreamedTraces:
    """The first pass over the backend's traces into ``spill``.

    Raises:
        SystemExit: :data:`EXIT_BACKEND` when the backend could not be read (nothing is scored or written then).
    """
    assert options.source is not None
    try:
        reader = reader_from_env(options.source, os.environ)
        idle_s = env.number_setting(
            os.environ,
            env.OTEL_EVAL_TRACE_IDLE_TIMEOUT,
            env.DEFAULT_TRACE_IDLE_TIMEOUT,
            valid=lambda seconds: seconds > 0,
            expected="seconds (a number > 0)",
        )
    except ConfigurationError as error:
        fail(str(error))
    now_s = time.time()
    window = dataclasses.replace(options.window(now_s), settled_ns=int((now_s - idle_s) * 1e9))
    read = {"traces": 0, "running": 0}
    try:
        streamed = stream_pages(_counted(reader.pages(window), read), spill, reads=reads)
    except BackendUnavailable as error:
        missing = f"; is {reader.where} there? {_NAMED_BY[options.source]}" if error.status == 404 else ""
        click.echo(
            f"error: {error} (after {read['traces']} trace(s) of {reader.where} at {reader.endpoint}){missing}; "
            "nothing was scored or written",
            err=True,
        )
        raise SystemExit(EXIT_BAD_INPUT if error.bad_request else EXIT_BACKEND) from None
    if read["running"]:
        click.echo(
            f"note: {read['running']} trace(s) still running not read (no root span in {options.source} yet, a span "
            f"ended in the last {idle_s:g} s: {env.OTEL_EVAL_TRACE_IDLE_TIMEOUT}); a later run scores them whole",
            err=True,
        )
    if streamed.empty:
        click.echo(f"note: {len(streamed.empty)} trace(s) hold no agent invocation (not scored)", err=True)
        streamed.empty = []
    click.echo(
        f"read {read['traces']} trace(s) from {options.source} {reader.where}: {streamed.count} conversation(s)",
        err=True,
    )
    if not streamed.count and not streamed.loaded.errors:
        click.echo("nothing to evaluate in that window", err=True)
        raise SystemExit(0)  # an empty window is no error for a scheduled backfill
    return streamed


def _counted(pages: Iterator[TracePage], read: dict[str, int]) -> Iterator[TracePage]:
    """``pages``, counting traces, with a progress line on a terminal (rich; nothing when piped)."""
    if not stderr().is_terminal:
        for page in pages:
            read["traces"] += page.traces
            read["running"] += page.running
            yield page
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn  # deferred: rich only for a terminal

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), console=stderr(), transient=True) as progress:
        task = progress.add_task("reading traces: 0", total=None)
        for page in pages:
            read["traces"] += page.traces
            read["running"] += page.running
            progress.update(task, description=f"reading traces: {read['traces']}")
            yield page


def dry_run(streamed: StreamedTraces, plan: MetricPlan) -> None:
    """Prints what a run would score and write: conversations, invocations, metrics and scores (one per invocation
    and metric with a threshold, as the sinks key and send them; informational ones too with
    ``OTEL_EVAL_SINKS_INFORMATIONAL``)."""
    informational = env.flag_setting(os.environ, env.OTEL_EVAL_SINKS_INFORMATIONAL, False)
    invocations = 0
    for conversation in streamed.conversations:
        invocations += len(conversation.invocations)
    names = [metric.name for metric in plan.metrics]
    written = [metric.name for metric in plan.metrics if informational or metric.threshold is not None]
    click.echo(
        f"dry run: {streamed.count} conversation(s), {invocations} invocation(s), {len(names)} metric(s) "
        f"({', '.join(names) or 'none'}): {invocations * len(written)} score(s) would be written to the sinks "
        f"({', '.join(written) or 'none'}; one per invocation and metric, replacing any earlier one)"
    )


class Outputs:
    """Where ``run`` writes each report besides its own output: the sinks, and the OTLP export when asked."""

    def __init__(self, writer: ScoreWriter | None, otlp: OtlpExport | None) -> None:
        self.writer, self.otlp = writer, otlp

    def __bool__(self) -> bool:
        return self.writer is not None or self.otlp is not None

    def add(self, report: ConversationReport) -> None:
        """Hands ``report`` to each output."""
        if self.writer is not None:
            self.writer.add(report)
        if self.otlp is not None:
            self.otlp.add(report)


def outputs(options: BackfillOptions, eval_set: EvalSet | None) -> Outputs:
    """The sinks ``--sinks`` (else ``OTEL_EVAL_SINKS``) names, and the OTLP export of ``--export-otlp``.

    Raises:
        ConfigurationError: an unknown sink, a backend's bad setting, an unknown OTLP protocol.
    """
    from otel_eval.cli._run_sinks import OtlpExport, ScoreWriter  # deferred: the sinks load httpx2

    if options.dry_run:
        return Outputs(None, None)
    eval_set_id = eval_set.eval_set_id if eval_set else None
    writer = ScoreWriter(options.sinks, eval_set_id=eval_set_id)
    return Outputs(writer if writer else None, OtlpExport(eval_set_id) if options.export_otlp else None)


def finish_outputs(done: Outputs) -> bool:
    """Closes the outputs; whether something was not delivered (said on stderr)."""
    from otel_eval.cli._run_sinks import say_undelivered, sink_names_note

    failed = False
    if done.writer is not None:
        undelivered = done.writer.close()
        say_undelivered(undelivered, done.writer.records)
        if not undelivered:
            click.echo(f"wrote {done.writer.records} score(s) to {sink_names_note(done.writer.sinks)}", err=True)
        failed = bool(undelivered)
    if done.otlp is not None:
        problems = done.otlp.close()
        for problem in problems:
            click.echo(f"error: {problem}; {done.otlp.records} result(s) were to be exported", err=True)
        if not problems:
            click.echo(f"exported {done.otlp.records} result(s) over OTLP", err=True)
        failed = failed or bool(problems)
    return failed
