"""The Collector path: OTLP protobuf messages from ``otlp_spans`` -> whole traces -> evaluation requests.

The OpenTelemetry Collector's Kafka exporter (``encoding: otlp_proto``) writes one ``ExportTraceServiceRequest`` per
message: a message may hold many traces, and one trace may arrive over several messages (with
``partition_traces_by_id`` they share a key and a partition). :class:`TraceAssembler` gathers spans per trace id and
hands a trace on once no new span of it arrived for ``idle_timeout`` seconds; its invocations are then rebuilt with
the same reconstruction code as the in-process path (:func:`otel_eval.reconstruct.rebuild_traces`).

GenAI content log records (``EVENT_ONLY`` capture) come from ``otlp_logs`` (:func:`parse_otlp_logs`): each is kept
with its trace (:meth:`TraceAssembler.add_logs`, the same idle window; a trace's spans or logs both keep it open) and
joined onto its span before the rebuild. A record of a trace already handed on is counted ``late``; one whose span
never came ``no_trace`` (:meth:`TraceAssembler.take_log_drops`). For the join, partition both topics by trace id
with the same partition count, so that a trace's spans and logs reach the same worker (Kafka's range assignor gives
a consumer the same partition numbers of every topic).

Offsets: a partition's offset may only be committed up to the first message of a trace that is still open there, so
that a crash re-reads every span of every unfinished trace. :meth:`TraceAssembler.committable` gives that offset.

The evaluator's own spans (instrumentation scope ``otel_eval``, and their descendants in the same message) are
dropped: they carry the agent's trace id and would otherwise re-open evaluated traces.

Traces are keyed by (tenant, trace id) (:mod:`otel_eval.worker._tenancy`): trace ids are not secrets, so another
tenant's spans with the same id gather into a trace of their own. A span of a trace already handed on is counted
``late`` and dropped (it never opens the trace again: a forged invocation in a known trace is not scored); a new trace
of a tenant at ``max_open_traces_per_tenant`` is refused whole (:meth:`TraceAssembler.take_span_drops`).
"""

from __future__ import annotations

import functools
import importlib
import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from otel_eval import environment_variables as env
from otel_eval import semconv
from otel_eval._runtime.outages import SUMMARY_INTERVAL_S
from otel_eval.errors import InputError
from otel_eval.model.messages import EvaluationRequest
from otel_eval.reconstruct import Reads, rebuild_traces, without_evaluator_spans
from otel_eval.traces import Span
from otel_eval.traces.log_records import SpanLogRecord, attach_log_records
from otel_eval.worker._tenancy import DEFAULT_TENANT

logger = logging.getLogger(__name__)

_HANDED_ON_REMEMBERED = 65536
"""Traces handed on (or refused) that are remembered, to count a span or log record arriving after its trace as
late (or refused) rather than open the trace again."""
_SAID_REFUSED_REMEMBERED = 1024
"""Tenants whose refused traces were logged (once each)."""


def parse_otlp_spans(value: bytes | None, source: str) -> list[Span]:
    """The spans of one ``otlp_proto`` message (``ExportTraceServiceRequest`` / ``TracesData`` bytes).

    Raises:
        InputError: the bytes are not an OTLP protobuf trace message (the message is dead-lettered).
    """
    proto = _otlp_proto()
    message = _decode(value, source, proto.parse_traces_data, "trace", "ExportTraceServiceRequest", "resource_spans")
    spans: list[Span] = proto.spans_from_otlp_proto(message, source=source)
    return spans


def parse_otlp_logs(value: bytes | None, source: str) -> list[SpanLogRecord]:
    """The GenAI content log records of one ``otlp_proto`` logs message (``ExportLogsServiceRequest`` / ``LogsData``).

    Raises:
        InputError: the bytes are not an OTLP protobuf logs message (the message is dead-lettered).
    """
    from otel_eval.traces.otlp_logs import log_records_from_otlp_proto, parse_logs_data

    message = _decode(value, source, parse_logs_data, "logs", "ExportLogsServiceRequest", "resource_logs")
    return log_records_from_otlp_proto(message, source=source)


