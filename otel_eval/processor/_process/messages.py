"""The messages between the processor and its evaluation process (``isolation="process"``), each a ``NamedTuple``
of plain values (:mod:`otel_eval.processor._process.framing` frames them), and the tuples that carry span
starts, ended spans and log records in a :class:`Batch`."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from otel_eval.model import EvalConfig
from otel_eval.processor._settings import ProcessorSettings

Start = tuple[int, int, int, bool, int, bool]
"""trace id, span id, parent span id (0: none), parent is remote, scope number, started under suppressed
instrumentation. Only sampled spans are shipped, so their trace flags are not."""
Ended = tuple[Any, ...]
"""An ended span's fields, in :func:`~otel_eval.processor._process.wire.encode_span`'s order."""
NewOrigins = tuple[dict[int, dict[str, Any]], dict[int, tuple[str, "str | None"]]]
"""Resource attributes and scope (name, version) by number."""
LogTuple = tuple[int, int, int, "str | None", "int | None", "int | None", "dict[str, Any] | None", Any]
"""trace id, span id, trace flags, event name, timestamp, observed timestamp, attributes, body."""


class ChildSettings(NamedTuple):
    """What the child's engine is built from: the processor's criteria and settings, how long its roots are held
    for their scores (None: no ``enrich=``), and whether each request's records go back (the agent has sinks)."""

    criteria: Mapping[str, Any] | EvalConfig | None
    settings: ProcessorSettings
    enrichment_wait_seconds: float | None
    relay_records: bool


class Config(NamedTuple):
    """First message to the child: the processor's settings, and the traces an earlier child lost part of."""

    settings: ChildSettings
    lost_traces: list[int]


class Batch(NamedTuple):
    """Span starts, ended spans and content log records since the last batch, the resources and scopes they refer to
    that were numbered since, and the traces the agent's process dropped a span of, with the reason (shed, or on a
    full queue: the child drops them whole)."""

    starts: list[Start | int]
    """In start order; a start whose span is among ``ends`` is its position there (its fields are the ended span's)."""
    ends: list[Ended]
    logs: list[LogTuple]
    origins: NewOrigins
    dropped: dict[int, str]


class Flush(NamedTuple):
    """Evaluate and export what was sent, within ``timeout_millis`` of ``sent_at``; answered by a :class:`Reply`."""

    timeout_millis: int
    sequence: int
    sent_at: float = 0.0  # time.time() when sent (0: unknown); see time_left_millis


class Shutdown(NamedTuple):
    """Drain and stop within ``timeout_millis`` of ``sent_at``; answered by a :class:`Reply`, then the child exits."""

    timeout_millis: int
    sequence: int
    sent_at: float = 0.0


def time_left_millis(message: Flush | Shutdown) -> int:
    """What is left of ``message``'s timeout when it is read: a child still starting, or busy with an earlier
    message, reads it late, and would otherwise take its whole timeout from then, past its sender's deadline."""
    if not message.sent_at:
        return message.timeout_millis
    waited = max(0.0, time.time() - message.sent_at) * 1000
    return max(0, int(message.timeout_millis - waited))


class Reply(NamedTuple):
    """The child's answer to the :class:`Flush` or :class:`Shutdown` numbered ``sequence``, with its counts."""

    ok: bool
    sequence: int
    stats: dict[str, int]


class Enriched(NamedTuple):
    """From the child: a local root's score attributes (``enrich=``: the agent's process holds the root span)."""

    trace_id: int
    span_id: int
    scores: dict[str, Any]


class Records(NamedTuple):
    """From the child: one request's records, for the ``sinks`` of the agent's process."""

    records: list[Any]


ToChild = Config | Batch | Flush | Shutdown
FromChild = Reply | Enriched | Records
MESSAGES = (Config, Batch, Flush, Shutdown, Reply, Enriched, Records)
