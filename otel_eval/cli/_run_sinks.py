"""``otel-eval run --sinks``: every result written where the traces live, with the processor's sinks, record ids
and delivery.

The records are the ones online evaluation emits (:func:`~otel_eval.evaluation.records.records_of`: one per invocation
and metric, the same result ids), so the sinks' keying, (trace, span, metric), makes a second run replace rather
than double, and a result already there (same result id) is not sent again. Unlike the processor, ``run`` may wait:
it waits for room in a sink's queue instead of dropping a score, and at the end for every score to be delivered or
given up (the sink's own bounded retries, ``OTEL_EVAL_SINKS_RETRY_SECONDS``); what was not delivered is counted,
said, and turns into exit code 4.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import click

from otel_eval import environment_variables as env
from otel_eval import semconv

if TYPE_CHECKING:
    from otel_eval.emit import RecordSink
    from otel_eval.evaluation import ConversationReport
    from otel_eval.model.messages import EvaluationRecord

FLUSH_SLACK_S = 30.0
"""Seconds past a sink's retry window that ``run`` waits for its last scores."""


class ScoreWriter:
    """Hands each report's records to the sinks ``names`` (``OTEL_EVAL_SINKS`` when None) configured from
    ``environ``.

    Raises:
        ConfigurationError: an unknown sink or a backend's bad setting.
    """

    def __init__(self, names: str | None, environ: Mapping[str, str] | None = None, *, eval_set_id: str | None) -> None:
        from otel_eval.emit.sinks import sinks_from_env  # deferred: httpx2 and the sinks, only when asked

        environ = dict(os.environ if environ is None else environ)
        if names is not None:
            environ[env.OTEL_EVAL_SINKS] = names
        self._retry_s = env.number_setting(
            environ,
            env.OTEL_EVAL_SINKS_RETRY_SECONDS,
            env.DEFAULT_SINKS_RETRY_SECONDS,
            valid=lambda v: v >= 0,
            expected="seconds >= 0",
        )
        self.sinks: list[RecordSink] = sinks_from_env(
            environ, setting=env.OTEL_EVAL_SINKS if names is None else "--sinks"
        )
        self._eval_set_id = eval_set_id
        self._informational = env.flag_setting(environ, env.OTEL_EVAL_SINKS_INFORMATIONAL, False)
        self._explanations = env.flag_setting(environ, env.OTEL_EVAL_EXPLANATIONS, env.DEFAULT_EXPLANATIONS)
        self.records = 0
        """Records handed to the sinks (informational ones only with ``OTEL_EVAL_SINKS_INFORMATIONAL``)."""

    def __bool__(self) -> bool:
        return bool(self.sinks)

    def add(self, report: ConversationReport) -> None:
        """Sends ``report``'s records (one per invocation and metric) to every sink, waiting for room."""
        records = report_records(report, self._eval_set_id, explanations=self._explanations)
        if not self._informational:  # as the backend sinks filter them: counted as they are
            records = [r for r in records if r.label != semconv.LABEL_INFORMATIONAL]
        if not records:
            return
        self.records += len(records)
        for sink in self.sinks:
            wait = getattr(sink, "wait_for_room", None)
            if wait is not None:
                wait(len(records), self._retry_s + FLUSH_SLACK_S)
            sink(records)

    def close(self) -> dict[str, int]:
        """Waits for every sink to deliver or give up, shuts them down; the scores not delivered, by sink."""
        undelivered: dict[str, int] = {}
        for sink in self.sinks:
            flush = getattr(sink, "force_flush", None)
            if flush is not None:
                flush(int((self._retry_s + FLUSH_SLACK_S) * 1000))
            shutdown = getattr(sink, "shutdown", None)
            if shutdown is not None:
                shutdown()
            stats: dict[str, Any] = sink.stats() if hasattr(sink, "stats") else {}
            dropped = sum(int(v) for k, v in stats.items() if k.startswith("dropped."))
            if dropped:
                name = getattr(getattr(sink, "backend", None), "name", type(sink).__name__)
                undelivered[name] = undelivered.get(name, 0) + dropped
        return undelivered


_SIGNALS: Final = {"logs": "result events (logs)", "metrics": "score metrics", "spans": "spans"}


class OtlpExport:
    """``--export-otlp``: every record as a ``gen_ai.evaluation.result`` event (parented to its invocation's root
    span) and in the score metrics, exported over OTLP as the ``OTEL_EXPORTER_OTLP_*`` variables say (as the Kafka
    worker's ``otlp`` telemetry: ``http/protobuf`` by default, ``grpc`` by ``OTEL_EXPORTER_OTLP_PROTOCOL``)."""

    def __init__(self, eval_set_id: str | None) -> None:
        from otel_eval.emit import Emitters  # deferred: the OTLP exporters load protobuf
        from otel_eval.worker.telemetry import create_telemetry

        self._telemetry = create_telemetry("otlp")
        self._emitters = Emitters.create(
            logger_provider=self._telemetry.logger_provider,
            meter_provider=self._telemetry.meter_provider,
            spans=False,
        )
        self._eval_set_id = eval_set_id
        self._explanations = env.flag_setting(os.environ, env.OTEL_EVAL_EXPLANATIONS, env.DEFAULT_EXPLANATIONS)
        self.records = 0

    def add(self, report: ConversationReport) -> None:
        """Emits ``report``'s records."""
        for record in report_records(report, self._eval_set_id, explanations=self._explanations):
            self._emitters.emit(record)
            self.records += 1

    def close(self, timeout_s: float = 60.0) -> list[str]:
        """Exports what is buffered and shuts the providers down (the metrics' last export); what failed, one line
        each (empty: everything was exported)."""
        flushed = self._telemetry.flush(timeout_s)
        self._telemetry.shutdown()
        problems = [] if flushed else ["the OTLP export of the results did not finish in time"]
        for signal, endpoint in self._telemetry.export_failures.items():
            problems.append(f"the OTLP export of the {_SIGNALS.get(signal, signal)} to {endpoint} failed")
        return problems


def report_records(
    report: ConversationReport, eval_set_id: str | None, *, explanations: bool = True
) -> list[EvaluationRecord]:
    """The records online evaluation would emit for ``report``: one per invocation and metric (without their
    explanations when ``explanations`` is false: ``OTEL_EVAL_EXPLANATIONS``)."""
    from otel_eval.evaluation.records import records_of

    conversation = report.conversation
    eval_id = conversation.eval_case.eval_id if conversation.eval_case else None
    records: list[EvaluationRecord] = []
    for outcome in report.outcomes:
        records.extend(
            records_of(
                conversation.invocations,
                outcome.metric,
                outcome.result,
                eval_id=eval_id,
                eval_set_id=eval_set_id,
                explanations=explanations,
            )
        )
    return records


def say_undelivered(undelivered: Mapping[str, int], written: int) -> None:
    """One line per sink that did not deliver everything (stderr)."""
    for name, count in undelivered.items():
        click.echo(
            f"error: {name} sink: {count} of {written} score(s) not delivered (the backend refused them or stayed "
            f"unreachable past {env.OTEL_EVAL_SINKS_RETRY_SECONDS}); run again to write them",
            err=True,
        )


def sink_names_note(sinks: Sequence[Any]) -> str:
    """``phoenix, mlflow`` for a line about the sinks."""
    return ", ".join(getattr(getattr(s, "backend", None), "name", "console") for s in sinks)
