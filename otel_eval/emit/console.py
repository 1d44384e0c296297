"""Scores on the console: a record sink that prints one line per score, like the SDK's ``ConsoleSpanExporter``.

For seeing an agent's scores while developing it (``EvaluationSpanProcessor(sinks=[ConsoleRecordSink()])`` or
``OTEL_EVAL_CONSOLE=true``); production scores go through the OpenTelemetry providers.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from typing import IO

from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord

_EXPLANATION_WIDTH = 160


def format_record(record: EvaluationRecord) -> str:
    """``otel-eval: <metric> <score> <label> agent=<name> trace_id=<id> span_id=<id>`` and, for a FAILED or
    NOT_EVALUATED result, `` — <explanation>`` (one line, cut to 160 characters)."""
    score = "-" if record.score is None else f"{record.score:.4g}"
    line = (
        f"otel-eval: {record.metric_name} {score} {record.label} agent={record.agent_name or '-'} "
        f"trace_id={record.trace_id} span_id={record.span_id}"
    )
    if record.eval_status in (EvalStatus.FAILED, EvalStatus.NOT_EVALUATED):
        why = record.explanation or (record.error_type if record.error_type != record.label else None)
        explanation = " ".join((why or "").split())  # an error type that repeats the label adds nothing
        if len(explanation) > _EXPLANATION_WIDTH:
            explanation = explanation[: _EXPLANATION_WIDTH - 1] + "…"
        if explanation:
            line += f" — {explanation}"
    return line + "\n"


class ConsoleRecordSink:
    """A :data:`~otel_eval.emit.RecordSink` writing one line per record to ``out`` (stdout when None).

    Args:
        out: The text stream written to; stdout (looked up at each write, so redirection is honoured) when None.
        formatter: Turns one record into its line (with the newline).
    """

    def __init__(
        self, out: IO[str] | None = None, formatter: Callable[[EvaluationRecord], str] = format_record
    ) -> None:
        self._out = out
        self._formatter = formatter
        self._lock = threading.Lock()  # records of concurrent requests never interleave within a line

    def __call__(self, records: Sequence[EvaluationRecord]) -> None:
        """Writes ``records``, one line each, and flushes."""
        text = "".join(self._formatter(record) for record in records)
        with self._lock:
            out = self._out or sys.stdout
            out.write(text)
            out.flush()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(out={getattr(self._out, 'name', self._out)!r})"
