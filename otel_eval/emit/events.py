"""``gen_ai.evaluation.result`` events through the OpenTelemetry Logs API, in the evaluated invocation's context."""

from __future__ import annotations

import logging

from opentelemetry._logs import LoggerProvider, LogRecord, SeverityNumber

from otel_eval import semconv
from otel_eval.emit._context import invocation
from otel_eval.emit._sdk_logs import LogRecordWriter, prepared_log_record
from otel_eval.emit.attributes import record_attributes
from otel_eval.model.messages import EvaluationRecord
from otel_eval.version import __version__

logger = logging.getLogger(__name__)


_FAIL = (SeverityNumber.WARN, SeverityNumber.WARN.name)
"""A failed result's severity and its text: read once (an enum member read off its class, and its ``name``, are each a
call in Python 3.11)."""
_OTHER = (SeverityNumber.INFO, SeverityNumber.INFO.name)
"""Any other result's."""


class EvaluationEventEmitter:
    """Emits one ``gen_ai.evaluation.result`` log event per :class:`EvaluationRecord`.

    The event's trace id and span id are those of the evaluated invocation's span, so backends show it on that
    span; its attributes are :func:`~otel_eval.emit.attributes.record_attributes`.

    Args:
        logger_provider: Provider to emit through; the global one (resolved lazily) when None.
    """

    def __init__(self, logger_provider: LoggerProvider | None = None) -> None:
        self._writer = LogRecordWriter(semconv.INSTRUMENTATION_SCOPE, __version__, logger_provider)

    def emit(self, record: EvaluationRecord) -> None:
        """Emits the event for ``record``."""
        attributes = record_attributes(record)
        found = invocation(record.trace_id, record.span_id)
        severity, severity_text = _FAIL if record.label == semconv.LABEL_FAIL else _OTHER
        timestamp = int(record.evaluated_at * 1e9)
        # ``event_name`` (opentelemetry-api >= 1.35; we require >= 1.39) makes this an event, not a plain log.
        if found is not None:
            log_record = prepared_log_record(
                timestamp=timestamp,
                context=found[0],
                span_context=found[1],
                severity_number=severity,
                severity_text=severity_text,
                attributes=attributes,
                event_name=semconv.EVALUATION_RESULT_EVENT,
            )
        else:  # unusable ids: the API record takes the current context's span, as for any record without one
            log_record = LogRecord(
                timestamp=timestamp,
                severity_number=severity,
                severity_text=severity_text,
                attributes=attributes,
                event_name=semconv.EVALUATION_RESULT_EVENT,
            )
        self._writer.emit(log_record, plain=True)  # record_attributes: semconv keys, the record's plain values
