"""The processor's background side: ended spans -> per-trace buffers -> finished subtrees -> evaluation requests.

Used by the ``OtelEvalSpanProcessor`` thread only, so it needs no locking. One :meth:`SpanAssembler.step` takes the
spans that started and ended since the last step, completes every subtree whose local root and descendants have all
ended (:class:`~otel_eval.processor._open_spans.OpenSpans`), hands roots that waited too long and traces that went idle on, and
exports the resulting requests under suppressed instrumentation. :class:`RequestBuilder` turns a finished subtree into
requests (:mod:`otel_eval.processor._request_builder`).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from functools import partial
from itertools import chain

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, Context, attach, detach, get_current, set_value
from opentelemetry.sdk.trace import ReadableSpan, Span
from opentelemetry.trace import TraceFlags

from otel_eval import semconv
from otel_eval._runtime.collector import collections_resumed
from otel_eval._runtime.deadline import DeadlineExecutor, RecordTimeoutError
from otel_eval._runtime.log_filters import DuplicateLogFilter
from otel_eval.emit.enrichment import RootSpanEnricher
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.environment_variables import DEFAULT_MAX_TRACE_AGE
from otel_eval.model.messages import EvaluationRequest
from otel_eval.processor._buffers import Rejection, TraceBuffers, top_span_names
from otel_eval.processor._logs import LogJoin
from otel_eval.processor._open_spans import UNDER_ABANDONED, IncompleteCounter, OpenSpans, say_incomplete
from otel_eval.processor._request_builder import RequestBuilder
from otel_eval.processor._selection import (
    SamplePriority,
    in_sample,
    is_local_root,
    is_own_traffic,
    mark_rescued,
)
from otel_eval.reconstruct.plain import PlainRequest
from otel_eval.transport.base import InvocationExporter

logger = logging.getLogger(__name__)
logger.addFilter(DuplicateLogFilter())

DEFAULT_REBUILD_TIMEOUT = 30.0
"""Seconds one trace's invocations may take to rebuild before the trace is dropped."""
INLINE_REBUILD_SPANS = 256
"""Traces of at most this many spans are rebuilt on the background thread itself; larger ones on a step thread
under :data:`DEFAULT_REBUILD_TIMEOUT` (every rebuild is linear in the spans, so only a large trace can outlast it)."""
_MAX_SUPPRESSED_MARKS = 4096
_SAMPLED = TraceFlags.SAMPLED
_LOW_64_BITS = (1 << 64) - 1
_SUPPRESSED = set_value(_SUPPRESS_INSTRUMENTATION_KEY, True, Context())
"""The context requests are exported in from an empty one (made once)."""
_SWEEP_SECONDS = 0.1
"""At most this often, the idle sweeps walk every buffered and tracked trace (steps run at every root end)."""

RootKey = tuple[int, int]
"""(trace id, span id) of a local root span."""
_Batches = list[tuple[RootKey | None, list[ReadableSpan]]]
"""Subtrees to hand on, each with its local root (None: a trace gone idle without one)."""


@dataclass(slots=True)
class _StepCounts:
    # ``defaultdict(int)``, made in C: a step's counts are mostly empty, and ``Counter()`` costs a Python call chain.
    spans: defaultdict[str, int] = field(default_factory=partial(defaultdict, int))
    invocations: defaultdict[str, int] = field(default_factory=partial(defaultdict, int))


