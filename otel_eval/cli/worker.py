"""``otel-eval worker``: the long-running evaluation service on Kafka (options map one-to-one onto WorkerSettings).

Every option can also be set by its ``OTEL_EVAL_*`` environment variable (an option given on the command line wins);
the worker's own telemetry goes where the standard ``OTEL_EXPORTER_OTLP_*`` variables say.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import click
from pydantic import ValidationError

from otel_eval.cli._common import EXIT_BAD_INPUT, EXIT_FAILED, fail
from otel_eval.errors import ConfigurationError

EXIT_ABANDONED = 75
"""The worker stopped with fetched records it had not committed (EX_TEMPFAIL): nothing is lost, the consumer group
redelivers them to another worker (a batch that did not finish within --shutdown-timeout, or whose commit failed
because the broker was unreachable, or a second SIGINT)."""
EXIT_INTERRUPTED = 130
"""Stopped by SIGINT (Ctrl+C) after a graceful stop: 128 + SIGINT, as a shell reports a process SIGINT ended."""

_EXIT_CODES = f"""\b
Exit codes:
  (SIGTERM)  stopped by SIGTERM, everything fetched committed: the signal is raised again once the worker has
             stopped, so the process ends as SIGTERM says (a shell reports 143; exit code 143 where the process
             was started with SIGTERM ignored)
  {EXIT_INTERRUPTED}        the same for SIGINT (Ctrl+C), also where it was started with SIGINT ignored (a
             background job); a second SIGINT stops at once
  {EXIT_ABANDONED}         stopped with fetched records left uncommitted: the consumer group redelivers them
  {EXIT_FAILED}          failed: it could not start, or one of its tasks died (the error is printed)
  {EXIT_BAD_INPUT}          bad settings"""

_DRIVEN_LIBRARIES = ("aiokafka", "httpx", "httpx2", "httpcore", "httpcore2", "google_genai")
"""Libraries the worker drives: their per-request lines (one per judge call, per connection) only at DEBUG."""

_OPTION_TO_SETTING = {
    "bootstrap_servers": "kafka_bootstrap_servers",
    "requests_topic": "kafka_requests_topic",
    "results_topic": "kafka_results_topic",
    "spans_topic": "kafka_spans_topic",
    "logs_topic": "kafka_logs_topic",
    "sessions_topic": "kafka_sessions_topic",
    "dead_letter_topic": "kafka_dead_letter_topic",
    "group_id": "kafka_group_id",
    "concurrency": "worker_concurrency",
    "max_batch_size": "worker_max_batch_size",
    "shutdown_timeout": "worker_shutdown_timeout",
    "telemetry": "worker_telemetry",
    "metrics_host": "worker_metrics_host",
    "metrics_port": "worker_metrics_port",
    "trace_idle_timeout": "trace_idle_timeout",
    "criteria": "criteria",
    "metrics": "metrics",
    "eval_set": "eval_set",
    "request_criteria": "request_criteria",
    "request_metrics": "request_metrics",
    "request_judge_models": "request_judge_models",
    "request_max_output_tokens": "request_max_output_tokens",
    "max_num_samples": "max_num_samples",
    "emit": "emit",
}


@click.command("worker", epilog=_EXIT_CODES)
@click.option(
    "--bootstrap-servers",
    help="Kafka host:port[,host:port]. [env OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS, default localhost:9092]",
)
@click.option(
    "--source",
    "sources",
    multiple=True,
    type=click.Choice(["requests", "otlp_spans", "otlp_logs", "sessions"]),
    help="What to consume (repeatable): evaluation requests, and/or OTLP spans (and logs) from the Collector, and/or "
    "the Collector path's sessions topic. [env OTEL_EVAL_WORKER_SOURCES]",
)
@click.option("--requests-topic", help="[env OTEL_EVAL_KAFKA_REQUESTS_TOPIC, default otel_eval.requests]")
@click.option(
    "--results-topic", help="Empty to not publish. [env OTEL_EVAL_KAFKA_RESULTS_TOPIC, default otel_eval.results]"
)
@click.option("--spans-topic", help="[env OTEL_EVAL_KAFKA_SPANS_TOPIC, default otlp_spans]")
@click.option("--logs-topic", help="[env OTEL_EVAL_KAFKA_LOGS_TOPIC, default otlp_logs]")
@click.option(
    "--sessions-topic",
    help="Collector path: invocations re-keyed by session id; empty to not re-key. "
    "[env OTEL_EVAL_KAFKA_SESSIONS_TOPIC, default otel_eval.sessions]",
)
@click.option("--dead-letter-topic", help="[env OTEL_EVAL_KAFKA_DEAD_LETTER_TOPIC, default otel_eval.dead_letter]")
@click.option("--group-id", help="Consumer group. [env OTEL_EVAL_KAFKA_GROUP_ID, default otel-eval-worker]")
@click.option("--concurrency", type=int, help="Invocations evaluated at once. [env OTEL_EVAL_WORKER_CONCURRENCY]")
@click.option("--max-batch-size", type=int, help="Records per batch. [env OTEL_EVAL_WORKER_MAX_BATCH_SIZE]")
@click.option(
    "--shutdown-timeout",
    type=float,
    help="Seconds from SIGTERM/SIGINT to exit (drain the batch, stop the Kafka clients; see the exit codes below). "
    "[env OTEL_EVAL_WORKER_SHUTDOWN_TIMEOUT]",
)
@click.option(
    "--trace-idle-timeout",
    type=float,
    help="Collector path: seconds of quiet before a trace is evaluated. [env OTEL_EVAL_TRACE_IDLE_TIMEOUT, default 30]",
)
@click.option("--criteria", help="ADK criteria JSON or a path to it. [env OTEL_EVAL_CRITERIA]")
@click.option(
    "--metrics",
    help="Comma-separated metrics to run with the worker's own criteria (each with its criterion from them, else its "
    "default), instead of the criteria plus ADK's efficiency metrics. [env OTEL_EVAL_METRICS]",
)
@click.option("--eval-set", help="ADK eval set for online reference metrics. [env OTEL_EVAL_EVAL_SET]")
@click.option(
    "--request-criteria/--no-request-criteria",
    default=None,
    help="Honour the criteria requests carry, within --request-metrics and --request-judge-models (refused ones are "
    "counted; the request is scored with the worker's own). [env OTEL_EVAL_REQUEST_CRITERIA, default off]",
)
@click.option(
    "--request-metrics",
    help="Comma-separated metrics request criteria may name; * for any. [env OTEL_EVAL_REQUEST_METRICS]",
)
@click.option(
    "--request-judge-models",
    help="Comma-separated judge models request criteria may name. [env OTEL_EVAL_REQUEST_JUDGE_MODELS]",
)
@click.option(
    "--request-max-output-tokens",
    type=int,
    help="Largest judge_model_config.max_output_tokens of request criteria. "
    "[env OTEL_EVAL_REQUEST_MAX_OUTPUT_TOKENS, default 4096]",
)
@click.option(
    "--max-num-samples",
    type=int,
    help="Largest num_samples: a request asking more is refused, own criteria asking more fail at start-up. "
    "[env OTEL_EVAL_MAX_NUM_SAMPLES, default 20]",
)
@click.option(
    "--telemetry",
    type=click.Choice(["otlp", "prometheus", "console", "none"]),
    help="Where scores go: otlp (OTEL_EXPORTER_OTLP_*), prometheus (metrics on /metrics), console or none. "
    "[env OTEL_EVAL_WORKER_TELEMETRY]",
)
@click.option(
    "--emit",
    help="Signals the scores are emitted as, comma-separated: events, spans, metrics, attributes, or none; the "
    "results topic and OTEL_EVAL_SINKS do not depend on it. [env OTEL_EVAL_EMIT, default events,spans,metrics,attributes]",
)
@click.option(
    "--metrics-host",
    help="Address of /healthz, /readyz, /metrics. [env OTEL_EVAL_WORKER_METRICS_HOST, default 0.0.0.0 in a container, "
    "127.0.0.1 elsewhere]",
)
@click.option(
    "--metrics-port",
    type=int,
    help="Port of /healthz, /readyz, /metrics; 0 turns them off. [env OTEL_EVAL_WORKER_METRICS_PORT, default 9464]",
)
@click.option(
    "--log-level", default="INFO", show_default=True, type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"])
)
def worker(sources: tuple[str, ...], log_level: str, **options: Any) -> None:
    """Evaluate invocations from Kafka in a consumer group; emit scores as OpenTelemetry data and publish results.

    SIGTERM or SIGINT stops intake, finishes the current batch and stops within --shutdown-timeout."""
    from otel_eval._runtime.collector import tune_for_serving
    from otel_eval._runtime.unknown_variables import warn_unknown_variables
    from otel_eval.worker.service import Worker, WorkerFailed
    from otel_eval.worker.settings import WorkerSettings, settings_error
    from otel_eval.worker.telemetry import create_telemetry, install_global

    configure_logging(log_level)
    warn_unknown_variables(os.environ)  # a misspelt OTEL_EVAL_* name is said, not ignored
    # Each setting given by a flag, with the flag and the value as typed: what an error about it names.
    flags: dict[str, tuple[str, Any]] = {
        _OPTION_TO_SETTING[k]: ("--" + k.replace("_", "-"), v) for k, v in options.items() if v is not None
    }
    if sources:
        flags["worker_sources"] = ("--source", ",".join(sources))
    try:
        settings = WorkerSettings.from_flags(flags)
        settings.security().ssl_context()  # the TLS files load now: a wrong path is a bad setting (exit 2)
    except ValidationError as exc:
        fail(settings_error(exc, flags), EXIT_BAD_INPUT)
    except ConfigurationError as exc:
        fail(str(exc), EXIT_BAD_INPUT)
    try:
        telemetry = create_telemetry(settings.worker_telemetry)
        install_global(telemetry)
        service = Worker(settings, telemetry=telemetry)
    except ConfigurationError as exc:
        fail(str(exc), EXIT_BAD_INPUT)
    tune_for_serving()  # this process is the worker's: the start-up heap is kept out of every collection
    try:
        service.run()  # after a graceful stop on a signal, raises that signal again
    except KeyboardInterrupt:  # SIGINT, raised again after the graceful stop
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:  # it could not start (broker unreachable, port taken, ...), or a task died
        logging.getLogger(__name__).debug("worker failed", exc_info=True)
        reason = str(exc) if isinstance(exc, WorkerFailed) else f"{type(exc).__name__}: {exc}"
        click.echo(f"error: worker failed: {settings.security().redact(reason)}", err=True)
        sys.exit(EXIT_FAILED)
    if service.abandoned_uncommitted:
        sys.exit(EXIT_ABANDONED)
    if service.stopped_by is not None:  # raised again, but this process inherited it ignored: exit as it would have
        sys.exit(128 + service.stopped_by)


def configure_logging(level: str) -> None:
    """The worker's log: its own events at ``level`` on stderr; the per-request lines of the libraries it drives
    (httpx2, google_genai, aiokafka) only when ``level`` is DEBUG, unless their loggers' levels are already set."""
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if level == "DEBUG":
        return
    for name in _DRIVEN_LIBRARIES:
        library = logging.getLogger(name)
        if library.level == logging.NOTSET:
            library.setLevel(logging.WARNING)
