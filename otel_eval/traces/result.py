"""What reading one trace source returns."""

from __future__ import annotations

from dataclasses import dataclass, field

from otel_eval.traces.log_records import SpanLogRecord
from otel_eval.traces.span import Span


@dataclass(slots=True)
class TraceReadResult:
    """The spans (or GenAI content log records) read from one file or payload, the warnings met (skipped spans and values), and the format found.

    ``format`` is one of the ``FORMAT_*`` names in :mod:`otel_eval.traces.formats`.
    """

    spans: list[Span] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    format: str = ""
    log_records: list[SpanLogRecord] = field(default_factory=list)
    """GenAI content log records (OTLP log files): joined onto their spans before the rebuild
    (:func:`otel_eval.traces.log_records.attach_log_records`)."""
    size: int = 0
    """Bytes read (the file's size; 0 when read from a payload)."""