class SpanAssembler:
    """Buffers spans by trace and turns finished subtrees into evaluation requests for ``exporter``.

    Args:
        buffers: The bounded per-trace buffers.
        builder: Rebuilds invocations and wraps them in requests.
        exporter: The transport.
        pipeline: Drop, sampled and idle counters.
        idle_timeout: Seconds after a trace's last span before it is handed on without its root (one not seen
            starting here, or no longer tracked), and at most seconds a local root waits for its open descendants.
        suppressed: Where the ids of spans started under suppressed instrumentation are kept (skipped when they end).
        enricher: Root-span enrichment, when the processor wraps the user's exporting processor.
        open_spans: Open-span bookkeeping (completion without guessing).
        incomplete: Counts roots handed on with descendants still open.
        sample_bound: The processor's sampling bound (:func:`~otel_eval.processor._selection.sampling_bound`).
        priority: When set, spans of every trace arrive (buffered under the same limits) and each is decided when
            its local root ends, by the session its spans name or else its trace id: a left-out local root is
            evaluated if ``priority`` rescues it, else its buffered subtree is discarded, and a left-out trace that
            goes idle without its root is discarded (see :mod:`otel_eval.processor._selection`).
        rebuild_timeout: Seconds (:data:`DEFAULT_REBUILD_TIMEOUT` when None) the rebuild of one trace of more than :data:`INLINE_REBUILD_SPANS` spans may take.
            It runs on its own thread; past the deadline the trace
            is dropped (``rebuild_timeout``) and its thread abandoned to finish on its own (threads cannot be killed;
            see :mod:`otel_eval._runtime.deadline`), so the traces behind it are not delayed.
        logs: GenAI content log records joined onto the spans before the rebuild (:mod:`otel_eval.processor._logs`).
        max_age: Seconds from its first span start that a trace under way (its local root running here with a span
            under it open) is waited for, however long no span ends; then what is buffered is handed on as it is (``otel_eval.invocations.incomplete``) and its later spans are dropped
            (``max_trace_age``).
    """

    def __init__(
        self,
        *,
        buffers: TraceBuffers,
        builder: RequestBuilder,
        exporter: InvocationExporter,
        pipeline: PipelineMetrics,
        idle_timeout: float,
        suppressed: dict[int, None],
        enricher: RootSpanEnricher | None,
        open_spans: OpenSpans,
        incomplete: IncompleteCounter,
        sample_bound: int | None = None,
        priority: SamplePriority | None = None,
        rebuild_timeout: float | None = None,
        logs: LogJoin | None = None,
        max_age: float = DEFAULT_MAX_TRACE_AGE,
    ) -> None:
        self.buffers = buffers
        self._max_age = max_age
        self._builder = builder
        self._exporter = exporter
        self._pipeline = pipeline
        self._idle_timeout = idle_timeout
        self._suppressed = suppressed
        self._enricher = enricher
        self.open_spans = open_spans
        self._waiting: dict[int, int] = {}  # trace id -> its roots waiting for open descendants (this thread's)
        self.waiting_traces: Container[int] = self._waiting.keys()
        """Ids of the traces with a root waiting for open descendants: a read-only view, for ``on_end`` (which wakes
        the thread when a span of such a trace ends, :attr:`~otel_eval.processor._intake.SpanIntake.waiting`)."""
        self._incomplete = incomplete
        self._sample_bound = sample_bound
        self._priority = priority if sample_bound is not None else None
        self._track_bound = None if self._priority is not None else sample_bound
        self._pending: dict[RootKey, float] = {}  # root -> when it stops waiting; in deadline order
        self._rescued: dict[RootKey, str] = {}  # root priority sampling rescued -> why, until it is handed on
        self._next_sweep = 0.0
        timeout = DEFAULT_REBUILD_TIMEOUT if rebuild_timeout is None else rebuild_timeout
        self.rebuild = DeadlineExecutor(timeout, name="OtelEvalRebuild")
        self.logs = logs

    def step(
        self,
        spans: Iterable[ReadableSpan],
        *,
        final: bool,
        dropped_at_intake: tuple[int, Iterable[int]],
        shed: tuple[int, Iterable[int]],
        starts: Iterable[tuple[Span, bool]] = (),
        rejected: Iterable[tuple[int, str]] = (),
    ) -> None:
        """Ingests ``spans``, hands on finished and idle subtrees; with ``final`` drops what is still incomplete.

        Args:
            spans: Spans that ended since the last step, in end order.
            final: The processor is shutting down.
            dropped_at_intake: Spans ``on_end`` dropped on a full intake queue since the last step, and the ids of
                their traces: each such trace is dropped whole (counted once), or its other spans would rebuild into
                a partial invocation.
            shed: The same for the spans ``on_end`` shed while the transport was full.
            starts: Spans that started since the last step (at least those of ``spans``), in start order, each with
                whether it started under suppressed instrumentation (then marked to be skipped, not tracked).
            rejected: Traces to drop whole, with the reason (what is buffered now and their later spans).
        """
        now = time.monotonic()
        counts = _StepCounts()
        for reason, (dropped, traces) in (
            (semconv.DROP_QUEUE_FULL, dropped_at_intake),
            (semconv.DROP_TRANSPORT_QUEUE_FULL, shed),
        ):
            if dropped:  # no entry (and no call below) for a zero: most steps drop nothing
                counts.spans[reason] += dropped
                for trace_id in traces:
                    self._count(self.buffers.reject(trace_id, reason), counts, first_drop=0)
        for trace_id, reason in rejected:
            self._count(self.buffers.reject(trace_id, reason), counts, first_drop=0)
        self._track(starts, now)
        if self.logs is not None:  # before the spans: a record is emitted before its span ends
            self.logs.ingest(now)
        batches: _Batches = []
        # Whether the transport has room, once per step: it only gains room meanwhile (requests are handed on below).
        capacity = self._exporter.has_capacity()
        self._ingest(spans, now, batches, counts, capacity)
        batches += [(root, self.buffers.take_subtree(*root)) for root in self._stop_waiting(now, final=final)]
        if now >= self._next_sweep or final:
            self._next_sweep = now + min(_SWEEP_SECONDS, self._idle_timeout / 4)
            under_way = self.open_spans.under_way
            idle = [
                spans for spans in self.buffers.take_idle(now, self._idle_timeout, under_way) if self._in_sample(spans)
            ]
            self._pipeline.idle_flushed(len(idle))
            batches += [(None, trace_spans) for trace_spans in idle]
            batches += self._overdue(now)
            self.open_spans.forget_idle(now, self._idle_timeout)
            if self.logs is not None and self.logs.buffered_traces:
                live = set(self.buffers.open_trace_ids())
                self.logs.sweep(now, self._idle_timeout, lambda t: t in live or self.open_spans.tracks(t))
        if final:
            for trace_spans in self.buffers.take_everything():
                if not self._in_sample(trace_spans):
                    continue  # left out by its trace id, root not ended: undecided, not a loss
                counts.spans[semconv.DROP_SHUTDOWN] += len(trace_spans)
                counts.invocations[semconv.DROP_SHUTDOWN] += 1
        for rejection in self.buffers.settle():  # the byte limit, over what stays buffered after this step
            self._count(rejection, counts, first_drop=1)
        for reason, count in counts.spans.items():
            self._pipeline.spans_dropped(reason, count)
        for reason, count in counts.invocations.items():
            self._pipeline.invocations_dropped(reason, count)
            logger.warning("dropped %d trace(s) before evaluation: %s", count, reason)  # one line per step
        if batches:
            # The requests are exported under suppressed instrumentation, attached once per step (not per subtree).
            current = get_current()  # empty on this thread, but for a flush stepping on the caller's
            token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True, current) if current else _SUPPRESSED)
            try:
                for root, trace_spans in batches:
                    self._hand_on(root, trace_spans)
            finally:
                detach(token)
        if final and self.logs is not None:
            self.logs.drop_everything()
        if self._enricher is not None:
            self._enricher.release_expired(now)

    @property
    def holds_nothing(self) -> bool:
        """Nothing buffered, tracked, waiting or held: a step given no new work would do nothing (its idle sweeps
        and expiries have nothing to look at)."""
        logs = self.logs
        return not (
            self._pending
            or self.buffers.open_traces
            or self.open_spans.tracked_traces
            or (logs is not None and logs.buffered_traces)
            or self.holds_roots
        )

    @property
    def holds_roots(self) -> bool:
        """Roots are held for their scores (``enrich=``): released within seconds, so the engine keeps stepping at its
        short period for them (what else is held waits for the idle timeout)."""
        return self._enricher is not None and bool(self._enricher.held_count)

    @property
    def waiting_roots(self) -> int:
        """Local roots that ended and wait for open descendants."""
        return len(self._pending)

    def shed_open_traces(self) -> None:
        """The transport is full and ``on_end`` starts shedding: every partly buffered trace is dropped now."""
        counts = _StepCounts()
        for trace_id in self.buffers.open_trace_ids():
            self._count(self.buffers.reject(trace_id, semconv.DROP_TRANSPORT_QUEUE_FULL), counts, first_drop=0)
        for reason, count in counts.spans.items():
            self._pipeline.spans_dropped(reason, count)
        for reason, count in counts.invocations.items():
            self._pipeline.invocations_dropped(reason, count)

    def _mark_suppressed(self, span_id: int) -> None:
        marks = self._suppressed
        marks[span_id] = None
        if len(marks) > _MAX_SUPPRESSED_MARKS:  # marks of spans that never ended: forget the oldest
            marks.pop(next(iter(marks)), None)

    def _track(self, starts: Iterable[tuple[Span, bool]], now: float) -> None:
        """Records the starts for the open-span bookkeeping; marks those made under suppressed instrumentation."""
        bound, marks, started = self._track_bound, self._suppressed, self.open_spans.started
        for span, suppressed in starts:
            context = span.context
            if context is None:
                continue
            # A SpanContext is a tuple: (trace id, span id, is remote, trace flags, ...), read at once.
            trace_id, span_id, _, flags = context[:4]
            if suppressed:
                self._mark_suppressed(span_id)
            elif (
                flags & _SAMPLED
                and (bound is None or (trace_id & _LOW_64_BITS) < bound)  # is_sampled, without a call per span
                and not (marks and span_id in marks)
                and not is_own_traffic(span)
            ):
                parent = span.parent
                started(trace_id, span_id, parent[1] if parent is not None and not parent[2] else None, now)

    def _ingest(
        self, spans: Iterable[ReadableSpan], now: float, batches: _Batches, counts: _StepCounts, capacity: bool
    ) -> None:
        """Buffers the ended ``spans`` (each of a trace being evaluated), in end order; the subtrees they complete go
        to ``batches`` at once (a step that catches up on a backlog does not hold them all against
        ``max_open_traces``). One loop for the step's spans: what it calls is looked up once."""
        suppressed, ended, add, pending = self._suppressed, self.open_spans.ended, self.buffers.add, self._pending
        for span in spans:
            context = span.context
            if context is None:
                continue
            trace_id, span_id = context[:2]
            if suppressed and span_id in suppressed:
                suppressed.pop(span_id, None)
                continue  # started under suppressed instrumentation: the evaluator's own work
            under = ended(trace_id, span_id, now)
            if under is None:
                if is_own_traffic(span):  # a tracked span passed this check when it started
                    continue
                root = is_local_root(span)
            elif under == UNDER_ABANDONED:
                counts.spans[semconv.DROP_INCOMPLETE] += 1  # its root was handed on without it
                continue
            else:
                # Only a span tracked as its own root can be a local root (asked only of those: one an invocation).
                root = under == span_id and is_local_root(span)
            if capacity:
                outcome = add(span, trace_id, now, under)
            else:
                # Shed load before spending memory and CPU on a trace the transport would drop: the whole trace goes.
                outcome = self.buffers.reject(trace_id, semconv.DROP_TRANSPORT_QUEUE_FULL)
            if outcome is not None:
                self._count(outcome, counts, first_drop=1)
                if root:
                    self.buffers.forget_rejection(trace_id)
                    if self._enricher is not None:
                        self._enricher.release(trace_id, span_id)
            elif root:
                self._ended_root(span, trace_id, span_id, now, batches)
            elif (
                under is not None
                and pending
                and (trace_id, under) in pending
                and not self.open_spans.open_under(trace_id, under)
            ):
                self._unwait((trace_id, under))  # the last open descendant of a waiting root ended
                batches.append(((trace_id, under), self.buffers.take_subtree(trace_id, under)))

    def _ended_root(self, span: ReadableSpan, trace_id: int, span_id: int, now: float, batches: _Batches) -> None:
        """A local root was buffered: its subtree is complete (taken, to ``batches``), waits for open descendants, or (left out
        by its session or trace id, not rescued) is discarded."""
        priority = self._priority
        if priority is not None and not in_sample(
            trace_id, chain((span,), self.buffers.spans_of(trace_id)), self._sample_bound
        ):
            reason = priority.decide(span)
            if reason is None:
                # Left out by its session or trace id, and neither errored nor negative feedback: discarded.
                self._discard(self.buffers.take_subtree(trace_id, span_id))
                if self._enricher is not None:
                    self._enricher.release(trace_id, span_id)
                return
            self._rescued[(trace_id, span_id)] = reason  # its invocations carry it (handed on with its subtree)
        if self.open_spans.open_under(trace_id, span_id):
            self._wait((trace_id, span_id), now + self._idle_timeout)
        else:
            batches.append(((trace_id, span_id), self.buffers.take_subtree(trace_id, span_id)))

    def _overdue(self, now: float) -> _Batches:
        """Traces still under way ``max_age`` after their first span started: handed on as they are, their later spans
        dropped (``max_trace_age``), as the Collector path does."""
        overdue = self.open_spans.overdue(now, self._max_age)
        batches: _Batches = []
        for trace_id in overdue:
            self.open_spans.forget(trace_id)
            spans = self.buffers.hand_on_early(trace_id, semconv.DROP_MAX_TRACE_AGE)
            if spans and self._in_sample(spans):
                batches.append((None, spans))
        self._incomplete.add(len(overdue))
        if overdue:
            say_incomplete(len(overdue), self._max_age, running=True)
        return batches

    def _in_sample(self, spans: list[ReadableSpan]) -> bool:
        """Whether an idle trace's spans are evaluated (by session or trace id); a left-out trace's (priority sampling)
        are discarded."""
        if self._priority is None or not spans:
            return True
        context = spans[0].context
        if context is not None and in_sample(context.trace_id, spans, self._sample_bound):
            return True
        self._discard(spans)
        return False

    def _discard(self, spans: list[ReadableSpan]) -> None:
        """Forgets a left-out subtree, with its log records (not a loss: not counted as dropped)."""
        if self.logs is not None:
            self.logs.take(spans)

    def _wait(self, root: RootKey, deadline: float) -> None:
        self._pending[root] = deadline
        self._waiting[root[0]] = self._waiting.get(root[0], 0) + 1

    def _unwait(self, root: RootKey) -> None:
        del self._pending[root]
        left = self._waiting.get(root[0], 1) - 1
        if left > 0:
            self._waiting[root[0]] = left
        else:
            self._waiting.pop(root[0], None)

    def _stop_waiting(self, now: float, *, final: bool) -> list[RootKey]:
        """Roots that waited ``idle_timeout`` for open descendants (all of them at shutdown): handed on without them."""
        if not self._pending:
            return []  # most steps: no root waits
        expired = []
        for root, deadline in self._pending.items():
            if deadline > now and not final:
                break  # deadlines are in insertion order (one timeout for all)
            expired.append(root)
        for root in expired:
            self._unwait(root)
            self.open_spans.abandon(*root, now)
        self._incomplete.add(len(expired))
        if expired and not final:
            say_incomplete(len(expired), self._idle_timeout, running=False)
        return expired

    @staticmethod
    def _count(outcome: Rejection | str, counts: _StepCounts, *, first_drop: int) -> None:
        """Counts a drop: a whole trace (:class:`Rejection`) or, for an earlier-discarded trace, ``first_drop`` span."""
        if isinstance(outcome, Rejection):
            counts.spans[outcome.reason] += outcome.spans - 1 + first_drop
            counts.invocations[outcome.reason] += 1
        else:
            counts.spans[outcome] += first_drop

    def _hand_on(self, root: RootKey | None, spans: list[ReadableSpan]) -> None:
        requests: list[EvaluationRequest | PlainRequest] = []
        rescued = self._rescued.pop(root, None) if self._rescued and root is not None else None
        records = self.logs.take(spans) if self.logs is not None else []
        if spans and not self._exporter.has_capacity():
            self._pipeline.log_records_dropped(semconv.DROP_TRANSPORT_QUEUE_FULL, len(records))
            # Shed load before spending CPU on reconstruction: the transport would drop the requests anyway.
            self._pipeline.invocations_dropped(semconv.DROP_TRANSPORT_QUEUE_FULL)
            self._pipeline.spans_dropped(semconv.DROP_TRANSPORT_QUEUE_FULL, len(spans))
            spans = []
        filters = self._builder.filters
        if spans and (not filters.root_span_prefixes or filters.root_allowed(top_span_names(spans))):
            try:
                if len(spans) <= INLINE_REBUILD_SPANS:
                    requests = self._builder.build(spans, records)  # linear in a few spans: no deadline's hand-off
                else:
                    build = partial(self._builder.build, spans, records)
                    with collections_resumed():  # a wait of up to the deadline: not with the collector paused
                        requests = self.rebuild.run(f"rebuilding a trace of {len(spans)} spans", build)
            except RecordTimeoutError:  # a pathological trace: dropped, and the traces behind it go on at once
                self._pipeline.invocations_dropped(semconv.DROP_REBUILD_TIMEOUT)
                self._pipeline.spans_dropped(semconv.DROP_REBUILD_TIMEOUT, len(spans))
            except Exception:  # one malformed trace must not stop the others
                logger.exception("could not rebuild the invocations of a trace")
                self._pipeline.invocations_dropped(semconv.DROP_RECONSTRUCTION_ERROR)
        if root is not None and self._enricher is not None:
            self._enricher.expect(*root, [(r.trace_id, r.invocations[0].span_id) for r in requests])
        if not requests:
            return
        if rescued:
            mark_rescued(requests, rescued)
        if self.logs is not None:
            self.logs.hint_if_detached(requests)
        self._pipeline.sampled(len(requests))
        try:
            self._exporter.export_rebuilt(requests)  # under suppressed instrumentation (:meth:`step`)
        except Exception:  # exporters should not raise; if one does, count and go on
            logger.exception("the evaluation transport failed to export")
            self._pipeline.invocations_dropped(semconv.DROP_TRANSPORT_ERROR, len(requests))