def parse_otlp_logs_by_resource(
    value: bytes | None, source: str, tenant_of: Callable[[Mapping[str, Any]], str]
) -> list[tuple[str, list[SpanLogRecord]]]:
    """The GenAI content log records of one ``otlp_proto`` logs message, per resource, each with the tenant
    ``tenant_of(resource attributes)`` names (the tenancy by resource attribute).

    Raises:
        InputError: the bytes are not an OTLP protobuf logs message (the message is dead-lettered).
    """
    from otel_eval.traces.otlp_logs import log_records_from_otlp_proto, parse_logs_data
    from otel_eval.traces.otlp_proto import attributes_from_proto

    message = _decode(value, source, parse_logs_data, "logs", "ExportLogsServiceRequest", "resource_logs")
    return [
        (
            tenant_of(attributes_from_proto(resource_logs.resource.attributes)),
            log_records_from_otlp_proto(_OneResource([resource_logs]), source=source),
        )
        for resource_logs in message.resource_logs
    ]


@dataclass(frozen=True, slots=True)
class _OneResource:
    """A logs message of one of a message's ``resource_logs``."""

    resource_logs: list[Any]


def _decode(
    value: bytes | None, source: str, parse: Callable[[bytes], Any], what: str, request: str, content: str
) -> Any:
    """``parse(value)``, or an :class:`InputError` naming ``source`` when it is empty, not protobuf, or has no
    ``content`` (``resource_spans`` / ``resource_logs``)."""
    ProtoDecodeError = _otlp_proto().ProtoDecodeError

    if not value:
        raise InputError(f"{source}: empty message, expected an OTLP {request} (otlp_proto)")
    try:
        message = parse(value)
    except ProtoDecodeError as exc:
        raise InputError(f"{source}: not an OTLP protobuf {what} message (otlp_proto): {exc}") from None
    if not getattr(message, content):
        raise InputError(f"{source}: {len(value)} bytes decode to an OTLP message without {content}")
    return message


@functools.cache
def _otlp_proto() -> ModuleType:
    """:mod:`otel_eval.traces.otlp_proto`, imported on first use (protobuf is slow to import) and then at the cost
    of a call (an import statement in a function looks the module up again, and fails to find a ``__path__``, per
    message)."""
    return importlib.import_module("otel_eval.traces.otlp_proto")


TraceKey = tuple[str, str]
"""(tenant, trace id): a trace is one tenant's; another tenant's spans with the same trace id are another trace."""


@dataclass(slots=True)
class AssembledTrace:
    """The spans of one trace, gathered from one or more messages."""

    trace_id: str
    spans: list[Span] = field(default_factory=list)
    last_seen: float = 0.0
    first_offsets: dict[int, int] = field(default_factory=dict)
    """Partition -> offset of the first message that carried a span of this trace."""
    span_ids: set[str] = field(default_factory=set)
    """Spans already gathered: a message read twice (after a retry) adds nothing."""
    messages: dict[tuple[int, int], Any] = field(default_factory=dict)
    """(partition, offset) -> the Kafka record that carried spans of this trace (dead-lettered if it cannot be
    rebuilt in time)."""
    log_records: list[SpanLogRecord] = field(default_factory=list)
    """GenAI content log records of the trace (``otlp_logs``), joined onto its spans before the rebuild."""
    first_log_offsets: dict[int, int] = field(default_factory=dict)
    """``otlp_logs`` partition -> offset of the first message that carried a log record of this trace."""
    unmatched_log_records: int = 0
    """Set by :func:`requests_from_trace`: records whose span is not among the trace's spans."""
    tenant: str = DEFAULT_TENANT
    """Whose trace it is (see :mod:`otel_eval.worker._tenancy`)."""
    first_start_ns: int = 0
    last_end_ns: int = 0
    """The earliest span start and latest span end gathered (Unix ns; a start of 0 is not taken): its age."""
    read_to: dict[Any, int] | None = None
    """Once idle (until seen again): the end offset of each partition it was read from, as the broker gave it then (see
    :mod:`otel_eval.worker._read_barrier`); ``{}`` when the broker could not say."""

    @property
    def key(self) -> TraceKey:
        """(tenant, trace id)."""
        return self.tenant, self.trace_id

    @property
    def partition(self) -> int:
        """The partition the trace (first) arrived on: where its results are published."""
        return min(self.first_offsets) if self.first_offsets else min(self.first_log_offsets, default=0)


