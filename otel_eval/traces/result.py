"""What reading one trace source returns."""

from __future__ import annotations

from dataclasses import dataclass, field

from otel_eval.traces.span import Span


@dataclass(slots=True)
class TraceReadResult:
    """The spans read from one file or payload, the warnings met (skipped spans and values), and the format found.

    ``format`` is one of the ``FORMAT_*`` names in :mod:`otel_eval.traces.formats`.
    """

    spans: list[Span] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    format: str = ""