@dataclass(frozen=True, slots=True)
class _Closed:
    """A trace no longer gathered: handed on (``late``) or refused (its tenant's bound); what its later spans are
    counted as, and the partitions it was read from (a rewind of one of them forgets it: it is read again)."""

    reason: str
    partitions: frozenset[int] = frozenset()
    log_partitions: frozenset[int] = frozenset()


class TraceAssembler:
    """Gathers spans per (tenant, trace id) until the trace has been idle for ``idle_timeout`` seconds.

    A span or log record of a trace already handed on is counted ``late`` and dropped: it never re-opens the trace
    (a forged invocation with a known trace id is not scored) and never joins another tenant's trace of the same id.
    A new trace of a tenant that has ``max_open_traces_per_tenant`` open is refused whole: its spans and log records
    are counted ``tenant_max_open_traces`` (:meth:`take_span_drops`, :meth:`take_log_drops`).

    Args:
        idle_timeout: seconds without a new span after which a trace is complete.
        max_open_traces: traces gathered at once; beyond it the oldest is handed on early.
        max_spans_per_trace: spans per trace: a trace is handed on when it has this many (not held open until
            idle), and its later spans are dropped (counted ``max_spans_per_trace``).
        max_open_traces_per_tenant: traces one tenant may have open at once (None: only ``max_open_traces``).
        max_trace_age: seconds from a trace's earliest span start to its latest span end (the spans' timestamps, not
            when the worker read them: a backlog or a slow batch ages no trace) after which it is handed on as at
            ``max_spans_per_trace``, its later spans dropped (counted ``max_trace_age``).
        clock: monotonic seconds (tests may pass their own).
    """

    def __init__(
        self,
        idle_timeout: float,
        *,
        max_open_traces: int = env.DEFAULT_MAX_OPEN_TRACES,
        max_spans_per_trace: int = env.DEFAULT_MAX_SPANS_PER_TRACE,
        max_open_traces_per_tenant: int | None = None,
        max_trace_age: float = env.DEFAULT_MAX_TRACE_AGE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.idle_timeout = idle_timeout
        self.max_open_traces = max_open_traces
        self.max_spans_per_trace = max_spans_per_trace
        self.max_open_traces_per_tenant = max_open_traces_per_tenant
        self._max_age_ns = int(max_trace_age * 1e9)
        self.clock = clock
        """Monotonic seconds: what idleness is measured by."""
        self._open: dict[TraceKey, AssembledTrace] = {}
        self._per_tenant: Counter[str] = Counter()
        self._forced: list[AssembledTrace] = []
        self._closed: OrderedDict[TraceKey, _Closed] = OrderedDict()
        self._span_drops: Counter[str] = Counter()
        self._log_drops: Counter[str] = Counter()
        self._said_refused: set[str] = set()
        self._early_unsaid = 0
        self._early_said_at: float | None = None

    def __len__(self) -> int:
        return len(self._open)

    def open_traces(self, tenant: str) -> int:
        """Traces of ``tenant`` open now."""
        return self._per_tenant[tenant]

    def _trace(self, key: TraceKey, drops: Counter[str], now: float, count: int = 1) -> AssembledTrace | None:
        """The open trace ``key`` seen ``now`` (opened when new); None (``count`` items counted in ``drops``) when it
        was handed on already or its tenant is at its bound. Open traces are kept in the order they were last seen."""
        trace = self._open.get(key)
        if trace is not None:
            if trace.last_seen != now:
                trace.last_seen, trace.read_to = now, None  # idle again later: the end offsets of then
                self._open[key] = self._open.pop(key)
            return trace
        closed = self._closed.get(key)
        if closed is not None:
            drops[closed.reason] += count
            return None
        tenant = key[0]
        limit = self.max_open_traces_per_tenant
        if limit is not None and self._per_tenant[tenant] >= limit:
            self._remember(key, _Closed(semconv.DROP_TENANT_MAX_OPEN_TRACES))
            drops[semconv.DROP_TENANT_MAX_OPEN_TRACES] += count
            if tenant not in self._said_refused and len(self._said_refused) < _SAID_REFUSED_REMEMBERED:
                self._said_refused.add(tenant)
                logger.warning(
                    "tenant %r has %d traces open (max_open_traces_per_tenant): its new traces are refused, counted "
                    "as otel_eval.spans.dropped{%s=%s} (said once per tenant)",
                    tenant,
                    limit,
                    semconv.OTEL_EVAL_DROP_REASON,
                    semconv.DROP_TENANT_MAX_OPEN_TRACES,
                )
            return None
        if len(self._open) >= self.max_open_traces:
            oldest = next(iter(self._open.values()))
            self._say_early(oldest.trace_id)
            self._forced.append(self._pop(oldest.key))
        trace = self._open[key] = AssembledTrace(trace_id=key[1], tenant=tenant, last_seen=now)
        self._per_tenant[tenant] += 1
        return trace

    def _say_early(self, trace_id: str) -> None:
        """Logs a trace handed on early (``max_open_traces``): the first one, then a count at most once a minute
        (:data:`~otel_eval._runtime.outages.SUMMARY_INTERVAL_S`): a backlog hands on thousands."""
        self._early_unsaid += 1
        now = self.clock()
        if self._early_said_at is not None and now - self._early_said_at < SUMMARY_INTERVAL_S:
            return
        logger.warning(
            "%d traces open (max_open_traces): handed on %d trace(s) early, the last %s (said at most once a minute)",
            len(self._open),
            self._early_unsaid,
            trace_id,
        )
        self._early_unsaid, self._early_said_at = 0, now

    def _pop(self, key: TraceKey, reason: str = semconv.DROP_LATE) -> AssembledTrace:
        """Removes the open trace ``key``; its later spans and log records are dropped and counted as ``reason``."""
        trace = self._open.pop(key)
        self._per_tenant[trace.tenant] -= 1
        if not self._per_tenant[trace.tenant]:
            del self._per_tenant[trace.tenant]
        self._remember(key, _Closed(reason, frozenset(trace.first_offsets), frozenset(trace.first_log_offsets)))
        return trace

    def _remember(self, key: TraceKey, closed: _Closed) -> None:
        self._closed[key] = closed
        self._closed.move_to_end(key)
        while len(self._closed) > _HANDED_ON_REMEMBERED:
            self._closed.popitem(last=False)

    def add_logs(
        self, partition: int, offset: int, records: Iterable[SpanLogRecord], *, tenant: str = DEFAULT_TENANT
    ) -> None:
        """Adds the GenAI content log records of ``tenant`` in the ``otlp_logs`` message at ``partition``/``offset``;
        a record of a trace already handed on is counted ``late``, one past ``max_spans_per_trace`` records
        ``max_spans_per_trace``, one of a refused trace ``tenant_max_open_traces``."""
        now = self.clock()
        for record in records:
            trace = self._trace((tenant, record.trace_id), self._log_drops, now)
            if trace is None:
                continue
            trace.first_log_offsets.setdefault(partition, offset)
            if len(trace.log_records) >= self.max_spans_per_trace:
                self._log_drops[semconv.DROP_MAX_SPANS_PER_TRACE] += 1
                continue
            trace.log_records.append(record)

    def take_log_drops(self) -> Counter[str]:
        """Log records dropped since the last call, by reason (``late``, ``max_spans_per_trace``,
        ``max_trace_age``, ``tenant_max_open_traces``)."""
        drops, self._log_drops = self._log_drops, Counter()
        return drops

    def take_span_drops(self) -> Counter[str]:
        """Spans dropped since the last call, by reason (``late``, ``max_spans_per_trace``,
        ``max_trace_age``, ``tenant_max_open_traces``)."""
        drops, self._span_drops = self._span_drops, Counter()
        return drops

    def add(
        self,
        partition: int,
        offset: int,
        spans: Iterable[Span],
        message: Any = None,
        *,
        tenant: str | None = DEFAULT_TENANT,
        tenant_of: Callable[[Span], str] | None = None,
    ) -> None:
        """Adds the spans of the message at ``partition``/``offset`` (``message``: the Kafka record itself), all of
        ``tenant``, or (``tenant`` None) each of ``tenant_of(span)``'s."""
        now = self.clock()
        for span in without_evaluator_spans(list(spans)):
            owner = tenant if tenant is not None or tenant_of is None else tenant_of(span)
            trace = self._trace((owner or DEFAULT_TENANT, span.trace_id), self._span_drops, now)
            if trace is None:
                continue
            trace.first_offsets.setdefault(partition, offset)
            if span.span_id in trace.span_ids:
                continue
            if message is not None:
                trace.messages.setdefault((partition, offset), message)
            trace.spans.append(span)
            trace.span_ids.add(span.span_id)
            if span.start_time_ns and (not trace.first_start_ns or span.start_time_ns < trace.first_start_ns):
                trace.first_start_ns = span.start_time_ns
            trace.last_end_ns = max(trace.last_end_ns, span.end_time_ns)
            # Full or old: handed on now. Kept open, a trace that never goes idle (a root span around a process's
            # whole life) would hold its partition's committed offset at its first message, and the records that
            # carried its later spans, for as long as its spans keep coming.
            if len(trace.spans) >= self.max_spans_per_trace:
                self._forced.append(self._pop(trace.key, semconv.DROP_MAX_SPANS_PER_TRACE))
            elif trace.first_start_ns and trace.last_end_ns - trace.first_start_ns >= self._max_age_ns:
                self._forced.append(self._pop(trace.key, semconv.DROP_MAX_TRACE_AGE))

    def idle(self) -> list[AssembledTrace]:
        """The open traces idle for ``idle_timeout`` by now, the longest idle first (still open)."""
        now = self.clock()
        idle = []
        for trace in self._open.values():  # in the order last seen
            if now - trace.last_seen < self.idle_timeout:
                break
            idle.append(trace)
        return idle

    def ready(
        self, *, everything: bool = False, held: Callable[[AssembledTrace], bool] | None = None
    ) -> list[AssembledTrace]:
        """Removes and returns the traces handed on early (``max_open_traces``, ``max_spans_per_trace``,
        ``max_trace_age``) and those idle for ``idle_timeout`` that ``held`` does not hold back (all of them with
        ``everything``)."""
        done, self._forced = self._forced, []
        for trace in list(self._open.values()) if everything else self.idle():
            if everything or held is None or not held(trace):
                done.append(self._pop(trace.key))
        return done

    def committable(self, partition: int, next_offset: int, *, logs: bool = False) -> int:
        """The offset that may be committed on ``partition`` (of ``otlp_logs`` with ``logs``): ``next_offset``, held
        back by open traces."""
        held = [
            offsets[partition]
            for t in self._open.values()
            if partition in (offsets := t.first_log_offsets if logs else t.first_offsets)
        ]
        return min([next_offset, *held])

    def forget(self, partitions: Iterable[int], *, logs: bool = False) -> int:
        """Drops the open traces that started on ``partitions`` (of ``otlp_logs`` with ``logs``; revoked: another
        worker re-reads them; rewound: this one does), and the memory of the traces handed on from them (so that
        what is read again is gathered again; the ledger skips what was evaluated). Returns the open ones dropped."""
        gone = set(partitions)
        lost = [k for k, t in self._open.items() if gone & set(t.first_log_offsets if logs else t.first_offsets)]
        for key in lost:
            self._pop(key)
        for key in [k for k, c in self._closed.items() if gone & (c.log_partitions if logs else c.partitions)]:
            del self._closed[key]
        return len(lost)


def requests_from_trace(trace: AssembledTrace, reads: Reads = Reads.ALL) -> list[EvaluationRequest]:
    """One request per invocation rebuilt from the trace's spans, as the in-process path builds them, with the parts
    ``reads`` asks for (the worker's core's :meth:`~otel_eval.evaluation.core.EvaluationCore.reads`).

    The worker's core applies its configured criteria and eval set to each (the request carries none).
    """
    if trace.log_records:
        trace.unmatched_log_records = len(attach_log_records(trace.spans, trace.log_records))
    requests: list[EvaluationRequest] = []
    for rebuilt in rebuild_traces(trace.spans, reads=reads):
        for warning in rebuilt.warnings:
            logger.debug("%s", warning)
        requests.extend(EvaluationRequest(invocations=[invocation]) for invocation in rebuilt.invocations)
    return requests
